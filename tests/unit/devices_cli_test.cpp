// `gemmforge devices` starts on any machine: with no GPU or driver it says so, names what still works and
// exits cleanly; with one it lists the GPU's limits and versions.
#include <gtest/gtest.h>

#include "cuda/device.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

TEST(DevicesCli, ListsTheGpusOrSaysClearlyThatThereIsNone) {
  const CommandResult r = run_command(gemmforge_tool() + " devices");
  EXPECT_EQ(r.status, 0) << r.output;
  if (!cuda::unavailable_reason().empty()) {
    EXPECT_NE(r.output.find("No CUDA device"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(cuda::unavailable_reason()), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("--arch sm_90"), std::string::npos) << "says what works without a GPU:\n"
                                                                << r.output;
  } else {
    for (const char* field : {"compute capability", "SMs", "shared memory", "registers", "L2", "NVRTC"}) {
      EXPECT_NE(r.output.find(field), std::string::npos) << field << "\n" << r.output;
    }
  }
}

}  // namespace
}  // namespace gemmforge::testing
