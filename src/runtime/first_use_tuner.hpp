// Tuning at first use: problems the runtime serves without a tuned result wait in a queue, and one thread
// tunes them one at a time, holding a lock file so that processes tuning the same GPU take turns. How a tune
// is started is injected (runtime/tune_process.hpp starts `gemmforge tune`), so all of this runs without a
// GPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "core/problem.hpp"

namespace gemmforge::runtime {

/// How one tune ended.
struct TuneOutcome {
  enum class Status {
    kTuned,    ///< the tune ran to its end; its results are stored
    kSkipped,  ///< not run: the problem had been tuned meanwhile (by another process)
    kFailed,   ///< it could not start, failed, or ran past its time limit
    kStopped,  ///< ended by FirstUseTuner::stop()
  };
  Status status = Status::kFailed;
  std::string detail;  ///< why it failed or was skipped, in words

  bool ok() const { return status == Status::kTuned || status == Status::kSkipped; }
};

/// A tune under way, such as a child process. Used by one thread.
class TuneJob {
 public:
  virtual ~TuneJob() = default;
  /// How it ended, once it has; nullopt while it runs. Never blocks.
  virtual std::optional<TuneOutcome> poll() = 0;
  /// Ends it at once. Safe for a tune: the next one resumes the trials it stored.
  virtual void kill() = 0;
};

struct FirstUseTunerOptions {
  /// Starts tuning a problem. An exception it throws fails that tune, with its message.
  std::function<std::unique_ptr<TuneJob>(const KernelProblem&)> launch;
  /// Asked once the lock is held, before launching: false when the problem needs no tune any more (another
  /// process tuned it while this one waited). Not asked for a problem whose last tune a stop cut short:
  /// its own stored trials would answer for it. Null: always needed.
  std::function<bool(const KernelProblem&)> still_needed;
  /// Called on the tuner's thread after each tune that ended ok (tuned, or skipped as tuned meanwhile),
  /// before the next one starts: the runtime loads the tuned plan here. An exception it throws counts the
  /// tune as failed.
  std::function<void(const KernelProblem&, const TuneOutcome&)> finished;
  /// Lock file held (flock) while a problem is tuned; empty: none.
  std::string lock_path;
  /// How often a running tune is polled, and the longest a stop waits for the thread to notice.
  double poll_interval_s = 0.05;
  /// A tune running longer is ended and counts as failed.
  double time_limit_s = 1800;
};

struct FirstUseStats {
  uint64_t queued = 0;    ///< waiting
  uint64_t running = 0;   ///< 0 or 1: a tune (or its lock wait, or its `finished` call) under way
  uint64_t finished = 0;  ///< ended ok (tuned or skipped) and passed to `finished`
  uint64_t failed = 0;
};

/// Thread-safe. The thread starts with the first problem queued.
class FirstUseTuner {
 public:
  explicit FirstUseTuner(FirstUseTunerOptions options);
  /// stop().
  ~FirstUseTuner();
  FirstUseTuner(const FirstUseTuner&) = delete;
  FirstUseTuner& operator=(const FirstUseTuner&) = delete;

  /// Queues `problem` unless it was queued before, whatever became of it (a problem is tuned once; a
  /// failed tune is not retried). Returns whether it was queued. Takes a lock for a set lookup only.
  bool enqueue(const KernelProblem& problem);

  /// True while `problem` waits or is being tuned.
  bool pending(const KernelProblem& problem) const;

  /// True for a problem whose last tune a stop ended before it finished: the trials it stored are a search
  /// cut short, which select a result all the same, and a tune queued again resumes them.
  bool interrupted(const KernelProblem& problem) const;

  /// Ends the tune in flight (killing it), drops the queue and joins the thread. The problems dropped or
  /// ended may be queued again; those tuned or failed may not. A later enqueue() starts a new thread.
  void stop();

  FirstUseStats stats() const;

 private:
  void run();
  /// Takes the lock file, launches and watches the tune of `problem`.
  TuneOutcome tune(const KernelProblem& problem);
  /// Waits up to `seconds` for a stop; true when one was asked for.
  bool stop_requested_within(double seconds);

  FirstUseTunerOptions options_;
  std::mutex stop_mutex_;  // one stop() at a time
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<KernelProblem> queue_;
  std::set<KernelProblem> seen_;          // queued at some time and not dropped by a stop
  std::set<KernelProblem> interrupted_;   // whose last tune a stop ended
  std::optional<KernelProblem> current_;  // being tuned
  uint64_t finished_ = 0;
  uint64_t failed_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gemmforge::runtime
