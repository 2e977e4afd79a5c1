// The shared compile pool: jobs by cubin key, two queues, finished jobs kept for a while.
#include "rtc/compile_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "rtc/compile_pool.hpp"

namespace gemmforge::rtc {

class CompileService::Job {
 public:
  enum class State { kQueued, kRunning, kDone };
  std::string key;
  CompileRequest request;
  CompilePriority priority = CompilePriority::kNow;
  State state = State::kQueued;
  bool wanted = false;  // asked for by submit(), not only ahead()
  CompileResult result;
  double finished_s = 0;
  double queued_s = 0;
};

CompileService::CompileService(unsigned threads, CompileFunction compile, size_t keep, double ahead_delay_s)
    : compile_(compile ? std::move(compile) : CompileFunction(rtc::compile)),
      keep_(keep),
      ahead_delay_s_(ahead_delay_s) {
  if (threads == 0) threads = default_compile_threads();
  max_ahead_ = 4 * static_cast<size_t>(threads);
  max_running_ahead_ = std::max<size_t>(1, threads / 2);
  for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { work(); });
}

CompileService::~CompileService() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  queued_.notify_all();
  threads_.clear();  // joins
}

double CompileService::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

CompileService::Ticket CompileService::submit(const std::string& key, const CompileRequest& request,
                                              CompilePriority priority) {
  std::unique_lock lock(mutex_);
  if (auto it = jobs_.find(key); it != jobs_.end()) {
    Ticket job = it->second;
    ++stats_.shared;
    if (!job->wanted && job->priority == CompilePriority::kAhead) ++stats_.ahead_used;
    job->wanted = true;
    if (priority == CompilePriority::kNow && job->priority == CompilePriority::kAhead &&
        job->state == Job::State::kQueued) {
      job->priority = CompilePriority::kNow;
      now_.push_back(job);
      lock.unlock();
      queued_.notify_one();
    }
    return job;
  }
  auto job = std::make_shared<Job>();
  job->key = key;
  job->request = request;
  job->priority = priority;
  job->wanted = true;
  jobs_.emplace(key, job);
  (priority == CompilePriority::kNow ? now_ : ahead_).push_back(job);
  lock.unlock();
  queued_.notify_one();
  return job;
}

bool CompileService::ahead(const std::string& key, const CompileRequest& request) {
  std::unique_lock lock(mutex_);
  if (jobs_.count(key) != 0) return false;
  auto job = std::make_shared<Job>();
  job->key = key;
  job->request = request;
  job->priority = CompilePriority::kAhead;
  job->queued_s = now_s();
  // Guesses are dropped oldest first once more are waiting than the threads could use soon.
  while (ahead_.size() >= max_ahead_) {
    const Ticket oldest = std::move(ahead_.front());
    ahead_.pop_front();
    if (oldest->state == Job::State::kQueued && !oldest->wanted &&
        oldest->priority == CompilePriority::kAhead) {
      jobs_.erase(oldest->key);
      ++stats_.ahead_dropped;
    }
  }
  jobs_.emplace(key, job);
  ahead_.push_back(job);
  ++stats_.ahead;
  lock.unlock();
  queued_.notify_one();
  return true;
}

bool CompileService::known(const std::string& key) const {
  std::lock_guard lock(mutex_);
  return jobs_.count(key) != 0;
}

void CompileService::work() {
  std::unique_lock lock(mutex_);
  while (true) {
    queued_.wait(lock, [this] {
      return stop_ || !now_.empty() || (!ahead_.empty() && running_ahead_ < max_running_ahead_);
    });
    if (stop_) return;
    Ticket job;
    while (!job && !now_.empty()) {
      Ticket next = std::move(now_.front());
      now_.pop_front();
      if (next->state == Job::State::kQueued) job = std::move(next);  // else raised: started already
    }
    while (!job && !ahead_.empty() && running_ahead_ < max_running_ahead_) {
      if (ahead_.front()->state != Job::State::kQueued) {
        ahead_.pop_front();
        continue;
      }
      // A search queues its guesses just before the batch it wants now: the batch goes first.
      const double wait_s = ahead_.front()->queued_s + ahead_delay_s_ - now_s();
      if (wait_s > 0) {
        queued_.wait_for(lock, std::chrono::duration<double>(wait_s));
        break;
      }
      job = std::move(ahead_.front());
      ahead_.pop_front();
    }
    if (!job) continue;
    const bool guess = job->priority == CompilePriority::kAhead;
    running_ahead_ += guess ? 1 : 0;
    job->state = Job::State::kRunning;
    if (running_++ == 0) busy_since_s_ = now_s();
    lock.unlock();
    CompileResult result;
    try {
      result = compile_(job->request);
    } catch (const std::exception& e) {  // NVRTC refusing a program is a failed compile like any other
      result.ok = false;
      result.error = e.what();
    }
    lock.lock();
    job->result = std::move(result);
    job->state = Job::State::kDone;
    job->finished_s = now_s();
    spdlog::debug("compiled {} in {:.0f} ms, queued {:.1f} s and done {:.1f} s after the pool started{}",
                  job->key, job->result.compile_ms, job->queued_s, job->finished_s,
                  guess ? " (a guess)" : "");
    ++stats_.compiled;
    stats_.compile_sum_s += job->result.compile_ms / 1e3;
    stats_.compile_cpu_s += job->result.cpu_ms / 1e3;
    if (--running_ == 0) stats_.busy_s += job->finished_s - busy_since_s_;
    if (guess) {
      --running_ahead_;
      queued_.notify_one();  // a guess may start now
    }
    keep_done(job);
    finished_.notify_all();
  }
}

void CompileService::keep_done(const Ticket& job) {
  kept_.push_back(job->key);
  while (kept_.size() > keep_) {
    jobs_.erase(kept_.front());  // a caller holding the ticket still holds the result
    kept_.pop_front();
  }
}

std::optional<size_t> CompileService::wait_any(const std::vector<Ticket>& tickets,
                                               const std::vector<bool>& taken) const {
  std::unique_lock lock(mutex_);
  std::optional<size_t> found;
  finished_.wait(lock, [&] {
    bool pending = false;
    for (size_t i = 0; i < tickets.size(); ++i) {
      if (taken[i]) continue;
      pending = true;
      if (tickets[i]->state == Job::State::kDone) {
        found = i;
        return true;
      }
    }
    return !pending;
  });
  return found;
}

const CompileResult& CompileService::result(const Ticket& ticket) {
  return ticket->result;
}

std::optional<double> CompileService::finished_at(const Ticket& ticket) const {
  std::lock_guard lock(mutex_);
  if (ticket->state != Job::State::kDone) return std::nullopt;
  return ticket->finished_s;
}

CompileServiceStats CompileService::stats() const {
  std::lock_guard lock(mutex_);
  CompileServiceStats s = stats_;
  if (running_ > 0) s.busy_s += now_s() - busy_since_s_;
  return s;
}

}  // namespace gemmforge::rtc
