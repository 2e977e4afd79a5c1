// The template compile tests' common walk: compile a batch of kernels with NVRTC, disassemble each cubin
// where cuobjdump is installed, and hand each result and its SASS to the test's own checks; and the SASS
// name of a warpgroup MMA.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "rtc/compile_pool.hpp"
#include "support/sass.hpp"
#include "support/temp_folder.hpp"

namespace gemmforge::test_support {

struct Disassembly {
  bool cuobjdump = false;  ///< cuobjdump was found
  size_t cubins = 0;       ///< cubins it read
};

/// Compiles `requests` on every hardware thread and calls check(i, result, sass) for each in order; `sass`
/// is empty where cuobjdump is missing or cannot read the cubin. Stops at the first fatal failure of a
/// check, as an ASSERT in the test's own loop would.
template <typename Check>
Disassembly compile_and_disassemble(const std::vector<rtc::CompileRequest>& requests, Check&& check) {
  const std::vector<rtc::CompileResult> results = rtc::compile_all(requests);
  EXPECT_EQ(results.size(), requests.size());
  const std::string cuobjdump = find_cuobjdump();
  const TempFolder folder;
  Disassembly disassembly{!cuobjdump.empty(), 0};
  for (size_t i = 0; i < results.size(); ++i) {
    std::string sass;
    if (disassembly.cuobjdump && results[i].ok) {
      sass = sass_of(cuobjdump, results[i].cubin, folder);
      if (sass.find("Function") == std::string::npos) sass.clear();
    }
    disassembly.cubins += sass.empty() ? 0 : 1;
    check(i, results[i], sass);
    if (::testing::Test::HasFatalFailure()) break;
  }
  return disassembly;
}

/// The SASS opcode of a wgmma m64n`n` with FP32 accumulators on operands of `dtype`
/// ("HGMMA.64x256x16.F32.BF16
/// "): TF32 operands, and FP32 ones split into TF32 products, take K steps of 8; the SASS names the operand
/// type after the accumulator's, but for FP16 (the default).
inline std::string hgmma_opcode(Dtype dtype, int64_t n) {
  const bool tf32 = dtype == Dtype::kF32 || dtype == Dtype::kTf32;
  const std::string operands = tf32 ? ".TF32" : dtype == Dtype::kBf16 ? ".BF16" : "";
  return fmt::format("HGMMA.64x{}x{}.F32{} ", n, tf32 ? 8 : 16, operands);
}

}  // namespace gemmforge::test_support
