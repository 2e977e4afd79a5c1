// Tuning on every GPU of a host: one or more lanes per GPU, each searching one problem at a time through
// an evaluator of its own, all fed by one compile pool and one database writer (both behind the lanes).
// Lanes of one GPU search different problems at once and measure in turn, so one's batch compiles while
// another's is measured. Problems spread over the lanes of a GPU model as DeviceSchedule says; a lane left
// without a problem measures a share of each batch of a problem running on another GPU, so a single big
// problem uses every GPU. The lanes are injected, so all of this runs without a GPU on recorded or
// synthetic trials.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

/// An evaluator of one problem on one lane.
class LaneEvaluator : public Evaluator {
 public:
  /// What is stored of the problem already (trials of earlier runs), as a resumed history.
  virtual History resume(const SearchSpace& /*space*/) { return History(); }
  /// Runs `action` once the next evaluate() has queued what it wants compiled (at once by default), so
  /// that work queued by the action comes after it.
  virtual void after_next_submission(std::function<void()> action) { action(); }
};

/// One search on a GPU.
class DeviceLane {
 public:
  virtual ~DeviceLane() = default;
  /// The GPU; lanes with the same name are one model and share their results.
  virtual const DeviceInfo& device() const = 0;
  /// The GPU this lane measures on, shared with the other lanes that return the same number; negative:
  /// a GPU of its own.
  virtual int gpu() const { return -1; }
  /// An evaluator of space.problem() on this GPU.
  virtual std::unique_ptr<LaneEvaluator> open(const SearchSpace& space) = 0;
};

/// How one problem is searched; each piece is called once per problem (and per problem compiled ahead).
struct LaneSearch {
  std::function<SearchSpace(const DeviceInfo&, const KernelProblem&)> space;
  std::function<std::unique_ptr<Strategy>()> strategy;
  std::function<std::unique_ptr<StopCondition>(const SearchSpace&)> stop;
  size_t batch = 8;
  /// Batches' worth of the strategy's guesses compiled ahead while a batch is measured.
  size_t guessed_batches = 2;
  /// Problems, not yet started, whose first batch compiles ahead while a lane's problem is searched, per
  /// lane of the model.
  size_t compile_ahead_problems = 1;
};

/// What happened to one problem on one GPU model.
struct LaneResult {
  size_t problem = 0;  ///< index into the problem list
  std::string model;
  size_t owner = 0;           ///< the lane that searched it
  std::vector<size_t> lanes;  ///< lanes that measured part of it, the owner first
  std::shared_ptr<const SearchSpace> space;
  History history;  ///< resumed observations first
  size_t resumed = 0;
  /// The evaluators that measured it, one per entry of `lanes`.
  std::vector<std::unique_ptr<LaneEvaluator>> evaluators;
  double wall_s = 0;
};

/// Called from the lanes' threads (one at a time): a lane started or finished a problem, or helps one.
struct LaneEvents {
  std::function<void(size_t lane, size_t problem, const SearchSpace& space, LaneEvaluator& evaluator)>
      started;
  std::function<void(size_t lane, size_t problem)> helping;
  std::function<void(size_t lane)> stopped_helping;
  std::function<void(size_t lane, const LaneResult& result)> finished;
};

/// Tunes every problem once per GPU model of `lanes`, each lane on a thread of its own; `costs[p]`
/// orders the problems (costliest first). Results come back by model in lane order, then by problem.
/// An exception on a lane ends every lane and is rethrown.
std::vector<LaneResult> tune_on_lanes(const std::vector<DeviceLane*>& lanes,
                                      const std::vector<KernelProblem>& problems,
                                      const std::vector<double>& costs, const LaneSearch& search,
                                      const LaneEvents& events = {});

}  // namespace gemmforge::tuner
