// NVRTC compilation on a pool of threads that hands over each result as soon as it is ready, so the
// tuner measures the first kernels of a batch while the rest still compile.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "rtc/compiler.hpp"

namespace gemmforge::tuner {

/// Compile threads the tuner uses by default: one per core but one, which is left to the worker so its
/// timing loop keeps the GPU fed.
unsigned default_tuning_compile_threads();

class CompileStream {
 public:
  /// Starts compiling at once on min(threads, requests) threads (threads 0: the default).
  CompileStream(std::vector<rtc::CompileRequest> requests, unsigned threads = 0);
  /// Lets compilations in progress finish and abandons those not started.
  ~CompileStream();
  CompileStream(const CompileStream&) = delete;
  CompileStream& operator=(const CompileStream&) = delete;

  struct Done {
    size_t index = 0;  ///< position of the request
    rtc::CompileResult result;
  };
  /// The next finished compilation, in the order they finish; blocks until one is ready and returns
  /// nullopt once every request has been handed over. A compile that throws comes back as a failed result.
  std::optional<Done> next();

  size_t size() const { return requests_.size(); }
  unsigned threads() const { return static_cast<unsigned>(threads_.size()); }
  /// Seconds from the start to the last compilation finished so far: the wall time the pool was busy.
  double busy_seconds() const;

 private:
  void work();

  std::vector<rtc::CompileRequest> requests_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<size_t> next_request_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Done> done_;
  size_t handed_over_ = 0;
  double busy_s_ = 0;
  std::vector<std::jthread> threads_;  // last: joined before the members they use are destroyed
};

}  // namespace gemmforge::tuner
