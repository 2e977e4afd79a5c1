// Ridge regression of the analytic model's error: a hundred or so features, refitted after every batch in
// well under a millisecond.
#include "tuner/residual_model.hpp"

#include <algorithm>
#include <cmath>

#include "model/ridge.hpp"

namespace gemmforge::tuner {
namespace {

// Ridge penalties, in units of observations: a weight moves halfway to what one observation alone
// says once that many observations back it.
constexpr double kTemplatePenalty = 0.01;  // a template's speed is learnt from its first measurement
constexpr double kLevelPenalty = 1.0;
constexpr double kTermPenalty = 4.0;  // the model's structure is trusted more than single values

}  // namespace

ModelTerms terms_of(const model::Estimate& e) {
  ModelTerms t;
  if (!std::isfinite(e.time_ms)) return t;
  t.tail = static_cast<float>(std::log(std::max(e.waves.utilization, 1e-6)));
  t.hiding = static_cast<float>(std::log(std::max(e.latency_hiding, 1e-6)));
  t.memory = static_cast<float>(std::log(std::max(e.memory_bound, 1.0)));
  t.split_k = static_cast<float>(std::log1p(e.main_loop_ms > 0 ? e.split_k_ms / e.main_loop_ms : 0));
  return t;
}

ResidualModel::ResidualModel(const SearchSpace& space, const CandidateTable& table) : table_(table) {
  const size_t templates = space.spaces().size();
  size_t next = templates;  // intercepts come first
  for (size_t s = 0; s < templates; ++s) {
    std::vector<size_t> offsets;
    for (const Parameter& p : space.spaces()[s].kernel_template().manifest.parameters()) {
      offsets.push_back(next);
      next += p.values.size();
    }
    level_offset_.push_back(std::move(offsets));
  }
  first_term_ = next;
  penalty_.assign(feature_count(), kLevelPenalty);
  std::fill(penalty_.begin(), penalty_.begin() + templates, kTemplatePenalty);
  std::fill(penalty_.begin() + first_term_, penalty_.end(), kTermPenalty);
}

template <class Visit>
void ResidualModel::for_each_feature(size_t candidate, const ModelTerms& terms, Visit&& visit) const {
  const size_t s = table_.space_of(candidate);
  visit(s, 1.0);
  const std::vector<size_t>& offsets = level_offset_[s];
  for (size_t p = 0; p < offsets.size(); ++p) visit(offsets[p] + table_.level(candidate, p), 1.0);
  visit(first_term_ + 0, terms.tail);
  visit(first_term_ + 1, terms.hiding);
  visit(first_term_ + 2, terms.memory);
  visit(first_term_ + 3, terms.split_k);
}

void ResidualModel::fit(const std::vector<Sample>& samples, const std::vector<ModelTerms>& terms) {
  model::RidgeRegression regression(penalty_);
  model::SparseFeatures features;
  for (const Sample& sample : samples) {
    features.clear();
    for_each_feature(sample.candidate, terms[sample.candidate],
                     [&](size_t f, double value) { features.emplace_back(f, value); });
    regression.add(features, sample.log_ratio, sample.weight);
  }
  weights_ = regression.solve();
}

double ResidualModel::correction(size_t candidate, const ModelTerms& terms) const {
  if (weights_.empty()) return 0;
  double sum = 0;
  for_each_feature(candidate, terms, [&](size_t f, double value) { sum += weights_[f] * value; });
  return sum;
}

}  // namespace gemmforge::tuner
