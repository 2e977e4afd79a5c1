// A GPU model's default config: the one best on average over the problems tuned on that model, for
// problems that have neither a tuned result nor a tuned neighbour of their layout.
#pragma once

#include <string>
#include <vector>

#include "core/problem.hpp"
#include "db/records.hpp"

namespace gemmforge::runtime {

struct DefaultCandidate {
  std::string template_name;
  std::string config_key;
  /// Mean over the tuned problems of (the problem's best time / this config's time), counting 0 where the
  /// config was not measured: 1 means best everywhere.
  double score = 0;
  int measured = 0;  ///< tuned problems it was measured on
  int problems = 0;  ///< tuned problems the mean runs over
};

/// Configs ranked by score, highest first: over the tuned problems (`bests`, with the trials measured
/// on them in `trials`) of the dtype and layout of `problem`, then over those of its dtype in any
/// layout (configs already ranked are not repeated).
std::vector<DefaultCandidate> rank_defaults(const std::vector<db::TrialRecord>& bests,
                                            const std::vector<db::TrialRecord>& trials,
                                            const KernelProblem& problem);

}  // namespace gemmforge::runtime
