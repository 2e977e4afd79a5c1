// Every template against cuBLAS: its seed configs over the full correctness matrix (shapes, op(A)/op(B),
// storage orders, beta = 0 over NaN and beta != 0, padded leading dimensions), and a random sample of
// its manifest's valid configs over edge shapes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "kernel_fixture.hpp"

namespace gemmforge::testing {
namespace {

constexpr double kBound = 1e-5;

// The seed narrowed to vector widths the problem's alignment allows (what the runtime's fallback does).
Config fit_vectors(Config config, const KernelProblem& problem) {
  if (auto v = config.find("VEC_A")) config.set("VEC_A", std::min<int64_t>(*v, problem.align_a));
  if (auto v = config.find("VEC_B")) config.set("VEC_B", std::min<int64_t>(*v, problem.align_b));
  return config;
}

class TemplateTest : public KernelTest, public ::testing::WithParamInterface<std::string> {
 protected:
  static const KernelTemplate& tmpl() { return TemplateLibrary::instance().get(GetParam()); }

  // Runs config (fitted to each call's alignment) on a case; returns an empty string or what failed.
  std::string check(const Config& config, const GemmCase& c, uint64_t seed) {
    return check_config(tmpl(), config, c, seed, kBound, fit_vectors);
  }

  // The seeds, plus the first seed with each optional mode switched on, so those paths run on every shape
  // of the matrix: copy modes matter exactly for the unaligned ones; stream-K has whole and streamed tiles
  // at 4096^3 and 4103 x 4105 x 4104; the parallel split-K reduction needs K slices.
  static std::vector<Config> seeds_and_variants() {
    const std::vector<std::vector<std::pair<const char*, int64_t>>> variants = {
        {{"A_REALIGN", 1}},
        {{"B_REALIGN", 1}},
        {{"XPOSE_A", 1}},
        {{"XPOSE_B", 1}},
        {{"B_DIRECT", 1}},
        {{"STREAM_K", 1}},
        {{"SPLIT_PAR", 1}, {"SPLIT_K", 3}}};
    std::vector<Config> configs = tmpl().manifest.seeds();
    for (const auto& settings : variants) {
      if (tmpl().manifest.find_parameter(settings.front().first) == nullptr) continue;
      for (const Config& seed : tmpl().manifest.seeds()) {
        if (seed.at(settings.front().first) != 0) continue;
        Config variant = seed;
        for (const auto& [name, value] : settings) variant.set(name, value);
        if (tmpl().manifest.violations(variant).empty()) {
          configs.push_back(variant);
          break;
        }
      }
    }
    return configs;
  }

  // Every spec the cases will need, compiled in one parallel batch.
  void precompile(const std::vector<Config>& configs, const std::vector<GemmCase>& cases) {
    std::vector<rtc::KernelSpec> specs;
    for (const GemmCase& c : cases) {
      const KernelProblem problem = GemmHarness::problem(c);
      for (const Config& config : configs) {
        const Config fitted = fit_vectors(config, problem);
        if (!tmpl().manifest.violations(fitted, &kernels().device(), &problem).empty()) continue;
        specs.push_back(rtc::make_spec(tmpl(), fitted, problem, kernels().device().arch()));
      }
    }
    kernels().prepare(specs);
  }
};

TEST_P(TemplateTest, SeedConfigsMatchCublasOverTheCorrectnessMatrix) {
  const std::vector<CaseShape> shapes = {{1, 1, 1},         {1, 4096, 4096},    {17, 33, 65},
                                         {127, 129, 255},   {1000, 1000, 1000}, {4103, 4105, 4104},
                                         {4096, 4096, 4096}};
  const std::vector<GemmCase> cases = correctness_matrix(shapes, 2);  // tight, then odd leading dimensions
  const std::vector<Config> seeds = seeds_and_variants();
  precompile(seeds, cases);
  std::vector<std::string> failures;
  int checked = 0;
  for (const GemmCase& c : cases) {
    const KernelProblem problem = GemmHarness::problem(c);
    for (const Config& seed : seeds) {
      if (!tmpl().manifest.violations(fit_vectors(seed, problem), &kernels().device(), &problem).empty()) {
        continue;
      }
      ++checked;
      if (std::string f = check(seed, c, checked); !f.empty() && failures.size() < 20) failures.push_back(f);
    }
  }
  EXPECT_GE(checked, static_cast<int>(cases.size()) * 2) << "most cases must run most seeds";
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

TEST_P(TemplateTest, SampledConfigsMatchCublasOnEdgeShapes) {
  // Sample the validity space (no pruning: narrow vectors, split-K, every raster) of an aligned problem.
  KernelProblem space_problem;
  space_problem.m = 256, space_problem.n = 256, space_problem.k = 512;
  const Space space = Space::build(tmpl(), kernels().device(), space_problem, {}, /*prune=*/false);
  ASSERT_GT(space.size(), 1000u);
  std::mt19937_64 rng(2024);
  std::vector<Config> sample;
  for (int i = 0; i < 64; ++i) sample.push_back(space.config(rng() % space.size()));

  const std::vector<CaseShape> shapes = {{17, 33, 65}, {127, 129, 255}, {128, 260, 264}};
  std::vector<GemmCase> cases;
  int variant = 0;
  for (const CaseShape& s : shapes) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        for (float beta : {0.0f, 0.5f}) {
          GemmCase c;
          c.order = (variant++ % 2 == 0) ? Order::kRowMajor : Order::kColMajor;
          c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k, c.beta = beta,
          c.pad = beta == 0 ? 0 : 4;
          cases.push_back(c);
        }
      }
    }
  }
  precompile(sample, cases);
  std::vector<std::string> failures;
  int checked = 0;
  std::set<int64_t> split_counts;
  int streamed = 0;
  for (const Config& config : sample) {
    for (const GemmCase& c : cases) {
      const KernelProblem problem = GemmHarness::problem(c);
      const Config fitted = fit_vectors(config, problem);
      if (!tmpl().manifest.violations(fitted, &kernels().device(), &problem).empty()) continue;
      const LaunchGeometry geometry = tmpl().manifest.geometry(fitted, problem, kernels().device());
      split_counts.insert(geometry.split_k);
      streamed += geometry.stream_blocks > 0;
      ++checked;
      if (std::string f = check(config, c, checked); !f.empty() && failures.size() < 20)
        failures.push_back(f);
    }
  }
  EXPECT_GE(checked, 50 * 8) << "the sample must exercise at least 50 configs";
  EXPECT_GT(split_counts.size(), 1u) << "the sample must include split-K launches";
  if (tmpl().manifest.find_parameter("STREAM_K") != nullptr) {
    EXPECT_GT(streamed, 8 * 8) << "the sample must include stream-K launches";
  }
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

// Small enough to run under compute-sanitizer: every seed and a split-K config on edge shapes.
TEST_P(TemplateTest, EdgeShapesForSanitizer) {
  std::vector<Config> configs = seeds_and_variants();
  Config split = configs.back();
  split.set("SPLIT_K", 2);
  configs.push_back(split);
  std::vector<GemmCase> cases;
  for (CaseShape s : std::vector<CaseShape>{{1, 1, 1}, {17, 33, 65}, {127, 129, 255}}) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        GemmCase c;
        c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k, c.beta = 0.25f, c.pad = 1;
        cases.push_back(c);
      }
    }
  }
  precompile(configs, cases);
  std::vector<std::string> failures;
  for (const Config& config : configs) {
    for (const GemmCase& c : cases) {
      const KernelProblem problem = GemmHarness::problem(c);
      if (!tmpl().manifest.violations(fit_vectors(config, problem), &kernels().device(), &problem).empty()) {
        continue;
      }
      if (std::string f = check(config, c, 7); !f.empty()) failures.push_back(f);
    }
  }
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

std::vector<std::string> template_names() {
  std::vector<std::string> names;
  // The FP32 templates; the mma.sync 16-bit and TF32 ones have their own test
  // (mma_sync_correctness_test.cpp).
  for (const KernelTemplate* t : TemplateLibrary::instance().all()) {
    if (t->manifest.serves(Dtype::kF32, Dtype::kF32)) names.push_back(t->manifest.name());
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(AllTemplates, TemplateTest, ::testing::ValuesIn(template_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace gemmforge::testing
