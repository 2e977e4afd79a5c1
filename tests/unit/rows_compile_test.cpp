// The 16-bit template for few rows of C with an n-contiguous B, without a GPU: which problems it serves and
// keeps, and every seed, fitted to each problem as the runtime fits a config, compiled with NVRTC for sm_80
// and sm_90 for both 16-bit types, both kinds of C, both layouts of A and leading dimensions aligned to 8,
// 4, 2 and 1 elements, and a sample of its space; seeds without spills. The SASS (where cuobjdump is
// installed) multiplies in FFMA, with no tensor-core instruction and no local memory.
#include <gtest/gtest.h>

#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& rows() {
  return TemplateLibrary::instance().get("hgemm_rows");
}

using test_support::count;
using test_support::typed_problem;

TEST(RowsTemplate, ServesSixteenBitProblemsWithAnNContiguousBAndIsTriedOnlyForFewRows) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const KernelProblem nn = typed_problem(4, 4096, 4096, "nn", "bf16");
  EXPECT_TRUE(can_serve(rows(), nn, 80));
  EXPECT_TRUE(can_serve(rows(), typed_problem(1, 4096, 4096, "tn", "f16>f32"), 90));
  EXPECT_FALSE(can_serve(rows(), nn, 75));
  EXPECT_FALSE(can_serve(rows(), typed_problem(4, 4096, 4096, "nn", "f32"), 90));
  EXPECT_FALSE(Space::build(rows(), device, nn).empty());
  EXPECT_TRUE(Space::build(rows(), device, typed_problem(4, 4096, 4096, "nt", "bf16")).empty())
      << "a k-contiguous B is hgemm_skinny's";
  EXPECT_TRUE(Space::build(rows(), device, typed_problem(64, 4096, 4096, "nn", "bf16")).empty())
      << "pruned where B would stream once per few rows of many";
  // No block holds more rows than twice the problem's.
  const Space one_row = Space::build(rows(), device, typed_problem(1, 4096, 4096, "nn", "bf16"));
  for (size_t c = 0; c < one_row.size(); ++c) EXPECT_EQ(one_row.config(c).at("MR"), 1);
}

TEST(RowsTemplate, SeedsAndASampleCompileForSm80AndSm90MultiplyingInFfma) {
  test_support::KernelCases cases;
  for (const char* arch : {"sm_80", "sm_90"}) {
    ASSERT_NO_FATAL_FAILURE(cases.add_few_rows(
        rows(), 8, {"nn", "tn"},
        {typed_problem(1, 4096, 4096, "nn", "bf16"), typed_problem(16, 4096, 4096, "nn", "f16")}, 13, arch));
  }
  ASSERT_GE(cases.size(), 36u);
  size_t sampled_spills = 0;
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& sass) {
        const std::string& what = cases[i].what;
        if (!test_support::expect_compiled(cases[i], r, sampled_spills) || sass.empty()) return;
        EXPECT_GT(count(sass, "FFMA"), 0u) << what;
        EXPECT_EQ(count(sass, "HMMA"), 0u) << what << ": no tensor-core instruction";
        if (!cases[i].sampled) EXPECT_EQ(sass.find("STL"), std::string::npos) << what << ": no local memory";
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills);
}

}  // namespace
}  // namespace gemmforge::rtc
