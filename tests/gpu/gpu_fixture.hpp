// Base fixture of the GPU tests: skips, saying why, where no CUDA device is usable.
#pragma once

#include <gtest/gtest.h>

#include "cuda/device.hpp"

namespace gemmforge::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cuda::unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << "no CUDA device: " << reason;
  }
};

}  // namespace gemmforge::testing
