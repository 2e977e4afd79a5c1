// The Hopper templates against cuBLAS on the same operands, for each type they serve: gemm_wgmma (operands
// staged through registers or cp.async) and gemm_tma (TMA, warp-specialized). FP32 at FP32 accuracy (three
// TF32 products; cuBLAS SGEMM), TF32 (cuBLAS with CUBLAS_COMPUTE_32F_FAST_TF32), and BF16 and FP16 with a C
// of their own type or FP32 (cuBLAS GemmEx with FP32 accumulation). The seeds and K-splitting modes over the
// correctness matrix (edge shapes, M from 1 to 16, long K, every op(A)/op(B), both storage orders, beta = 0
// over NaN and beta != 0, tight, odd and padded leading dimensions; for gemm_tma's TF32, which reads
// unaligned rows only from aligned copies, each leading dimension rounded up to 16 bytes but in the tests of
// odd alignments, while its FP32 reads split parts of any alignment), operands copied by TMA next to
// operands copied through registers or copied with aligned rows first, and a random sample of valid configs
// on edge shapes. Bound: relative Frobenius error at most verification_tolerance() of the type
// (1e-5 for FP32, 4e-3 for TF32, 1e-4 plus one rounding of a 16-bit C), no non-finite value and no write
// outside C. Needs an sm_90 GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/dtype.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "kernel_fixture.hpp"

namespace gemmforge::testing {
namespace {

struct HopperCase {
  const char* template_name;
  const char* type_name;
};

class HopperTest : public KernelTest, public ::testing::WithParamInterface<HopperCase> {
 protected:
  static const KernelTemplate& tmpl() { return TemplateLibrary::instance().get(GetParam().template_name); }
  // gemm_wgmma narrows its loads to the operands' alignment (VEC_A, VEC_B); gemm_tma copies a 16-bit operand
  // TMA cannot address through registers and reads FP32 ones as aligned parts, but TF32 operands by TMA only.
  static bool narrows_loads() { return tmpl().manifest.find_parameter("VEC_A") != nullptr; }
  static bool needs_aligned_rows() {
    Dtype dtype = Dtype::kF32, c_dtype = Dtype::kF32;
    parse_type_name(GetParam().type_name, dtype, c_dtype);
    return !narrows_loads() && dtype == Dtype::kTf32;
  }

  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    if (kernels().device().cc() != 90)
      GTEST_SKIP() << tmpl().manifest.name() << " is written for sm_90a (Hopper)";
  }

  // The case in the test's type; with `any_rows`, gemm_tma's TF32 keeps odd leading dimensions too, which
  // only its configs that copy the operands first (REALIGN) run.
  GemmCase typed(GemmCase c, bool any_rows = false) const {
    parse_type_name(GetParam().type_name, c.dtype, c.c_dtype);
    if (needs_aligned_rows() && !any_rows) c.ld_multiple = 16 / element_bytes(c.dtype);
    // A TF32 product differs from cuBLAS's by up to 2 * 2^-10; where K is tiny and beta * C cancels most of
    // alpha * A * B, that difference is no longer small against the result. Such TF32 cases keep beta = 0.
    if (c.dtype == Dtype::kTf32 && c.k < 16) c.beta = 0.0f;
    return c;
  }
  double bound() const {
    const GemmCase c = typed(GemmCase{});
    return verification_tolerance(c.dtype, c.c_dtype);
  }

  // The config with its loads narrowed to what the case's alignment allows (where it has such loads), or
  // nullopt where it cannot run.
  std::optional<Config> runnable(Config config, const GemmCase& c) {
    const KernelProblem problem = GemmHarness::problem(c);
    const int64_t chunk = 16 / element_bytes(problem.dtype);
    if (narrows_loads()) {
      config.set("VEC_A", std::min<int64_t>(problem.align_a, chunk));
      config.set("VEC_B", std::min<int64_t>(problem.align_b, chunk));
    }
    if (!tmpl().manifest.violations(config, &kernels().device(), &problem).empty()) return std::nullopt;
    return config;
  }

  // The seeds, and with each K-splitting mode the template has the first seed the type allows it on: the
  // parallel reduction through the workspace, serial slices and stream-K adding into C in turn (only for
  // an FP32 C; gemm_tma's also in persistent blocks that walk the whole tiles first), and gemm_tma's
  // stream-K through the workspace, in one block per whole tile and persistent. gemm_tma's FP32 seeds, for
  // one, come after its 16-bit ones. (gemm_tma's first two seeds copy the operands TMA cannot address first,
  // alone and in clusters; the others fill them through the producer's registers.) gemm_tma also stores C by
  // TMA (STAGE_C = 2) in persistent blocks, clusters, ping-pong teams, after a parallel reduction, next to
  // stream-K segments adding into C, which it stages, and as the last segment of a streamed tile; and it
  // copies first the operands whose rows are off 32-byte sectors (SECTOR_COPY: 16-bit 1000^3 without padding,
  // rows 2000 bytes apart). And it reads B, or A in clusters, with an evict-first L2 policy (L2_STREAM), and
  // holds a 16-bit C's slices past their first round into the next tile's main loop (HOLD_C), alone, in
  // clusters and beside stream-K segments; walks the tiles in a balanced wave of fewer blocks than SMs
  // (WAVE), alone and in clusters holding C's slices; and runs clusters along N that multicast A
  // (CLUSTER_N), alone, with A read evict-first and in a balanced wave holding C's slices.
  std::vector<Config> seeds_and_variants() {
    const Manifest& manifest = tmpl().manifest;
    std::vector<Config> configs = manifest.seeds();
    GemmCase probe;
    probe.m = 256, probe.n = 256, probe.k = 4096;
    probe.op_b = Op::kT;
    probe = typed(probe);
    const std::vector<std::vector<std::pair<const char*, int64_t>>> variants = {
        {{"SPLIT_PAR", 1}, {"SPLIT_K", 3}, {"PERSISTENT", 0}},
        {{"SPLIT_K", 2}, {"PERSISTENT", 0}},
        {{"STREAM_K", 1}, {"PERSISTENT", 0}},
        {{"STREAM_K", 1}, {"PERSISTENT", 1}},
        {{"STAGE_C", 2}},
        {{"STAGE_C", 2}, {"CLUSTER", 2}},
        {{"STAGE_C", 2}, {"PINGPONG", 1}},
        {{"STAGE_C", 2}, {"SPLIT_PAR", 1}, {"SPLIT_K", 3}, {"PERSISTENT", 0}},
        {{"STAGE_C", 2}, {"STREAM_K", 1}, {"PERSISTENT", 0}},
        {{"SPLIT_PAR", 1}, {"STREAM_K", 1}, {"PERSISTENT", 0}},
        {{"SPLIT_PAR", 1}, {"STREAM_K", 1}, {"PERSISTENT", 1}},
        {{"STAGE_C", 2}, {"SPLIT_PAR", 1}, {"STREAM_K", 2}, {"PERSISTENT", 1}},
        {{"SECTOR_COPY", 1}},
        {{"L2_STREAM", 1}},
        {{"L2_STREAM", 2}, {"CLUSTER", 2}},
        {{"STAGE_C", 2}, {"HOLD_C", 1}},
        {{"STAGE_C", 2}, {"HOLD_C", 1}, {"CLUSTER", 2}},
        {{"STAGE_C", 2}, {"HOLD_C", 1}, {"SPLIT_PAR", 1}, {"STREAM_K", 2}, {"PERSISTENT", 1}},
        {{"WAVE", 1}, {"PERSISTENT", 1}},
        {{"WAVE", 1}, {"PERSISTENT", 1}, {"STAGE_C", 2}, {"HOLD_C", 1}, {"CLUSTER", 2}},
        {{"CLUSTER", 2}, {"CLUSTER_N", 1}},
        {{"CLUSTER", 2}, {"CLUSTER_N", 1}, {"L2_STREAM", 2}},
        {{"WAVE", 1}, {"PERSISTENT", 1}, {"STAGE_C", 2}, {"HOLD_C", 1}, {"CLUSTER", 2}, {"CLUSTER_N", 1}}};
    for (const auto& settings : variants) {
      for (const Config& seed : manifest.seeds()) {
        Config variant = seed;
        bool applies = true;
        for (const auto& [name, value] : settings) {
          if (manifest.find_parameter(name) != nullptr) {
            variant.set(name, value);
          } else {
            applies = applies && value == 0;  // a mode the template lacks
          }
        }
        if (!applies) break;
        if (runnable(variant, probe)) {
          configs.push_back(variant);
          break;
        }
      }
    }
    return configs;
  }

  // Runs every config on every case it can run; `checked` counts the runs, `served` the cases that any
  // config could run (gemm_tma serves TF32 only with both operands K-contiguous).
  std::string run_all(const std::vector<Config>& configs, const std::vector<GemmCase>& cases, int& checked,
                      int& served) {
    const auto fitted = [&](const Config& config, const GemmCase& c) { return runnable(config, c); };
    return check_all(tmpl(), configs, cases, bound(), fitted, checked, &served);
  }

  // The sanitizer tests' cases of `shapes` (odd leading dimensions kept) in the test's type.
  std::vector<GemmCase> sanitizer_cases_typed(const std::vector<CaseShape>& shapes) const {
    std::vector<GemmCase> cases;
    for (const GemmCase& c : sanitizer_cases(shapes)) cases.push_back(typed(c, /*any_rows=*/true));
    return cases;
  }
  void expect_all_match(const std::vector<Config>& configs, const std::vector<GemmCase>& cases) {
    int checked = 0, served = 0;
    const std::string failures = run_all(configs, cases, checked, served);
    EXPECT_GT(checked, 0);
    EXPECT_TRUE(failures.empty()) << failures;
  }
};

TEST_P(HopperTest, SeedsMatchCublasOverTheCorrectnessMatrix) {
  const std::vector<CaseShape> shapes = {{1, 1, 1},          {7, 9, 13},        {1, 4096, 4096},
                                         {16, 4096, 512},    {17, 33, 65},      {127, 129, 255},
                                         {1000, 1000, 1000}, {128, 128, 16384}, {1031, 1029, 1027}};
  std::vector<GemmCase> cases;
  for (const GemmCase& c : correctness_matrix(shapes, 3)) cases.push_back(typed(c));
  int checked = 0, served = 0;
  const std::string failures = run_all(seeds_and_variants(), cases, checked, served);
  EXPECT_GE(served, static_cast<int>(cases.size()) / 4) << "the template must serve the type's layouts";
  EXPECT_GE(checked, served * 3) << "most cases must run most seeds";
  EXPECT_TRUE(failures.empty()) << failures;
}

TEST_P(HopperTest, SampledConfigsMatchCublasOnEdgeShapes) {
  GemmCase base;
  base.op_b = Op::kT;  // both operands K-contiguous: a layout every template serves for every type
  base.m = 256, base.n = 256, base.k = 512;
  base = typed(base);
  const Space space =
      Space::build(tmpl(), kernels().device(), GemmHarness::problem(base), {}, /*prune=*/false);
  ASSERT_GT(space.size(), 100u);
  std::mt19937_64 rng(2026);
  std::vector<Config> sample;
  for (int i = 0; i < 24; ++i) sample.push_back(space.config(rng() % space.size()));

  std::vector<GemmCase> cases;
  int variant = 0;
  int shape_index = 0;
  for (const CaseShape& s : std::vector<CaseShape>{{17, 33, 65}, {127, 129, 255}, {128, 264, 520}}) {
    // Every op(A)/op(B) in each order, over the shapes: TF32 on gemm_tma runs only those whose canonical
    // operands are both K-contiguous.
    const Order order = shape_index++ % 2 == 0 ? Order::kRowMajor : Order::kColMajor;
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        ++variant;
        GemmCase c;
        c.order = order;
        c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k;
        c.beta = variant % 2 ? 0.0f : 0.5f;
        c.pad = variant % 3;
        cases.push_back(typed(c));
      }
    }
  }
  int checked = 0, served = 0;
  const std::string failures = run_all(sample, cases, checked, served);
  ASSERT_GE(served, 2) << "the sample must run on cases of at least two shapes";
  EXPECT_GE(checked, 12 * served / 2) << "the sample must exercise at least 12 configs per case";
  EXPECT_TRUE(failures.empty()) << failures;
}

// Persistent blocks that walk several tiles each: the seeds' tile walks, their clusters and gemm_tma's
// ping-pong teams taking turns, on a problem with ragged tile rows and columns, with beta != 0 and with
// beta = 0 over a NaN C; and with C's rows 16-byte aligned, where gemm_tma may store C by TMA: N = 1032, and
// N = 1030 in rows of 1032 elements, whose last 16 bytes TMA must leave alone (the harness counts writes to
// the padding).
TEST_P(HopperTest, PersistentBlocksWalkingManyTilesMatchCublas) {
  struct Columns {
    int n;
    int pad;
    float beta;
  };
  std::vector<GemmCase> cases;
  for (Op op_a : {Op::kN, Op::kT}) {
    for (Op op_b : {Op::kN, Op::kT}) {
      for (const Columns& columns :
           {Columns{1030, 0, 0.5f}, Columns{1030, 0, 0.0f}, Columns{1032, 0, 0.0f}, Columns{1030, 2, 0.0f}}) {
        GemmCase c;
        c.op_a = op_a, c.op_b = op_b, c.m = 4100, c.n = columns.n, c.k = 256, c.beta = columns.beta;
        c.pad = columns.pad;
        cases.push_back(typed(c));
      }
    }
  }
  int checked = 0, served = 0;
  const std::string failures = run_all(seeds_and_variants(), cases, checked, served);
  EXPECT_GE(checked, served * 3) << "most cases must run most seeds";
  EXPECT_TRUE(failures.empty()) << failures;
}

// Odd M and N with K a multiple of 8: in each layout a different mix of operands whose rows TMA can address
// and operands gemm_tma copies through registers or copies first with aligned rows (nn: A by TMA, B not;
// tn: neither; nt: both by TMA; tt: A not, B by TMA), in tiles whole and ragged.
TEST_P(HopperTest, OperandsOfEveryAlignmentMatchCublas) {
  std::vector<GemmCase> cases;
  for (CaseShape s : std::vector<CaseShape>{{299, 301, 264}, {1025, 515, 1032}}) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        GemmCase c;
        c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k, c.beta = 0.5f;
        cases.push_back(typed(c, /*any_rows=*/true));
      }
    }
  }
  int checked = 0, served = 0;
  const std::string failures = run_all(seeds_and_variants(), cases, checked, served);
  EXPECT_GT(checked, 0);
  EXPECT_TRUE(failures.empty()) << failures;
}

// Small enough to run under compute-sanitizer (memcheck and racecheck): every seed and K-splitting mode on
// edge shapes with odd leading dimensions, with beta != 0 and with beta = 0 over a NaN C.
TEST_P(HopperTest, EdgeShapesForSanitizer) {
  expect_all_match(seeds_and_variants(),
                   sanitizer_cases_typed({{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {127, 129, 255}}));
}

// For racecheck, which runs far slower than memcheck: every seed and K-splitting mode on a ragged shape whose
// K spans more stages than any seed's ring holds (16 at 16 bits, 32 at 32), so that producers refill stages
// the consumers handed back and the barriers' phases turn, and on a small one of partial stages; with leading
// dimensions tight and one element longer, with beta != 0 and with beta = 0 over a NaN C.
TEST_P(HopperTest, RingShapesForRacecheck) {
  constexpr int64_t kLongK = 1000;
  const std::vector<GemmCase> cases = sanitizer_cases_typed({{17, 33, 65}, {127, 129, kLongK}});
  const std::vector<Config> configs = seeds_and_variants();
  const int64_t long_k_stages = (kLongK * element_bytes(cases.front().dtype) + 127) / 128;  // 128-byte K rows
  for (const Config& config : configs)
    ASSERT_LT(config.at("STAGES"), long_k_stages) << config.key() << ": K must turn its ring of stages";
  expect_all_match(configs, cases);
}

INSTANTIATE_TEST_SUITE_P(Types, HopperTest,
                         ::testing::Values(HopperCase{"gemm_wgmma", "f32"}, HopperCase{"gemm_wgmma", "tf32"},
                                           HopperCase{"gemm_wgmma", "bf16"}, HopperCase{"gemm_wgmma", "f16"},
                                           HopperCase{"gemm_wgmma", "bf16>f32"},
                                           HopperCase{"gemm_wgmma", "f16>f32"}, HopperCase{"gemm_tma", "f32"},
                                           HopperCase{"gemm_tma", "tf32"}, HopperCase{"gemm_tma", "bf16"},
                                           HopperCase{"gemm_tma", "f16"}, HopperCase{"gemm_tma", "bf16>f32"},
                                           HopperCase{"gemm_tma", "f16>f32"}),
                         [](const ::testing::TestParamInfo<HopperCase>& info) {
                           return std::string(info.param.template_name) + "_" +
                                  type_test_name(info.param.type_name);
                         });

}  // namespace
}  // namespace gemmforge::testing
