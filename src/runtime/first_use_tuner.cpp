// The first-use tuning queue: one thread, one tune at a time, a lock file shared with other processes, and
// a stop that kills the tune in flight rather than waiting for it.
#include "runtime/first_use_tuner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <utility>

namespace gemmforge::runtime {
namespace {

// An open lock file; closing it releases the flock held on it.
class LockFile {
 public:
  LockFile() = default;
  explicit LockFile(int fd) : fd_(fd) {}
  LockFile(LockFile&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  LockFile& operator=(LockFile&& other) noexcept {
    if (this != &other) {
      release();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  LockFile(const LockFile&) = delete;
  LockFile& operator=(const LockFile&) = delete;
  ~LockFile() { release(); }

  int fd() const { return fd_; }

 private:
  void release() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_ = -1;
};

TuneOutcome failed(std::string detail) {
  return TuneOutcome{TuneOutcome::Status::kFailed, std::move(detail)};
}

TuneOutcome stopped() {
  return TuneOutcome{TuneOutcome::Status::kStopped, "stopped"};
}

}  // namespace

FirstUseTuner::FirstUseTuner(FirstUseTunerOptions options) : options_(std::move(options)) {}

FirstUseTuner::~FirstUseTuner() {
  stop();
}

bool FirstUseTuner::enqueue(const KernelProblem& problem) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || !seen_.insert(problem).second) return false;
  queue_.push_back(problem);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_all();
  return true;
}

bool FirstUseTuner::pending(const KernelProblem& problem) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (current_ == problem) return true;
  for (const KernelProblem& queued : queue_) {
    if (queued == problem) return true;
  }
  return false;
}

bool FirstUseTuner::interrupted(const KernelProblem& problem) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return interrupted_.count(problem) != 0;
}

void FirstUseTuner::stop() {
  std::lock_guard<std::mutex> one_at_a_time(stop_mutex_);
  std::thread thread;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (const KernelProblem& problem : queue_) seen_.erase(problem);
    queue_.clear();
    thread = std::move(thread_);
  }
  wake_.notify_all();
  if (thread.joinable()) thread.join();
  std::lock_guard<std::mutex> lock(mutex_);
  stopping_ = false;
}

FirstUseStats FirstUseTuner::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  FirstUseStats s;
  s.queued = queue_.size();
  s.running = current_ ? 1 : 0;
  s.finished = finished_;
  s.failed = failed_;
  return s;
}

bool FirstUseTuner::stop_requested_within(double seconds) {
  std::unique_lock<std::mutex> lock(mutex_);
  return wake_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return stopping_; });
}

void FirstUseTuner::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const KernelProblem problem = queue_.front();
    queue_.pop_front();
    current_ = problem;
    lock.unlock();

    TuneOutcome outcome = tune(problem);
    if (outcome.ok() && options_.finished) {
      try {
        options_.finished(problem, outcome);
      } catch (const std::exception& e) {
        outcome = failed(fmt::format("the tune ended, but its result cannot serve: {}", e.what()));
      }
    }
    if (outcome.status == TuneOutcome::Status::kFailed) {
      spdlog::warn("first-use tuning of {} failed; its current plan keeps serving it: {}",
                   problem.to_string(), outcome.detail);
    } else if (outcome.status != TuneOutcome::Status::kStopped) {
      spdlog::debug("first-use tuning of {}: {}", problem.to_string(),
                    outcome.status == TuneOutcome::Status::kTuned ? "tuned" : outcome.detail);
    }

    lock.lock();
    current_.reset();
    switch (outcome.status) {
      case TuneOutcome::Status::kTuned:
      case TuneOutcome::Status::kSkipped:
        ++finished_;
        interrupted_.erase(problem);
        break;
      case TuneOutcome::Status::kFailed:
        ++failed_;
        interrupted_.erase(problem);
        break;
      case TuneOutcome::Status::kStopped:
        seen_.erase(problem);  // not tuned: a later call may queue it again
        interrupted_.insert(problem);
        break;
    }
  }
}

TuneOutcome FirstUseTuner::tune(const KernelProblem& problem) {
  // A tune stores its results before its process ends, so a process that waited for this lock sees them
  // (still_needed) instead of tuning the same problem again.
  LockFile lock_file;
  if (!options_.lock_path.empty()) {
    lock_file = LockFile(::open(options_.lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (lock_file.fd() < 0) {
      return failed(fmt::format("cannot open the lock file {} that tuning processes of this GPU share: {}",
                                options_.lock_path, std::strerror(errno)));
    }
    while (::flock(lock_file.fd(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        return failed(fmt::format("cannot lock {}: {}", options_.lock_path, std::strerror(errno)));
      }
      if (stop_requested_within(options_.poll_interval_s)) return stopped();
    }
  }
  if (options_.still_needed && !interrupted(problem)) {
    try {
      if (!options_.still_needed(problem)) {
        return TuneOutcome{TuneOutcome::Status::kSkipped, "tuned meanwhile by another process"};
      }
    } catch (const std::exception& e) {
      spdlog::debug("first-use tuning: cannot tell whether {} was tuned meanwhile ({}); tuning it",
                    problem.to_string(), e.what());
    }
  }

  std::unique_ptr<TuneJob> job;
  try {
    job = options_.launch(problem);
  } catch (const std::exception& e) {
    return failed(e.what());
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(options_.time_limit_s);
  while (true) {
    if (std::optional<TuneOutcome> outcome = job->poll()) return *outcome;
    if (stop_requested_within(options_.poll_interval_s)) {
      job->kill();
      return stopped();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      job->kill();
      return failed(fmt::format("no result within {:.3g} s; the tune was ended", options_.time_limit_s));
    }
  }
}

}  // namespace gemmforge::runtime
