// The lanes' threads: each asks the schedule for work, searches its own problems through an evaluator
// that hands shares of every batch to the lanes helping it, or helps another lane's problem.
#include "tuner/lanes.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "gemmforge/error.hpp"
#include "tuner/device_schedule.hpp"

namespace gemmforge::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// One running problem, shared by its owner and the lanes helping it.
struct SharedProblem {
  struct Helper {
    size_t lane = 0;
    LaneEvaluator* evaluator = nullptr;
    std::vector<size_t> work;
    bool assigned = false;
    std::vector<Observation> answer;
    std::exception_ptr error;
  };

  std::mutex mutex;
  std::condition_variable changed;
  std::shared_ptr<const SearchSpace> space;  // set by the owner once built
  bool finished = false;
  std::list<Helper> helpers;
  std::vector<std::pair<size_t, std::unique_ptr<LaneEvaluator>>> helpers_done;  // lane, evaluator
};

// The owner's evaluator: splits each batch over itself and the helpers present when it starts, round
// robin, and answers in the batch's order, so the search sees what one GPU would have shown it. Each lane
// of a batch is told the best time any of them measured before it, so that all of them stop timing a
// clearly beaten candidate as early as one GPU would.
class SplitEvaluator : public Evaluator {
 public:
  SplitEvaluator(LaneEvaluator& own, SharedProblem& shared, const std::atomic<bool>& failed)
      : own_(own), shared_(shared), failed_(failed) {}

  std::vector<Observation> evaluate(const SearchSpace& space,
                                    const std::vector<size_t>& candidates) override {
    // Another lane failed: end this search at once; the run reports the first error.
    if (failed_) throw InternalError("tuning stopped: another GPU failed");
    std::vector<SharedProblem::Helper*> helpers;
    {
      std::lock_guard lock(shared_.mutex);
      for (SharedProblem::Helper& h : shared_.helpers) helpers.push_back(&h);
    }
    if (helpers.empty() || candidates.size() < 2) return keep_best(own_.evaluate(space, candidates));
    const size_t lanes = std::min(helpers.size() + 1, candidates.size());
    helpers.resize(lanes - 1);
    std::vector<size_t> mine;
    {
      std::lock_guard lock(shared_.mutex);
      for (SharedProblem::Helper* h : helpers) {
        h->work.clear();
        h->answer.clear();
        h->error = nullptr;
      }
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (i % lanes == 0) {
          mine.push_back(candidates[i]);
        } else {
          helpers[i % lanes - 1]->work.push_back(candidates[i]);
        }
      }
      for (SharedProblem::Helper* h : helpers) {
        if (best_ms_) h->evaluator->note_best(*best_ms_);
        h->assigned = true;
      }
    }
    shared_.changed.notify_all();
    std::exception_ptr error;
    std::vector<Observation> answers;
    try {
      if (best_ms_) own_.note_best(*best_ms_);
      answers = own_.evaluate(space, mine);
    } catch (...) {
      error = std::current_exception();
    }
    std::unique_lock lock(shared_.mutex);
    shared_.changed.wait(lock, [&] {
      return std::none_of(helpers.begin(), helpers.end(), [](const auto* h) { return h->assigned; });
    });
    for (SharedProblem::Helper* h : helpers) {
      if (h->error && !error) error = h->error;
      answers.insert(answers.end(), h->answer.begin(), h->answer.end());
    }
    lock.unlock();
    if (error) std::rethrow_exception(error);
    std::map<size_t, Observation> by_candidate;
    for (const Observation& o : answers) by_candidate.emplace(o.candidate, o);
    std::vector<Observation> ordered;
    for (size_t c : candidates) {
      auto it = by_candidate.find(c);
      if (it == by_candidate.end()) {
        throw InternalError(fmt::format("no lane answered candidate {}", c));
      }
      ordered.push_back(it->second);
    }
    return keep_best(std::move(ordered));
  }

  void prefetch(const SearchSpace& space, const std::vector<size_t>& candidates) override {
    own_.prefetch(space, candidates);
  }

 private:
  std::vector<Observation> keep_best(std::vector<Observation> observations) {
    for (const Observation& o : observations) {
      if (o.ok()) best_ms_ = std::min(best_ms_.value_or(o.time_ms), o.time_ms);
    }
    return observations;
  }

  LaneEvaluator& own_;
  SharedProblem& shared_;
  const std::atomic<bool>& failed_;
  std::optional<double> best_ms_;  // over every lane's answers so far
};

class LaneDriver {
 public:
  LaneDriver(const std::vector<DeviceLane*>& lanes, const std::vector<KernelProblem>& problems,
             const std::vector<double>& costs, const LaneSearch& search, const LaneEvents& events)
      : lanes_(lanes),
        problems_(problems),
        search_(search),
        events_(events),
        schedule_(models(lanes), costs, gpus(lanes)) {}

  std::vector<LaneResult> run() {
    {
      std::vector<std::jthread> threads;
      for (size_t lane = 0; lane < lanes_.size(); ++lane) {
        threads.emplace_back([this, lane] { lane_loop(lane); });
      }
    }
    if (error_) std::rethrow_exception(error_);
    std::vector<LaneResult> out;
    for (const std::string& model : schedule_.models()) {
      for (size_t p = 0; p < problems_.size(); ++p) {
        auto it = results_.find({model, p});
        if (it != results_.end()) out.push_back(std::move(it->second));
      }
    }
    return out;
  }

 private:
  static std::vector<std::string> models(const std::vector<DeviceLane*>& lanes) {
    std::vector<std::string> names;
    for (const DeviceLane* lane : lanes) names.push_back(lane->device().name);
    return names;
  }

  static std::vector<int> gpus(const std::vector<DeviceLane*>& lanes) {
    std::vector<int> out;
    for (const DeviceLane* lane : lanes) out.push_back(lane->gpu());
    return out;
  }

  void fail(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = std::move(error);
    failed_ = true;
  }

  void lane_loop(size_t lane) {
    const std::string& model = lanes_[lane]->device().name;
    while (true) {
      DeviceSchedule::Work work;
      std::shared_ptr<SharedProblem> shared;
      std::vector<size_t> ahead;
      {
        std::lock_guard lock(mutex_);
        if (error_) return;
        work = schedule_.next(lane);
        if (work.kind == DeviceSchedule::Work::Kind::kDone) return;
        if (work.kind == DeviceSchedule::Work::Kind::kOwn) {
          shared = std::make_shared<SharedProblem>();
          running_[{model, work.problem}] = shared;
          ahead =
              schedule_.upcoming(model, search_.compile_ahead_problems * schedule_.lanes_of(model).size());
        } else {
          shared = running_.at({model, work.problem});
        }
      }
      try {
        if (work.kind == DeviceSchedule::Work::Kind::kOwn) {
          own(lane, work.problem, *shared, ahead);
        } else {
          help(lane, work.problem, *shared);
        }
      } catch (...) {
        fail(std::current_exception());
        std::lock_guard lock(shared->mutex);
        shared->finished = true;
        shared->changed.notify_all();
        return;
      }
    }
  }

  // Queues the first batch of each of `problems` on the compile pool. Only ever a head start: a failure
  // here is the problem's own search's to meet.
  void compile_ahead(size_t lane, const std::vector<size_t>& problems) noexcept {
    try {
      compile_ahead_or_throw(lane, problems);
    } catch (const std::exception& e) {
      try {
        spdlog::debug("compiling ahead failed: {}", e.what());
      } catch (...) {
      }
    }
  }

  void compile_ahead_or_throw(size_t lane, const std::vector<size_t>& problems) {
    DeviceLane& device = *lanes_[lane];
    for (size_t p : problems) {
      const SearchSpace space = search_.space(device.device(), problems_[p]);
      if (space.empty()) continue;
      const std::unique_ptr<LaneEvaluator> evaluator = device.open(space);
      const History resumed = evaluator->resume(space);
      const std::unique_ptr<Strategy> strategy = search_.strategy();
      evaluator->prefetch(space, strategy->propose(space, resumed, search_.batch));
    }
  }

  void own(size_t lane, size_t problem, SharedProblem& shared, const std::vector<size_t>& ahead) {
    const auto start = Clock::now();
    DeviceLane& device = *lanes_[lane];
    LaneResult result;
    result.problem = problem;
    result.model = device.device().name;
    result.owner = lane;
    result.lanes.push_back(lane);
    auto space = std::make_shared<const SearchSpace>(search_.space(device.device(), problems_[problem]));
    result.space = space;
    std::unique_ptr<LaneEvaluator> evaluator = device.open(*space);
    LaneEvaluator& own_evaluator = *evaluator;
    result.evaluators.push_back(std::move(evaluator));
    if (events_.started) {
      std::lock_guard lock(events_mutex_);
      events_.started(lane, problem, *space, own_evaluator);
    }
    {
      std::lock_guard lock(shared.mutex);
      shared.space = space;
    }
    shared.changed.notify_all();
    std::exception_ptr error;
    std::future<void> ahead_done;  // waited for when it goes out of scope
    try {
      if (!space->empty()) {
        History resumed = own_evaluator.resume(*space);
        result.resumed = resumed.size();
        // Behind the first batch of this problem, and on a thread of its own: building the next problems'
        // spaces and first batches must not hold up this one's measurements.
        own_evaluator.after_next_submission([this, lane, ahead, &ahead_done] {
          ahead_done = std::async(std::launch::async, [this, lane, ahead] { compile_ahead(lane, ahead); });
        });
        const std::unique_ptr<Strategy> strategy = search_.strategy();
        const std::unique_ptr<StopCondition> stop = search_.stop(*space);
        SplitEvaluator split(own_evaluator, shared, failed_);
        result.history = search(*space, *strategy, split, *stop, search_.batch, std::move(resumed),
                                search_.guessed_batches);
      }
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::unique_lock lock(shared.mutex);
      shared.finished = true;
      shared.changed.notify_all();
      shared.changed.wait(lock, [&] { return shared.helpers.empty(); });
      for (auto& [helper_lane, helper_evaluator] : shared.helpers_done) {
        result.lanes.push_back(helper_lane);
        result.evaluators.push_back(std::move(helper_evaluator));
      }
    }
    if (error) std::rethrow_exception(error);
    result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    if (events_.finished) {
      std::lock_guard lock(events_mutex_);
      events_.finished(lane, result);
    }
    std::lock_guard lock(mutex_);
    schedule_.finished(lane, problem);
    running_.erase({result.model, problem});
    results_.emplace(std::make_pair(result.model, problem), std::move(result));
  }

  void help(size_t lane, size_t problem, SharedProblem& shared) {
    std::shared_ptr<const SearchSpace> space;
    {
      std::unique_lock lock(shared.mutex);
      shared.changed.wait(lock, [&] { return shared.finished || shared.space != nullptr; });
      if (!shared.finished) space = shared.space;
    }
    if (space != nullptr && !space->empty()) {
      if (events_.helping) {
        std::lock_guard lock(events_mutex_);
        events_.helping(lane, problem);
      }
      std::unique_ptr<LaneEvaluator> evaluator = lanes_[lane]->open(*space);
      std::unique_lock lock(shared.mutex);
      if (!shared.finished) {
        SharedProblem::Helper& me = shared.helpers.emplace_back();
        me.lane = lane;
        me.evaluator = evaluator.get();
        bool measured = false;
        while (true) {
          shared.changed.wait(lock, [&] { return shared.finished || me.assigned; });
          if (!me.assigned) break;  // finished
          std::vector<size_t> work = me.work;
          lock.unlock();
          std::vector<Observation> answer;
          std::exception_ptr error;
          try {
            answer = evaluator->evaluate(*space, work);
          } catch (...) {
            error = std::current_exception();
          }
          lock.lock();
          me.answer = std::move(answer);
          me.error = error;
          me.assigned = false;
          measured = true;
          shared.changed.notify_all();
        }
        shared.helpers.remove_if([&](const SharedProblem::Helper& h) { return &h == &me; });
        if (measured) shared.helpers_done.emplace_back(lane, std::move(evaluator));
        shared.changed.notify_all();
      }
    }
    if (space != nullptr && !space->empty() && events_.stopped_helping) {
      std::lock_guard lock(events_mutex_);
      events_.stopped_helping(lane);
    }
    std::lock_guard lock(mutex_);
    schedule_.helped(lane, problem);
  }

  const std::vector<DeviceLane*>& lanes_;
  const std::vector<KernelProblem>& problems_;
  const LaneSearch& search_;
  const LaneEvents& events_;
  std::mutex mutex_;  // schedule_, running_, results_, error_
  DeviceSchedule schedule_;
  std::map<std::pair<std::string, size_t>, std::shared_ptr<SharedProblem>> running_;
  std::map<std::pair<std::string, size_t>, LaneResult> results_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
  std::mutex events_mutex_;
};

}  // namespace

std::vector<LaneResult> tune_on_lanes(const std::vector<DeviceLane*>& lanes,
                                      const std::vector<KernelProblem>& problems,
                                      const std::vector<double>& costs, const LaneSearch& search,
                                      const LaneEvents& events) {
  if (lanes.empty()) throw InvalidArgumentError("tuning needs at least one GPU");
  if (costs.size() != problems.size()) throw InternalError("tune_on_lanes: one cost per problem");
  LaneDriver driver(lanes, problems, costs, search, events);
  return driver.run();
}

}  // namespace gemmforge::tuner
