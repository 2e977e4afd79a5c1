// gemmforge.h is a C header: a C99 translation unit that includes it and calls every function compiles
// with warnings as errors and no CUDA header. Needs a C compiler on the machine, as any C user has.
#include <gtest/gtest.h>

#include <fstream>

#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

constexpr const char* kProgram = R"c(
#include <gemmforge/gemmforge.h>
#include <stddef.h>

int use_every_function(float* a, float* b, float* c) {
  gemmforgeHandle_t handle = NULL;
  const float alpha = 1.0f, beta = 0.0f;
  struct CUstream_st* stream = NULL;
  if (gemmforgeCreate(&handle) != GEMMFORGE_STATUS_SUCCESS &&
      gemmforgeCreateWithDatabase(&handle, ":memory:") != GEMMFORGE_STATUS_SUCCESS) {
    return (int)gemmforgeGetLastErrorMessage()[0];
  }
  gemmforgeSetStream(handle, stream);
  gemmforgeGetStream(handle, &stream);
  gemmforgeStatus_t status = gemmforgeSgemm(handle, GEMMFORGE_OP_N, GEMMFORGE_OP_T, 4, 4, 4, &alpha, a, 4, b, 4,
                                            &beta, c, 4);
  gemmforgeDestroy(handle);
  return gemmforgeGetStatusString(status)[0];
}
)c";

TEST(CapiHeader, CompilesAsC99) {
  if (run_command("command -v cc").status != 0) GTEST_SKIP() << "no C compiler (cc) on this machine";
  TempFolder folder;
  const std::string source = folder.file("use.c");
  std::ofstream(source) << kProgram;
  const CommandResult r =
      run_command("cc -std=c99 -pedantic -Wall -Wextra -Werror -c -I'" + std::string(GEMMFORGE_SOURCE_DIR) +
                  "/include' '" + source + "' -o '" + folder.file("use.o") + "'");
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace gemmforge::testing
