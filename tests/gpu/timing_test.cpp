// Timing on a real GPU: the repetition counts that the options promise, with a memset as the contender.
#include <gtest/gtest.h>

#include <optional>

#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "gpu_fixture.hpp"
#include "tuner/timing.hpp"

namespace gemmforge::testing {
namespace {

class Timing : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    stream_.emplace();
    buffer_.emplace(64u << 20);
    flusher_.emplace();
  }

  tuner::Timing time(const tuner::TimingOptions& options) {
    return tuner::time_launches(
        [&](cudaStream_t s) {
          GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(buffer_->data(), 1, buffer_->bytes(), s));
        },
        stream_->get(), options, *flusher_);
  }

  std::optional<cuda::Stream> stream_;
  std::optional<cuda::DeviceBuffer> buffer_;
  std::optional<tuner::L2Flusher> flusher_;
};

TEST_F(Timing, AContenderGetsTheMinimumCountWhenNothingIsToBeBeaten) {
  tuner::TimingOptions options;
  options.budget_ms = 0;  // the minimum count alone decides
  const tuner::Timing t = time(options);
  EXPECT_EQ(t.repetitions, options.min_repetitions);
  EXPECT_GT(t.median_ms, 0);
  EXPECT_LE(t.min_ms, t.median_ms);
  EXPECT_LE(t.median_ms, t.max_ms);
}

TEST_F(Timing, WorkJustRunNeedsNoWarmUp) {
  tuner::TimingOptions options;
  options.warmup = 0;
  options.budget_ms = 0;
  const tuner::Timing t = time(options);
  EXPECT_EQ(t.repetitions, options.min_repetitions);
  EXPECT_GT(t.min_ms, 0);
}

TEST_F(Timing, AClearlyBeatenContenderStopsAfterTheFirstLook) {
  tuner::TimingOptions options;
  options.budget_ms = 0;
  options.beaten_above_ms = 1e-6;  // a 64 MiB memset takes far longer than a nanosecond
  const tuner::Timing t = time(options);
  EXPECT_EQ(t.repetitions, options.beaten_repetitions);
  EXPECT_GT(t.median_ms, options.beaten_above_ms);
}

TEST_F(Timing, AContenderThatMayWinIsTimedInFull) {
  tuner::TimingOptions options;
  options.budget_ms = 0;
  options.beaten_above_ms = 1e6;  // a thousand seconds: never beaten
  const tuner::Timing t = time(options);
  EXPECT_EQ(t.repetitions, options.min_repetitions);
}

}  // namespace
}  // namespace gemmforge::testing
