// Finding a stream's scratch under a shared lock; growing it under an exclusive one.
#include "runtime/scratch_pool.hpp"

#include <algorithm>
#include <mutex>

namespace gemmforge::runtime {

ScratchPool::Key ScratchPool::key_of(cudaStream_t stream) {
  return {stream, stream == cudaStreamPerThread ? std::this_thread::get_id() : std::thread::id()};
}

rtc::LaunchBuffers ScratchPool::buffers(const LaunchGeometry& geometry, cudaStream_t stream) {
  if (geometry.semaphores == 0 && geometry.workspace_bytes == 0) return {};
  const Key key = key_of(stream);
  {
    // Scratch large enough already is only read by prepare(), so concurrent callers may share it.
    std::shared_lock lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.semaphores >= geometry.semaphores &&
        it->second.workspace_bytes >= geometry.workspace_bytes) {
      return it->second.scratch.prepare(geometry, stream);
    }
  }
  std::unique_lock lock(mutex_);
  Entry& entry = entries_[key];
  const rtc::LaunchBuffers buffers = entry.scratch.prepare(geometry, stream);
  entry.semaphores = std::max(entry.semaphores, geometry.semaphores);
  entry.workspace_bytes = std::max(entry.workspace_bytes, geometry.workspace_bytes);
  return buffers;
}

}  // namespace gemmforge::runtime
