// The guided strategy's belief about every candidate's time: the analytic model, with register counts
// calibrated on the compiled kernels, corrected by a regression on what was measured so far.
#pragma once

#include <cstdint>
#include <vector>

#include "model/analytic.hpp"
#include "tuner/candidate_table.hpp"
#include "tuner/residual_model.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

class Predictor {
 public:
  Predictor(const SearchSpace& space, const CandidateTable& table);

  /// Learns from every observation of `history` not seen yet; refits only when there are some.
  void learn(const History& history);

  /// Predicted log of the time in ms; infinite for candidates the model says cannot launch.
  double log_time(size_t candidate) const { return predicted_[candidate]; }
  /// Every candidate, predicted fastest first; ties keep the enumeration order.
  const std::vector<uint32_t>& ranking() const { return ranking_; }
  /// Measured registers over the manifest's estimate, per template space (1 until three are measured).
  double register_scale(size_t space) const { return register_scale_[space]; }

 private:
  void estimate_template(size_t space);
  void calibrate_registers(const History& history);
  void predict();

  const SearchSpace& space_;
  const CandidateTable& table_;
  ResidualModel residuals_;
  std::vector<size_t> first_;  // per template space: its first candidate
  std::vector<double> register_scale_;
  std::vector<double> log_estimate_;  // the analytic model's
  std::vector<ModelTerms> terms_;
  std::vector<double> predicted_;
  std::vector<uint32_t> ranking_;
  size_t learned_ = 0;  // observations of the history taken in
};

}  // namespace gemmforge::tuner
