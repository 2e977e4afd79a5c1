// Event-based timing with L2 flushes between repetitions.
#include "tuner/timing.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

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

Timing time_launches(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                     const TimingOptions& options, L2Flusher& flusher) {
  constexpr int kBatch = 8;
  // Waiting sleeps rather than spins: while one kernel is timed, the cores compile the next ones. The
  // events' own timestamps do not depend on how the host waits.
  std::vector<cuda::Event> starts;
  std::vector<cuda::Event> stops;
  for (int i = 0; i < kBatch; ++i) {
    starts.emplace_back(cudaEventBlockingSync);
    stops.emplace_back(cudaEventBlockingSync);
  }

  // Warm-up: `warmup` launches, or fewer once they took warmup_ms (a long kernel is warm after one). None
  // where the caller has just run the work.
  double warm_ms = 0;
  int warm_launches = 0;
  for (; warm_launches < options.warmup && (warm_launches == 0 || warm_ms < options.warmup_ms);
       ++warm_launches) {
    starts[0].record(stream);
    launch(stream);
    stops[0].record(stream);
    GEMMFORGE_CUDA_CHECK(cudaGetLastError());
    stops[0].synchronize();
    warm_ms += stops[0].elapsed_since(starts[0]);
  }

  // Batches of event pairs: enqueue several repetitions, then read them, so the host never idles the GPU
  // between repetitions more than a flush takes. A batch holds no more repetitions than the minimum count
  // and the budget still need, at the pace of the launches so far. Where a time to beat is given, the
  // first batch holds only the repetitions that tell whether the contender is beaten.
  std::vector<double> samples;
  double total = 0;
  const int first_look = options.beaten_above_ms > 0
                             ? std::clamp(options.beaten_repetitions, 1, std::max(1, options.max_repetitions))
                             : 0;
  auto beaten = [&] {
    return static_cast<int>(samples.size()) >= first_look &&
           *std::min_element(samples.begin(), samples.end()) > options.beaten_above_ms;
  };
  auto needed = [&] {
    const int done = static_cast<int>(samples.size());
    if (done < first_look) return first_look - done;  // enough to tell whether it is beaten
    if (first_look > 0 && beaten()) return 0;
    if (done == 0 && warm_launches == 0) return options.min_repetitions;  // no pace known yet
    const double pace_ms = done > 0 ? total / done : warm_ms / warm_launches;
    const int for_budget = total < options.budget_ms && pace_ms > 0
                               ? static_cast<int>(std::ceil((options.budget_ms - total) / pace_ms))
                               : (total < options.budget_ms ? kBatch : 0);
    return std::min(options.max_repetitions - done, std::max(options.min_repetitions - done, for_budget));
  };
  for (int batch = std::min(kBatch, needed()); batch > 0; batch = std::min(kBatch, needed())) {
    for (int i = 0; i < batch; ++i) {
      if (options.flush_l2) flusher.flush(stream);
      starts[i].record(stream);
      launch(stream);
      stops[i].record(stream);
    }
    GEMMFORGE_CUDA_CHECK(cudaGetLastError());
    for (int i = 0; i < batch; ++i) {
      stops[i].synchronize();
      const double ms = stops[i].elapsed_since(starts[i]);
      samples.push_back(ms);
      total += ms;
    }
  }
  if (samples.empty()) throw InvalidArgumentError("timing: max_repetitions must be at least 1");
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.repetitions = static_cast<int>(samples.size());
  const size_t mid = samples.size() / 2;
  t.median_ms = samples.size() % 2 == 1 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
  t.min_ms = samples.front();
  t.max_ms = samples.back();
  return t;
}

}  // namespace gemmforge::tuner
