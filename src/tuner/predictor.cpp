// Predictions of the guided strategy: analytic estimates, register calibration, and the residual fit.
#include "tuner/predictor.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gemmforge::tuner {
namespace {

constexpr size_t kRegisterSamples = 3;       // measured kernels before register estimates are rescaled
constexpr double kRegisterScaleStep = 0.02;  // smaller changes do not re-estimate a template
// A candidate that failed (spilled, did not launch, was not recorded) enters the fit as this many times
// slower than the slowest one measured, with a small weight: enough to steer away from regions that
// fail, too little to outweigh the times around it.
constexpr double kFailureSlowdown = 2.0;
constexpr double kFailureWeight = 0.25;

double median(std::vector<double> values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  return values[mid];
}

}  // namespace

Predictor::Predictor(const SearchSpace& space, const CandidateTable& table)
    : space_(space),
      table_(table),
      residuals_(space, table),
      register_scale_(space.spaces().size(), 1.0),
      log_estimate_(table.size()),
      terms_(table.size()),
      predicted_(table.size()),
      ranking_(table.size()) {
  size_t first = 0;
  for (const Space& s : space.spaces()) {
    first_.push_back(first);
    first += s.size();
  }
  for (size_t s = 0; s < space.spaces().size(); ++s) estimate_template(s);
  predict();
}

void Predictor::estimate_template(size_t space) {
  const size_t begin = first_[space], end = begin + space_.spaces()[space].size();
  for (size_t c = begin; c < end; ++c) {
    const Footprint& f = table_.footprint(c);
    const auto registers = static_cast<int64_t>(std::lround(f.est_regs * register_scale_[space]));
    const model::Estimate e =
        model::estimate(space_.device(), space_.problem(), f, std::min<int64_t>(registers, 255));
    log_estimate_[c] = std::log(e.time_ms);
    terms_[c] = terms_of(e);
  }
}

void Predictor::calibrate_registers(const History& history) {
  std::vector<std::vector<double>> ratios(space_.spaces().size());
  for (const Observation& o : history.observations()) {
    if (o.registers <= 0 || o.candidate >= table_.size()) continue;
    const int64_t estimated = table_.footprint(o.candidate).est_regs;
    if (estimated > 0)
      ratios[table_.space_of(o.candidate)].push_back(static_cast<double>(o.registers) / estimated);
  }
  for (size_t s = 0; s < ratios.size(); ++s) {
    if (ratios[s].size() < kRegisterSamples) continue;
    const double scale = std::clamp(median(ratios[s]), 0.5, 2.0);
    if (std::abs(scale - register_scale_[s]) > kRegisterScaleStep) {
      register_scale_[s] = scale;
      estimate_template(s);
    }
  }
}

void Predictor::learn(const History& history) {
  if (history.size() == learned_) return;
  learned_ = history.size();
  calibrate_registers(history);
  std::vector<ResidualModel::Sample> samples;
  for (const Observation& o : history.observations()) {
    if (o.candidate >= table_.size() || !std::isfinite(log_estimate_[o.candidate])) continue;
    if (o.ok()) {
      samples.push_back({o.candidate, std::log(o.time_ms) - log_estimate_[o.candidate], 1.0});
    } else {
      const double predicted = residuals_.correction(o.candidate, terms_[o.candidate]);
      samples.push_back({o.candidate, predicted + std::log(kFailureSlowdown), kFailureWeight});
    }
  }
  residuals_.fit(samples, terms_);
  predict();
}

void Predictor::predict() {
  for (size_t c = 0; c < table_.size(); ++c) {
    predicted_[c] = std::isfinite(log_estimate_[c]) ? log_estimate_[c] + residuals_.correction(c, terms_[c])
                                                    : std::numeric_limits<double>::infinity();
  }
  std::iota(ranking_.begin(), ranking_.end(), 0u);
  std::stable_sort(ranking_.begin(), ranking_.end(),
                   [&](uint32_t a, uint32_t b) { return predicted_[a] < predicted_[b]; });
}

}  // namespace gemmforge::tuner
