// The SM clock a GPU runs at, sampled while kernels run, through NVML loaded at run time (the driver's
// libnvidia-ml.so.1), so that a comparison can say at what clocks each side ran: a power-limited GPU
// lowers its clocks by what a kernel draws.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace gemmforge::cuda {

using SampleClock = std::chrono::steady_clock;

/// One reading of the SM clock.
struct ClockSample {
  SampleClock::time_point at;
  unsigned sm_mhz = 0;
};

/// The mean SM clock over a span of samples, and how many there were.
struct MeanClock {
  double sm_mhz = 0;
  size_t samples = 0;
};

/// The samples taken so far, in the order taken: at `capacity` the older half goes, so the latest
/// `capacity` / 2 at least are kept (at 2 ms a sample, the default keeps the last 4 minutes or more), and a
/// long benchmark holds bounded memory while every span it asks about, a turn of seconds, is still there.
class ClockLog {
 public:
  explicit ClockLog(size_t capacity = size_t{1} << 18) : capacity_(std::max<size_t>(capacity, 2)) {}
  void add(const ClockSample& sample);
  /// The mean of the samples taken within [start, end]; nullopt where none fell there.
  std::optional<MeanClock> mean(SampleClock::time_point start, SampleClock::time_point end) const;
  size_t size() const { return samples_.size(); }

 private:
  size_t capacity_;
  std::vector<ClockSample> samples_;
};

/// Samples the SM clock of the GPU with `uuid` ("GPU-...") on a thread of its own, every `period` until it is
/// destroyed. Where NVML cannot be loaded or does not know the GPU it samples nothing, and reason() says why;
/// nothing it meets is an error, since the clocks only annotate a measurement. Neither copyable nor movable.
class ClockSampler {
 public:
  explicit ClockSampler(const std::string& uuid,
                        std::chrono::microseconds period = std::chrono::microseconds(2000));
  ~ClockSampler();
  ClockSampler(const ClockSampler&) = delete;
  ClockSampler& operator=(const ClockSampler&) = delete;

  bool sampling() const { return reason_.empty(); }
  /// Why there are no samples ("libnvidia-ml.so.1 could not be loaded ..."); empty while sampling.
  const std::string& reason() const { return reason_; }
  /// The mean clock between two moments of the steady clock, from the samples taken so far.
  std::optional<MeanClock> between(SampleClock::time_point start, SampleClock::time_point end) const;

 private:
  struct Nvml;
  void run(std::chrono::microseconds period);

  std::string reason_;
  std::unique_ptr<Nvml> nvml_;  ///< set while sampling
  mutable std::mutex mutex_;
  ClockLog log_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gemmforge::cuda
