// The SM clock sampler on a GPU: it samples the device it is given, at a clock the device can run.
#include "cuda/clock_sampler.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "cuda/device.hpp"
#include "gpu_fixture.hpp"

namespace gemmforge::testing {
namespace {

class ClockSamplerOnGpu : public GpuTest {};

TEST_F(ClockSamplerOnGpu, SamplesTheDevicesSmClockWithinWhatItCanRun) {
  const DeviceInfo device = cuda::query_device(0);
  const cuda::ClockSampler sampler(device.uuid);
  if (!sampler.sampling()) GTEST_SKIP() << "no clocks to sample: " << sampler.reason();
  const cuda::SampleClock::time_point start = cuda::SampleClock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::optional<cuda::MeanClock> clock = sampler.between(start, cuda::SampleClock::now());
  ASSERT_TRUE(clock) << "no sample within 50 ms";
  EXPECT_GE(clock->samples, 5u);
  EXPECT_GT(clock->sm_mhz, 0.0);
  // The device's maximum SM clock (clock_khz) bounds every reading.
  EXPECT_LE(clock->sm_mhz, device.clock_khz / 1000.0 + 1) << device.name;
}

}  // namespace
}  // namespace gemmforge::testing
