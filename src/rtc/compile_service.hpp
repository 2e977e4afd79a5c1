// One pool of NVRTC threads for a whole tuning run, shared by every problem and every GPU: a kernel is
// compiled at most once (requests with the same cubin key share one compilation, in flight or done), and
// kernels wanted now go before kernels compiled ahead of the search.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rtc/compiler.hpp"

namespace gemmforge::rtc {

/// Kernels wanted now are compiled before kernels compiled ahead of the search.
enum class CompilePriority { kNow, kAhead };

/// What a compile service did, for summaries and tests.
struct CompileServiceStats {
  size_t compiled = 0;       ///< NVRTC compilations run, failed ones included
  size_t shared = 0;         ///< requests answered by a compilation already queued, running or done
  size_t ahead = 0;          ///< compilations queued ahead of the search
  size_t ahead_used = 0;     ///< of those, wanted later
  size_t ahead_dropped = 0;  ///< of those, dropped unstarted: more guesses waited than four per thread
  double compile_sum_s = 0;  ///< the compilations' own durations added up
  double compile_cpu_s = 0;  ///< the CPU time the compiling threads spent in them
  double busy_s = 0;         ///< wall time with at least one compilation running
};

class CompileService {
 public:
  using CompileFunction = std::function<CompileResult(const CompileRequest&)>;

  /// Starts `threads` compile threads (0: default_compile_threads()). `compile` compiles one request
  /// (rtc::compile unless a test injects another). The last `keep` finished compilations stay
  /// available to later requests of their key. A kernel queued ahead waits `ahead_delay_s` before a thread
  /// may take it, so that the batch a search asks for right after queueing its guesses goes first. At
  /// most half the threads compile guesses at once: the others stay free for kernels wanted now.
  explicit CompileService(unsigned threads = 0, CompileFunction compile = {}, size_t keep = 512,
                          double ahead_delay_s = 0.05);
  /// Abandons the compilations not started and joins the threads.
  ~CompileService();
  CompileService(const CompileService&) = delete;
  CompileService& operator=(const CompileService&) = delete;

  class Job;
  using Ticket = std::shared_ptr<Job>;

  /// The compilation of `key`: the one already queued, running or kept if any (raised to kNow when
  /// wanted now), else a new one queued with `priority`.
  Ticket submit(const std::string& key, const CompileRequest& request, CompilePriority priority);
  /// Queues `key` ahead of the search unless it is known already; returns whether it was queued. When more
  /// than four guesses per thread wait, the oldest waiting is dropped.
  bool ahead(const std::string& key, const CompileRequest& request);
  /// Whether a compilation of `key` is queued, running or kept.
  bool known(const std::string& key) const;

  /// Blocks until one of `tickets` whose `taken` flag is false has finished and returns its position;
  /// nullopt when every ticket is taken.
  std::optional<size_t> wait_any(const std::vector<Ticket>& tickets, const std::vector<bool>& taken) const;
  /// The result of a finished ticket (wait_any said so).
  static const CompileResult& result(const Ticket& ticket);
  /// Seconds since the start of the service at which the ticket finished; nullopt while it has not.
  std::optional<double> finished_at(const Ticket& ticket) const;
  /// Seconds since the start of the service.
  double now_s() const;

  unsigned threads() const { return static_cast<unsigned>(threads_.size()); }
  CompileServiceStats stats() const;

 private:
  void work();
  void keep_done(const Ticket& job);

  CompileFunction compile_;
  size_t keep_;
  double ahead_delay_s_;
  size_t max_ahead_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  std::condition_variable queued_;
  mutable std::condition_variable finished_;
  std::deque<Ticket> now_;  // a job raised from ahead_ is in both; whoever pops it second skips it
  std::deque<Ticket> ahead_;
  std::map<std::string, Ticket> jobs_;  // queued, running and kept
  std::list<std::string> kept_;         // finished keys, oldest first
  bool stop_ = false;
  size_t running_ = 0;
  size_t running_ahead_ = 0;  // of running_, compilations started ahead of the search
  size_t max_running_ahead_ = 0;
  double busy_since_s_ = 0;
  CompileServiceStats stats_;
  std::vector<std::jthread> threads_;  // last: joined before the members they use are destroyed
};

}  // namespace gemmforge::rtc
