// What the guided strategy learns while it searches: how far the analytic model is off. A ridge
// regression of log(measured / estimated time) over generic features of the measured candidates
// predicts the correction for every unmeasured one.
#pragma once

#include <cstddef>
#include <vector>

#include "model/analytic.hpp"
#include "tuner/candidate_table.hpp"

namespace gemmforge::tuner {

/// The analytic model's terms as regression features, in log form: the fit may find that a term
/// matters more or less than the model assumes.
struct ModelTerms {
  float tail = 0;     ///< log of the waves' slot utilization
  float hiding = 0;   ///< log of the latency-hiding share
  float memory = 0;   ///< log of full-wave time over compute time
  float split_k = 0;  ///< log of 1 + split-K hand-over time over main-loop time
};

ModelTerms terms_of(const model::Estimate& estimate);

class ResidualModel {
 public:
  /// Features: one intercept per template (its kernels' speed against the FP32 model), one indicator
  /// per value of each parameter of each template (main effects no formula knows: pipeline depth,
  /// vector widths, unrolling), and the model's terms. Ridge penalties pull every weight towards 0,
  /// that is towards the analytic model, until observations say otherwise.
  ResidualModel(const SearchSpace& space, const CandidateTable& table);

  struct Sample {
    size_t candidate = 0;
    double log_ratio = 0;  ///< log(measured / estimated)
    double weight = 1;
  };
  /// Refits on all samples; `terms` holds every candidate's, by candidate index.
  void fit(const std::vector<Sample>& samples, const std::vector<ModelTerms>& terms);
  /// Predicted log(actual / estimated) of a candidate; 0 before any fit.
  double correction(size_t candidate, const ModelTerms& terms) const;

 private:
  size_t feature_count() const { return first_term_ + 4; }
  // Calls visit(feature, value) for each non-zero feature of a candidate.
  template <class Visit>
  void for_each_feature(size_t candidate, const ModelTerms& terms, Visit&& visit) const;

  const CandidateTable& table_;
  std::vector<std::vector<size_t>> level_offset_;  // per template and parameter: feature of level 0
  size_t first_term_ = 0;                          // feature of ModelTerms::tail
  std::vector<double> penalty_;                    // ridge penalty per feature
  std::vector<double> weights_;
};

}  // namespace gemmforge::tuner
