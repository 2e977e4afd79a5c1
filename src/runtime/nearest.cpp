// Ranking tuned problems by distance.
#include "runtime/nearest.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace gemmforge::runtime {

double log_distance(const KernelProblem& a, const KernelProblem& b) {
  auto term = [](int64_t x, int64_t y) {
    const double ratio =
        std::log(static_cast<double>(std::max<int64_t>(x, 1)) / static_cast<double>(std::max<int64_t>(y, 1)));
    return ratio * ratio;
  };
  return std::sqrt(term(a.m, b.m) + term(a.n, b.n) + term(a.k, b.k));
}

std::vector<const db::TrialRecord*> nearest_first(const std::vector<db::TrialRecord>& tuned,
                                                  const KernelProblem& problem) {
  struct Ranked {
    double distance;
    int alignment_differences;
    double time_ms;
    const db::TrialRecord* result;
  };
  std::vector<Ranked> ranked;
  for (const db::TrialRecord& result : tuned) {
    const KernelProblem& p = result.problem;
    if (p.dtype != problem.dtype || p.a_trans != problem.a_trans || p.b_trans != problem.b_trans) continue;
    const int differences =
        (p.align_a != problem.align_a) + (p.align_b != problem.align_b) + (p.align_c != problem.align_c);
    ranked.push_back({log_distance(p, problem), differences,
                      result.time_median_ms.value_or(std::numeric_limits<double>::infinity()), &result});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) {
    return std::tie(x.distance, x.alignment_differences, x.time_ms) <
           std::tie(y.distance, y.alignment_differences, y.time_ms);
  });
  std::vector<const db::TrialRecord*> out;
  out.reserve(ranked.size());
  for (const Ranked& r : ranked) out.push_back(r.result);
  return out;
}

}  // namespace gemmforge::runtime
