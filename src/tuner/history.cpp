// The record of a search: every observation in order, the best so far, and how long since it improved.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gemmforge/error.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

void History::add(const Observation& observation) {
  if (observation.ok() && !(std::isfinite(observation.time_ms) && observation.time_ms > 0)) {
    throw InvalidArgumentError(
        fmt::format("an ok observation of candidate {} needs a finite time > 0, not {}",
                    observation.candidate, observation.time_ms));
  }
  if (observation.candidate >= seen_.size()) {
    seen_.resize(std::max(observation.candidate + 1, 2 * seen_.size()), 0);
  }
  seen_[observation.candidate] = 1;
  observations_.push_back(observation);
  if (observation.ok() && (best_ == kNone || observation.time_ms < observations_[best_].time_ms)) {
    best_ = observations_.size() - 1;
  }
}

bool History::contains(size_t candidate) const {
  return candidate < seen_.size() && seen_[candidate] != 0;
}

const Observation* History::best() const {
  return best_ == kNone ? nullptr : &observations_[best_];
}

size_t History::since_improvement(double tolerance) const {
  if (scan_.tolerance != tolerance) scan_ = ImprovementScan{tolerance};
  for (; scan_.scanned < observations_.size(); ++scan_.scanned) {
    const Observation& o = observations_[scan_.scanned];
    if (!o.ok()) continue;
    if (!scan_.any_ok || o.time_ms < scan_.reference_ms * (1.0 - tolerance)) {
      scan_.any_ok = true;
      scan_.reference_ms = o.time_ms;
      scan_.last_improvement = scan_.scanned;
    }
  }
  return scan_.any_ok ? observations_.size() - 1 - scan_.last_improvement : observations_.size();
}

}  // namespace gemmforge::tuner
