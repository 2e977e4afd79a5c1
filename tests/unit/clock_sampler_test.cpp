// The SM clock sampler: the mean over a span of its samples, and a sampler that cannot sample saying why.
#include "cuda/clock_sampler.hpp"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace gemmforge::cuda {
namespace {

using std::chrono::milliseconds;

TEST(ClockSampler, TheMeanClockTakesOnlyTheSamplesWithinTheSpanItsEndsIncluded) {
  const SampleClock::time_point t0 = SampleClock::now();
  const std::vector<ClockSample> samples = {{t0, 1980},
                                            {t0 + milliseconds(10), 1800},
                                            {t0 + milliseconds(20), 1700},
                                            {t0 + milliseconds(30), 1200}};
  const std::optional<MeanClock> middle = mean_clock(samples, t0 + milliseconds(10), t0 + milliseconds(20));
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->samples, 2u);
  EXPECT_DOUBLE_EQ(middle->sm_mhz, 1750.0);
  const std::optional<MeanClock> all = mean_clock(samples, t0, t0 + milliseconds(30));
  ASSERT_TRUE(all);
  EXPECT_EQ(all->samples, 4u);
  EXPECT_DOUBLE_EQ(all->sm_mhz, (1980.0 + 1800 + 1700 + 1200) / 4);
  EXPECT_FALSE(mean_clock(samples, t0 + milliseconds(31), t0 + milliseconds(40)));
  EXPECT_FALSE(mean_clock({}, t0, t0 + milliseconds(40)));
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
