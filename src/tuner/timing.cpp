// Event-based timing with L2 flushes between repetitions.
#include "tuner/timing.hpp"

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/event.hpp"

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
  for (int i = 0; i < options.warmup; ++i) launch(stream);
  GEMMFORGE_CUDA_CHECK(cudaGetLastError());
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));

  // Batches of event pairs: enqueue several repetitions, then read them, so the host never idles the GPU
  // between repetitions more than a flush takes.
  constexpr int kBatch = 8;
  std::vector<cuda::Event> starts(kBatch);
  std::vector<cuda::Event> stops(kBatch);
  std::vector<double> samples;
  double total = 0;
  while (static_cast<int>(samples.size()) < options.max_repetitions &&
         (static_cast<int>(samples.size()) < options.min_repetitions || total < options.budget_ms)) {
    const int batch = std::min<int>(kBatch, options.max_repetitions - static_cast<int>(samples.size()));
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
