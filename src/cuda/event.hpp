// CUDA events for timing device work. Move-only.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "cuda/check.hpp"

namespace gemmforge::cuda {

class Event {
 public:
  /// `flags` as cudaEventCreateWithFlags takes them: cudaEventBlockingSync makes synchronize() sleep
  /// instead of spinning a core.
  explicit Event(unsigned flags = cudaEventDefault) {
    GEMMFORGE_CUDA_CHECK(cudaEventCreateWithFlags(&event_, flags));
  }
  ~Event() {
    if (event_ != nullptr) GEMMFORGE_CUDA_LOG_ON_ERROR(cudaEventDestroy(event_));
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    std::swap(event_, other.event_);
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { GEMMFORGE_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  void synchronize() const { GEMMFORGE_CUDA_CHECK(cudaEventSynchronize(event_)); }

  /// Milliseconds from `start` to this event; both must have completed.
  float elapsed_since(const Event& start) const {
    float ms = 0;
    GEMMFORGE_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace gemmforge::cuda
