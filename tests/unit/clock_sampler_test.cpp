// The SM clock sampler: the mean over a span of its samples, a log that keeps bounded memory, and a sampler
// that cannot sample saying why.
#include "cuda/clock_sampler.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace gemmforge::cuda {
namespace {

using std::chrono::milliseconds;

TEST(ClockLog, TheMeanClockTakesOnlyTheSamplesWithinTheSpanItsEndsIncluded) {
  const SampleClock::time_point t0 = SampleClock::now();
  ClockLog log;
  EXPECT_FALSE(log.mean(t0, t0 + milliseconds(40)));
  for (const auto& [ms, mhz] : {std::pair{0, 1980u}, {10, 1800u}, {20, 1700u}, {30, 1200u}})
    log.add({t0 + milliseconds(ms), mhz});
  const std::optional<MeanClock> middle = log.mean(t0 + milliseconds(10), t0 + milliseconds(20));
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->samples, 2u);
  EXPECT_DOUBLE_EQ(middle->sm_mhz, 1750.0);
  const std::optional<MeanClock> all = log.mean(t0, t0 + milliseconds(30));
  ASSERT_TRUE(all);
  EXPECT_EQ(all->samples, 4u);
  EXPECT_DOUBLE_EQ(all->sm_mhz, (1980.0 + 1800 + 1700 + 1200) / 4);
  EXPECT_FALSE(log.mean(t0 + milliseconds(31), t0 + milliseconds(40)));
  EXPECT_FALSE(log.mean(t0 - milliseconds(10), t0 - milliseconds(1)));
}

// Full, the log forgets its older half and keeps the latest: a long benchmark's memory stays bounded.
TEST(ClockLog, FullItForgetsTheOlderHalfAndKeepsTheLatest) {
  const SampleClock::time_point t0 = SampleClock::now();
  ClockLog log(8);
  for (int i = 0; i < 20; ++i) log.add({t0 + milliseconds(i), static_cast<unsigned>(1000 + i)});
  EXPECT_LE(log.size(), 8u);
  EXPECT_GE(log.size(), 4u);
  // The last four are kept, whole; the first ones are gone.
  const std::optional<MeanClock> latest = log.mean(t0 + milliseconds(16), t0 + milliseconds(19));
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->samples, 4u);
  EXPECT_DOUBLE_EQ(latest->sm_mhz, 1017.5);
  EXPECT_FALSE(log.mean(t0, t0 + milliseconds(5)));
}

// Without NVML (no driver), or with a GPU it does not know, the sampler samples nothing and says why; a
// benchmark then shows no clocks rather than failing.
TEST(ClockSampler, WithoutNvmlOrTheGpuItSamplesNothingAndSaysWhy) {
  const ClockSampler sampler("GPU-00000000-0000-0000-0000-000000000000");
  EXPECT_FALSE(sampler.sampling());
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml == nullptr) {
    EXPECT_NE(sampler.reason().find("libnvidia-ml.so.1"), std::string::npos) << sampler.reason();
  } else {
    dlclose(nvml);
    EXPECT_NE(sampler.reason().find("NVML"), std::string::npos) << sampler.reason();
  }
  const SampleClock::time_point now = SampleClock::now();
  EXPECT_FALSE(sampler.between(now - milliseconds(100), now));
}

}  // namespace
}  // namespace gemmforge::cuda
