// CUDA streams: Stream owns one, StreamRef borrows a caller's and never destroys it.
#pragma once

#include <cuda_runtime_api.h>

#include <utility>

#include "cuda/check.hpp"

namespace gemmforge::cuda {

/// A borrowed stream (possibly the legacy default stream, nullptr); the caller keeps ownership.
class StreamRef {
 public:
  StreamRef() = default;
  explicit StreamRef(cudaStream_t stream) : stream_(stream) {}
  cudaStream_t get() const { return stream_; }
  void synchronize() const { GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

/// An owned non-blocking stream, destroyed with the object. Move-only.
class Stream {
 public:
  Stream() { GEMMFORGE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_ != nullptr) GEMMFORGE_CUDA_LOG_ON_ERROR(cudaStreamDestroy(stream_));
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    std::swap(stream_, other.stream_);
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  StreamRef ref() const { return StreamRef(stream_); }
  void synchronize() const { GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace gemmforge::cuda
