// Who tunes what on a host with several GPUs. GPUs of one model form a group that tunes every problem
// once, sharing its results; groups of different models each tune every problem for themselves. Within
// a group a lane takes the costliest problem nobody has started; when none is left it helps the running
// problem with the fewest lanes, measuring a share of each of its batches. A GPU may run several lanes
// (several searches at once, measuring in turn); a lane never helps a problem its own GPU works on, where
// it would only queue behind itself. Pure bookkeeping, no GPU.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gemmforge::tuner {

class DeviceSchedule {
 public:
  /// `lane_models[i]` names the GPU model of lane i; `costs[p]` estimates the work of problem p (the
  /// order problems start in: costliest first, ties in the given order). `lane_gpus[i]` names the GPU
  /// lane i measures on, where lanes share GPUs (negative: a GPU of its own); empty: every lane has a GPU
  /// of its own.
  DeviceSchedule(std::vector<std::string> lane_models, std::vector<double> costs,
                 std::vector<int> lane_gpus = {});

  struct Work {
    enum class Kind { kOwn, kHelp, kDone };
    Kind kind = Kind::kDone;
    size_t problem = 0;
  };

  /// The next work of `lane`: a problem of its own, help with a problem another GPU of its model runs,
  /// or nothing left. A lane asks again once its work is over (finished() or helped() first).
  Work next(size_t lane);
  /// The lane's own problem is tuned.
  void finished(size_t lane, size_t problem);
  /// The lane stopped helping with `problem` (it finished).
  void helped(size_t lane, size_t problem);

  /// Lanes working on a problem of `lane`'s model right now, the owner first; empty when none runs it.
  std::vector<size_t> lanes_on(const std::string& model, size_t problem) const;
  /// The models, each once, in lane order, and the lanes of each.
  const std::vector<std::string>& models() const { return models_; }
  std::vector<size_t> lanes_of(const std::string& model) const;
  /// Up to `count` problems of `model` not started yet, in the order they will start.
  std::vector<size_t> upcoming(const std::string& model, size_t count) const;
  /// Whether every problem of every model is finished.
  bool all_done() const;

 private:
  struct Running {
    size_t owner = 0;
    std::vector<size_t> helpers;
  };
  struct Group {
    std::vector<size_t> queue;  // problems not started, next first
    size_t next = 0;
    std::map<size_t, Running> running;  // by problem
    size_t finished = 0;
  };

  // Whether a lane of `lane`'s GPU works on `running`.
  bool shares_gpu(size_t lane, const Running& running) const;

  std::vector<std::string> lane_models_;
  std::vector<int> lane_gpus_;
  std::vector<std::string> models_;
  std::vector<double> costs_;
  std::map<std::string, Group> groups_;
};

}  // namespace gemmforge::tuner
