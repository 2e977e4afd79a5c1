// The mma.sync tensor-core templates against cuBLAS GemmEx on the same operands: hgemm_mma for BF16 and FP16
// operands with a C of their own type or FP32 (FP32 accumulation), tf32gemm_mma for TF32 (cuBLAS with
// CUBLAS_COMPUTE_32F_FAST_TF32). Their seeds and optional modes over the correctness matrix (edge shapes, M
// from 1 to 16, long K, every op(A)/op(B), both storage orders, beta = 0 over NaN and beta != 0, tight, odd
// and padded leading dimensions), and a random sample of their valid configs on edge shapes. Bound: relative
// Frobenius error at most verification_tolerance(): 1e-4 for summation order and the tensor cores'
// accumulation plus one rounding of a 16-bit C (2^-7 for BF16, 2^-10 for FP16), or 4e-3 for TF32's rounded
// inputs, beyond cuBLAS's own result, with no non-finite value and no write outside C.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <set>

#include "core/dtype.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "kernel_fixture.hpp"

namespace gemmforge::testing {
namespace {

// The config with copies narrowed to the problem's alignment, or realigned for an operand whose rows are not
// even 4-byte aligned (what the runtime's repair does) where the template realigns.
Config fit_copies(Config config, const KernelProblem& problem) {
  for (const auto& [vector, align, realign] : {std::tuple{"VEC_A", problem.align_a, "A_REALIGN"},
                                               std::tuple{"VEC_B", problem.align_b, "B_REALIGN"}}) {
    if (!config.find(realign)) {
      config.set(vector, std::min<int64_t>(config.at(vector), align));
    } else if (align < 2) {
      config.set(realign, 1);
    } else if (config.at(realign) == 0) {
      config.set(vector, std::min<int64_t>(config.at(vector), align));
    }
  }
  return config;
}

// The same with every narrowed operand realigned instead (templates that realign only).
Config realign_narrow(Config config, const KernelProblem& problem) {
  if (!config.find("A_REALIGN")) return config;
  if (problem.align_a < 8) config.set("A_REALIGN", 1), config.set("VEC_A", 8);
  if (problem.align_b < 8) config.set("B_REALIGN", 1), config.set("VEC_B", 8);
  return config;
}

// A template and the operand and C types it is checked on ("bf16>f32": BF16 operands, FP32 C).
struct MmaCase {
  const char* template_name;
  const char* type;
};

class MmaSyncTest : public KernelTest, public ::testing::WithParamInterface<MmaCase> {
 protected:
  static const KernelTemplate& tmpl() { return TemplateLibrary::instance().get(GetParam().template_name); }

  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    if (kernels().device().cc() < 80)
      GTEST_SKIP() << GetParam().template_name << " needs compute capability 8.0";
  }

  GemmCase typed(GemmCase c) const {
    parse_type_name(GetParam().type, c.dtype, c.c_dtype);
    // A TF32 product differs from cuBLAS's by up to 2 * 2^-10; where K is tiny and beta * C cancels most of
    // alpha * A * B, that difference is no longer small against the result. Such TF32 cases keep beta = 0.
    if (c.dtype == Dtype::kTf32 && c.k < 16) c.beta = 0.0f;
    return c;
  }
  double bound() const {
    const GemmCase c = typed(GemmCase{});
    return verification_tolerance(c.dtype, c.c_dtype);
  }

  // The config fitted to the case (narrow copies, else realigned ones), or nullopt where it cannot run it.
  std::optional<Config> runnable(const Config& config, const GemmCase& c) {
    const KernelProblem problem = GemmHarness::problem(c);
    for (const Config& fitted : {fit_copies(config, problem), realign_narrow(config, problem)}) {
      if (tmpl().manifest.violations(fitted, &kernels().device(), &problem).empty()) return fitted;
    }
    return std::nullopt;
  }

  // The seeds, and the first seed with each K-splitting mode: the parallel reduction through the
  // workspace, serial slices and stream-K (these two add into C in turn, so only for an FP32 C).
  static std::vector<Config> seeds_and_variants() {
    std::vector<Config> configs = tmpl().manifest.seeds();
    const std::vector<std::vector<std::pair<const char*, int64_t>>> variants = {
        {{"SPLIT_PAR", 1}, {"SPLIT_K", 3}}, {{"SPLIT_K", 2}}, {{"STREAM_K", 1}}};
    for (const auto& settings : variants) {
      Config variant = configs.front();
      for (const auto& [name, value] : settings) variant.set(name, value);
      configs.push_back(variant);
    }
    return configs;
  }

  std::string run_all(const std::vector<Config>& configs, const std::vector<GemmCase>& cases, int& checked) {
    const auto fitted = [&](const Config& config, const GemmCase& c) { return runnable(config, c); };
    return check_all(tmpl(), configs, cases, bound(), fitted, checked);
  }
};

TEST_P(MmaSyncTest, SeedsMatchCublasGemmExOverTheCorrectnessMatrix) {
  const std::vector<CaseShape> shapes = {{1, 1, 1},          {7, 9, 13},        {1, 4096, 4096},
                                         {16, 4096, 512},    {17, 33, 65},      {127, 129, 255},
                                         {1000, 1000, 1000}, {128, 128, 16384}, {4103, 4105, 4104}};
  std::vector<GemmCase> cases;
  for (const GemmCase& c : correctness_matrix(shapes, 3)) cases.push_back(typed(c));
  int checked = 0;
  const std::string failures = run_all(seeds_and_variants(), cases, checked);
  EXPECT_GE(checked, static_cast<int>(cases.size()) * 3) << "most cases must run most seeds";
  EXPECT_TRUE(failures.empty()) << failures;
}

TEST_P(MmaSyncTest, SampledConfigsMatchCublasGemmExOnEdgeShapes) {
  // The validity space (no pruning: narrow copies, realigned copies, split-K, stream-K, every raster) of an
  // aligned problem.
  GemmCase base = typed(GemmCase{});
  base.m = 256, base.n = 256, base.k = 512;
  const KernelProblem space_problem = GemmHarness::problem(base);
  const Space space = Space::build(tmpl(), kernels().device(), space_problem, {}, /*prune=*/false);
  ASSERT_GT(space.size(), 1000u);
  std::mt19937_64 rng(2025);
  std::vector<Config> sample;
  for (int i = 0; i < 48; ++i) sample.push_back(space.config(rng() % space.size()));

  std::vector<GemmCase> cases;
  int variant = 0;
  for (const CaseShape& s : std::vector<CaseShape>{{17, 33, 65}, {127, 129, 255}, {128, 264, 520}}) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        for (float beta : {0.0f, 0.5f}) {
          GemmCase c;
          c.order = (variant++ % 2 == 0) ? Order::kRowMajor : Order::kColMajor;
          c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k, c.beta = beta;
          c.pad = beta == 0 ? 0 : (variant % 4 == 1 ? 1 : 4);
          cases.push_back(typed(c));
        }
      }
    }
  }
  int checked = 0;
  const std::string failures = run_all(sample, cases, checked);
  EXPECT_GE(checked, 30 * 8) << "the sample must exercise at least 30 configs";
  EXPECT_TRUE(failures.empty()) << failures;
}

// Small enough to run under compute-sanitizer: every seed and K-splitting mode on edge shapes with odd
// leading dimensions, with beta != 0 and with beta = 0 over a NaN C.
TEST_P(MmaSyncTest, EdgeShapesForSanitizer) {
  std::vector<GemmCase> cases;
  for (const GemmCase& c : sanitizer_cases({{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {127, 129, 255}}))
    cases.push_back(typed(c));
  int checked = 0;
  const std::string failures = run_all(seeds_and_variants(), cases, checked);
  EXPECT_GT(checked, 0);
  EXPECT_TRUE(failures.empty()) << failures;
}

INSTANTIATE_TEST_SUITE_P(Types, MmaSyncTest,
                         ::testing::Values(MmaCase{"hgemm_mma", "bf16"}, MmaCase{"hgemm_mma", "f16"},
                                           MmaCase{"hgemm_mma", "bf16>f32"}, MmaCase{"hgemm_mma", "f16>f32"},
                                           MmaCase{"tf32gemm_mma", "tf32"}),
                         [](const ::testing::TestParamInfo<MmaCase>& info) {
                           // Named by type only, so the 16-bit instances keep their names.
                           return type_test_name(info.param.type);
                         });

}  // namespace
}  // namespace gemmforge::testing
