// Launch scratch (split-K semaphores and workspace) for every stream the runtime launches on. Launches on
// one stream run in order and leave their semaphores zero, so they share one rtc::LaunchScratch; launches
// on different streams may overlap, so each stream has its own.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <shared_mutex>
#include <thread>
#include <utility>

#include "core/manifest.hpp"
#include "rtc/gemm_kernel.hpp"

namespace gemmforge::runtime {

class ScratchPool {
 public:
  ScratchPool() = default;
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  /// The buffers a launch of `geometry` on `stream` needs. Allocates (on the current device, synchronizing
  /// the stream) only the first time a stream needs more than it has; any number of threads may call it.
  rtc::LaunchBuffers buffers(const LaunchGeometry& geometry, cudaStream_t stream);

 private:
  // cudaStreamPerThread is a different stream on every thread; every other handle is one stream.
  using Key = std::pair<cudaStream_t, std::thread::id>;
  static Key key_of(cudaStream_t stream);

  struct Entry {
    rtc::LaunchScratch scratch;
    int64_t semaphores = 0;  // what `scratch` was last prepared for: it holds at least this much
    int64_t workspace_bytes = 0;
  };

  std::shared_mutex mutex_;
  std::map<Key, Entry> entries_;  // nodes stay put while others are added
};

}  // namespace gemmforge::runtime
