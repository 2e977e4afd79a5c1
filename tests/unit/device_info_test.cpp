// Device facts known without a GPU: which names are one GPU model.
#include "core/device_info.hpp"

#include <gtest/gtest.h>

namespace gemmforge {
namespace {

TEST(DeviceInfo, AGpuModelIsItsWholeNameWithCaseIgnored) {
  EXPECT_TRUE(same_gpu_model("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(same_gpu_model("NVIDIA H100 80GB HBM3", "nvidia h100 80gb hbm3"));
  EXPECT_FALSE(same_gpu_model("NVIDIA H100 80GB HBM3", "NVIDIA H100"));  // a part is not the model
  EXPECT_FALSE(same_gpu_model("NVIDIA H100", "NVIDIA H100 80GB HBM3"));
  EXPECT_FALSE(same_gpu_model("NVIDIA H100 80GB HBM3", "NVIDIA H200"));
  EXPECT_FALSE(same_gpu_model("", "NVIDIA H200"));
}

}  // namespace
}  // namespace gemmforge
