// Handing problems to GPU lanes: costliest first per model, idle lanes help the thinnest-staffed problem.
#include "tuner/device_schedule.hpp"

#include <algorithm>
#include <numeric>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {

DeviceSchedule::DeviceSchedule(std::vector<std::string> lane_models, std::vector<double> costs,
                               std::vector<int> lane_gpus)
    : lane_models_(std::move(lane_models)), lane_gpus_(std::move(lane_gpus)), costs_(std::move(costs)) {
  if (lane_gpus_.empty()) lane_gpus_.assign(lane_models_.size(), -1);
  if (lane_gpus_.size() != lane_models_.size()) throw InternalError("DeviceSchedule: one GPU per lane");
  std::vector<size_t> order(costs_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs_[a] > costs_[b]; });
  for (const std::string& model : lane_models_) {
    if (groups_.count(model) != 0) continue;
    models_.push_back(model);
    groups_[model].queue = order;
  }
}

DeviceSchedule::Work DeviceSchedule::next(size_t lane) {
  if (lane >= lane_models_.size()) throw InternalError("DeviceSchedule: no such lane");
  Group& group = groups_.at(lane_models_[lane]);
  Work work;
  if (group.next < group.queue.size()) {
    work.kind = Work::Kind::kOwn;
    work.problem = group.queue[group.next++];
    group.running[work.problem].owner = lane;
    return work;
  }
  // Help where the fewest lanes work; among those the costliest problem, then the first started.
  const Running* best = nullptr;
  size_t best_problem = 0;
  for (const auto& [problem, running] : group.running) {
    if (shares_gpu(lane, running)) continue;
    const bool better =
        best == nullptr || running.helpers.size() < best->helpers.size() ||
        (running.helpers.size() == best->helpers.size() && costs_[problem] > costs_[best_problem]);
    if (better) {
      best = &running;
      best_problem = problem;
    }
  }
  if (best == nullptr) return work;  // kDone
  group.running[best_problem].helpers.push_back(lane);
  work.kind = Work::Kind::kHelp;
  work.problem = best_problem;
  return work;
}

bool DeviceSchedule::shares_gpu(size_t lane, const Running& running) const {
  const int gpu = lane_gpus_[lane];
  if (gpu < 0) return false;  // a GPU of its own
  if (lane_gpus_[running.owner] == gpu) return true;
  return std::any_of(running.helpers.begin(), running.helpers.end(),
                     [&](size_t helper) { return lane_gpus_[helper] == gpu; });
}

void DeviceSchedule::finished(size_t lane, size_t problem) {
  Group& group = groups_.at(lane_models_.at(lane));
  auto it = group.running.find(problem);
  if (it == group.running.end() || it->second.owner != lane) {
    throw InternalError("DeviceSchedule: a lane finished a problem it does not own");
  }
  group.running.erase(it);
  ++group.finished;
}

void DeviceSchedule::helped(size_t lane, size_t problem) {
  Group& group = groups_.at(lane_models_.at(lane));
  auto it = group.running.find(problem);
  if (it == group.running.end()) return;  // the owner finished first
  auto& helpers = it->second.helpers;
  helpers.erase(std::remove(helpers.begin(), helpers.end(), lane), helpers.end());
}

std::vector<size_t> DeviceSchedule::lanes_on(const std::string& model, size_t problem) const {
  const Group& group = groups_.at(model);
  auto it = group.running.find(problem);
  if (it == group.running.end()) return {};
  std::vector<size_t> lanes{it->second.owner};
  lanes.insert(lanes.end(), it->second.helpers.begin(), it->second.helpers.end());
  return lanes;
}

std::vector<size_t> DeviceSchedule::lanes_of(const std::string& model) const {
  std::vector<size_t> lanes;
  for (size_t i = 0; i < lane_models_.size(); ++i) {
    if (lane_models_[i] == model) lanes.push_back(i);
  }
  return lanes;
}

std::vector<size_t> DeviceSchedule::upcoming(const std::string& model, size_t count) const {
  const Group& group = groups_.at(model);
  const size_t end = std::min(group.queue.size(), group.next + count);
  return std::vector<size_t>(group.queue.begin() + static_cast<std::ptrdiff_t>(group.next),
                             group.queue.begin() + static_cast<std::ptrdiff_t>(end));
}

bool DeviceSchedule::all_done() const {
  return std::all_of(groups_.begin(), groups_.end(),
                     [&](const auto& g) { return g.second.finished == costs_.size(); });
}

}  // namespace gemmforge::tuner
