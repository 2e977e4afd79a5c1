// The nearest tuned problems to an untuned one: same dtype and layout, distance measured in log space
// over m, n and k, so 1024 -> 2048 counts as much as 64 -> 128.
#pragma once

#include <vector>

#include "core/problem.hpp"
#include "db/records.hpp"

namespace gemmforge::runtime {

/// sqrt(ln(m/m')^2 + ln(n/n')^2 + ln(k/k')^2).
double log_distance(const KernelProblem& a, const KernelProblem& b);

/// Results of `tuned` with the dtype and layout of `problem`, nearest first; at equal distance those
/// with the same alignment come first, then the faster ones. Whether a config fits the problem's
/// alignment is for the caller to check (its vector widths are constraints of its manifest).
std::vector<const db::TrialRecord*> nearest_first(const std::vector<db::TrialRecord>& tuned,
                                                  const KernelProblem& problem);

}  // namespace gemmforge::runtime
