// hgemm_skinny, the 16-bit template for few rows of C, against cuBLAS GemmEx with FP32 accumulation on the
// same operands: BF16 and FP16 operands with a C of their own type or FP32. Its seeds, fitted to each case
// the way the runtime fits a config (repair_config), over a correctness matrix of skinny and edge shapes
// (M from 1 to 33, K tails, long K, every op(A)/op(B), both storage orders, so that a column-major call
// reaches the kernel with M and N swapped; beta = 0 over NaN and beta != 0, tight, odd and padded leading
// dimensions), and a random sample of its valid configs on edge shapes. Bound: relative Frobenius error at
// most verification_tolerance() (1e-4 plus one rounding of a 16-bit C) beyond cuBLAS's own result, with no
// non-finite value and no write outside C.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "core/space.hpp"
#include "few_rows_fixture.hpp"
#include "gemm_harness.hpp"

namespace gemmforge::testing {
namespace {

class SkinnyTest : public FewRowsTest {
 protected:
  const char* template_name() const override { return "hgemm_skinny"; }
};

TEST_P(SkinnyTest, SeedsMatchCublasGemmExOverSkinnyAndEdgeShapes) {
  const std::vector<CaseShape> shapes = {{1, 1, 1},       {7, 9, 13},     {1, 4096, 4096},
                                         {16, 4096, 512}, {17, 33, 65},   {3, 1000, 1000},
                                         {8, 257, 4099},  {33, 130, 300}, {16, 96, 16384}};
  std::vector<GemmCase> cases;
  for (const GemmCase& c : correctness_matrix(shapes, 3)) cases.push_back(typed(c));
  int checked = 0;
  const std::string failures = run_all(tmpl().manifest.seeds(), cases, checked);
  EXPECT_EQ(checked, static_cast<int>(cases.size() * tmpl().manifest.seeds().size()))
      << "every seed fits every case";
  EXPECT_TRUE(failures.empty()) << failures;
}

TEST_P(SkinnyTest, SampledConfigsMatchCublasGemmExOnEdgeShapes) {
  // The validity space (no pruning) of a skinny problem, in both B layouts.
  std::vector<Config> sample;
  std::mt19937_64 rng(2026);
  for (Op op_b : {Op::kN, Op::kT}) {
    GemmCase base = typed(GemmCase{});
    base.m = 8, base.n = 512, base.k = 2048, base.op_b = op_b;
    const Space space =
        Space::build(tmpl(), kernels().device(), GemmHarness::problem(base), {}, /*prune=*/false);
    ASSERT_GT(space.size(), 100u);
    for (int i = 0; i < 16; ++i) sample.push_back(space.config(rng() % space.size()));
  }
  std::vector<GemmCase> cases;
  int variant = 0;
  for (const CaseShape& s : std::vector<CaseShape>{{5, 77, 1031}, {16, 264, 520}}) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        GemmCase c;
        c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k;
        c.beta = variant % 2 == 0 ? 0.0f : 0.5f;
        c.pad = variant++ % 3;
        cases.push_back(typed(c));
      }
    }
  }
  int checked = 0;
  const std::string failures = run_all(sample, cases, checked);
  EXPECT_GE(checked, 24 * 8) << "the sample must run on most cases";
  EXPECT_TRUE(failures.empty()) << failures;
}

// Small enough to run under compute-sanitizer: every seed on edge shapes with odd leading dimensions, with
// beta != 0 and with beta = 0 over a NaN C.
TEST_P(SkinnyTest, EdgeShapesForSanitizer) {
  std::vector<GemmCase> cases;
  for (const GemmCase& c : sanitizer_cases({{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {2, 129, 255}}))
    cases.push_back(typed(c));
  int checked = 0;
  const std::string failures = run_all(tmpl().manifest.seeds(), cases, checked);
  EXPECT_GT(checked, 0);
  EXPECT_TRUE(failures.empty()) << failures;
}

INSTANTIATE_TEST_SUITE_P(Types, SkinnyTest, ::testing::Values("bf16", "f16", "bf16>f32", "f16>f32"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return type_test_name(info.param);
                         });

}  // namespace
}  // namespace gemmforge::testing
