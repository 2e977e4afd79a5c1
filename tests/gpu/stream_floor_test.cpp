// The memory floor `bench` times: one launch reads A and B and writes C, zeros over C's whole 16-byte
// vectors, leaving the operands and C's last bytes past them as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "gpu_fixture.hpp"
#include "rtc/utility_kernels.hpp"

namespace gemmforge::testing {
namespace {

constexpr unsigned char kPattern = 0xab;

class StreamFloor : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    stream_.emplace();
    utilities_.emplace();
  }

  cuda::DeviceBuffer patterned(size_t bytes) {
    cuda::DeviceBuffer buffer(bytes);
    GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), kPattern, bytes, stream_->get()));
    return buffer;
  }

  std::vector<unsigned char> read(const cuda::DeviceBuffer& buffer) {
    std::vector<unsigned char> host(buffer.bytes());
    GEMMFORGE_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), buffer.data(), host.size(), cudaMemcpyDeviceToHost, stream_->get()));
    GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream_->get()));
    return host;
  }

  std::optional<cuda::Stream> stream_;
  std::optional<rtc::UtilityKernels> utilities_;
};

TEST_F(StreamFloor, WritesZerosOverCsWholeVectorsAndLeavesTheOperandsAlone) {
  // Sizes off 16 bytes, and more vectors than the launch has threads, so every loop runs its tail.
  const size_t a_bytes = (3u << 20) + 8, b_bytes = (5u << 20) + 4, c_bytes = (7u << 20) + 12;
  cuda::DeviceBuffer a = patterned(a_bytes), b = patterned(b_bytes), c = patterned(c_bytes);
  utilities_->stream_floor(a.data(), a_bytes, b.data(), b_bytes, c.data(), c_bytes, stream_->get());
  GEMMFORGE_CUDA_CHECK(cudaGetLastError());

  const std::vector<unsigned char> host_c = read(c);
  const size_t whole = c_bytes / 16 * 16;
  size_t zeros = 0, kept = 0;
  for (size_t i = 0; i < whole; ++i) zeros += host_c[i] == 0;
  for (size_t i = whole; i < c_bytes; ++i) kept += host_c[i] == kPattern;
  EXPECT_EQ(zeros, whole);
  EXPECT_EQ(kept, c_bytes - whole) << "the bytes past C's last whole vector are not the floor's to write";
  for (const cuda::DeviceBuffer* operand : {&a, &b}) {
    const std::vector<unsigned char> host = read(*operand);
    EXPECT_EQ(static_cast<size_t>(std::count(host.begin(), host.end(), kPattern)), host.size())
        << "an operand the floor only reads was written";
  }
}

}  // namespace
}  // namespace gemmforge::testing
