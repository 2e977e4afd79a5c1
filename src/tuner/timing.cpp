// Event-based timing with L2 flushes between repetitions.
#include "tuner/timing.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/statistics.hpp"
#include "cuda/check.hpp"
#include "cuda/event.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::tuner {

L2Flusher::L2Flusher() {
  int ordinal = 0;
  int l2 = 0;
  GEMMFORGE_CUDA_CHECK(cudaGetDevice(&ordinal));
  GEMMFORGE_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal));
  buffer_ = cuda::DeviceBuffer(std::max<size_t>(2 * static_cast<size_t>(l2), 8u << 20));
}

void L2Flusher::flush(cudaStream_t stream) {
  GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), 0, buffer_.bytes(), stream));
}

int repetitions_needed(const std::vector<double>& samples, const WarmUp& warm_up,
                       const TimingOptions& options) {
  const int done = static_cast<int>(samples.size());
  // Where a time to beat is given, the first look holds only the repetitions that tell whether the
  // contender is beaten; a beaten one gets no more.
  const int first_look = options.beaten_above_ms > 0
                             ? std::clamp(options.beaten_repetitions, 1, std::max(1, options.max_repetitions))
                             : 0;
  if (done < first_look) return first_look - done;
  if (first_look > 0 && *std::min_element(samples.begin(), samples.end()) > options.beaten_above_ms) return 0;
  // Otherwise the minimum count, and what the budget still holds at the pace of the launches so far.
  double total = 0;
  for (const double ms : samples) total += ms;
  const double pace_ms = done > 0 ? total / done : warm_up.launches > 0 ? warm_up.ms / warm_up.launches : 0;
  // Long launches need fewer: what twice the budget holds, at least min_repetitions_long (no budget: the
  // minimum count alone decides).
  int min_count = options.min_repetitions;
  if (options.budget_ms > 0 && pace_ms > 0 && min_count * pace_ms > 2 * options.budget_ms) {
    const int long_count = static_cast<int>(std::ceil(2 * options.budget_ms / pace_ms));
    min_count = std::min(min_count, std::max(options.min_repetitions_long, long_count));
  }
  // Where a precision is asked for, the minimum count first, then batches until the median is known
  // that well or the budget is spent.
  if (options.precision > 0) {
    if (done < min_count) return std::min(options.max_repetitions - done, min_count - done);
    if (relative_median_error(samples) <= options.precision) return 0;
  }
  int for_budget = 0;
  if (total < options.budget_ms) {
    for_budget = pace_ms > 0 ? static_cast<int>(std::ceil((options.budget_ms - total) / pace_ms))
                             : kTimingBatch;  // no pace known yet: a batch tells it
  }
  return std::max(0, std::min(options.max_repetitions - done, std::max(min_count - done, for_budget)));
}

double relative_median_error(std::vector<double> samples) {
  const size_t n = samples.size();
  if (n < 2) return std::numeric_limits<double>::infinity();
  const double center = median(samples);
  if (!(center > 0)) return std::numeric_limits<double>::infinity();
  for (double& x : samples) x = std::abs(x - center);
  // The spread from the median absolute deviation (as a normal's standard deviation: 1.4826 MAD), which a
  // few outliers (a preempted launch) do not move; the median's standard error is 1.2533 sigma / sqrt(n).
  const double sigma = 1.4826 * median(samples);
  return 1.2533 * sigma / std::sqrt(static_cast<double>(n)) / center;
}

bool beaten_at_verification(const std::vector<double>& launches_ms, const TimingOptions& options) {
  if (options.beaten_above_ms < kLongLaunchMs || launches_ms.empty()) return false;
  return *std::min_element(launches_ms.begin(), launches_ms.end()) > options.beaten_above_ms;
}

Timing timing_of(std::vector<double> samples) {
  if (samples.empty()) throw InvalidArgumentError("timing: no launch was timed");
  Timing t;
  t.repetitions = static_cast<int>(samples.size());
  t.median_ms = median(samples);
  const auto [fastest, slowest] = std::minmax_element(samples.begin(), samples.end());
  t.min_ms = *fastest;
  t.max_ms = *slowest;
  return t;
}

Timing time_launches(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                     const TimingOptions& options, L2Flusher& flusher, const WarmUp& done) {
  // Waiting sleeps rather than spins: while one kernel is timed, the cores compile the next ones. The
  // events' own timestamps do not depend on how the host waits.
  std::vector<cuda::Event> starts;
  std::vector<cuda::Event> stops;
  for (int i = 0; i < kTimingBatch; ++i) {
    starts.emplace_back(cudaEventBlockingSync);
    stops.emplace_back(cudaEventBlockingSync);
  }

  // Warm-up: `warmup` launches, or fewer once they took warmup_ms (a long kernel is warm after one). None
  // where the caller has just run the work.
  WarmUp warm_up = done;
  for (; warm_up.launches < options.warmup && (warm_up.launches == 0 || warm_up.ms < options.warmup_ms);
       ++warm_up.launches) {
    starts[0].record(stream);
    launch(stream);
    stops[0].record(stream);
    GEMMFORGE_CUDA_CHECK(cudaGetLastError());
    stops[0].synchronize();
    warm_up.ms += stops[0].elapsed_since(starts[0]);
  }

  // Batches of event pairs: enqueue several repetitions, then read them, so the host never idles the GPU
  // between repetitions more than a flush takes. A batch holds no more than repetitions_needed says.
  std::vector<double> samples;
  auto next_batch = [&] { return std::min(kTimingBatch, repetitions_needed(samples, warm_up, options)); };
  for (int batch = next_batch(); batch > 0; batch = next_batch()) {
    for (int i = 0; i < batch; ++i) {
      if (options.flush_l2) flusher.flush(stream);
      starts[i].record(stream);
      launch(stream);
      stops[i].record(stream);
    }
    GEMMFORGE_CUDA_CHECK(cudaGetLastError());
    for (int i = 0; i < batch; ++i) {
      stops[i].synchronize();
      samples.push_back(stops[i].elapsed_since(starts[i]));
    }
  }
  if (samples.empty()) throw InvalidArgumentError("timing: max_repetitions must be at least 1");
  return timing_of(std::move(samples));
}

}  // namespace gemmforge::tuner
