// The last level of the chain: seeds repaired to fit a problem, and a choice that is valid for every
// problem on every architecture the templates support.
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"
#include "core/config_repair.hpp"
#include "runtime/heuristic.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

const KernelTemplate& simt() {
  return TemplateLibrary::instance().get("sgemm_simt");
}

TEST(RuntimeRepair, AValidConfigIsKept) {
  const DeviceInfo h100 = DeviceInfo::nominal("sm_90");
  EXPECT_EQ(repair_config(simt(), seed(0), h100, problem(4096, 4096, 4096)), seed(0));
}

TEST(RuntimeRepair, VectorWidthsShrinkToTheAlignmentAndNothingElseMoves) {
  const DeviceInfo h100 = DeviceInfo::nominal("sm_90");
  const std::optional<Config> fixed =
      repair_config(simt(), seed(0), h100, problem(17, 33, 65, "nn", 1, 2, 1));
  ASSERT_TRUE(fixed);
  EXPECT_EQ(*fixed, seed(0, {{"VEC_A", 1}, {"VEC_B", 2}}));
}

TEST(RuntimeRepair, SplitKShrinksToTheSlicesTheDepthHolds) {
  // BK = 8 and k = 16: two slices at most.
  const DeviceInfo h100 = DeviceInfo::nominal("sm_90");
  const std::optional<Config> fixed =
      repair_config(simt(), seed(0, {{"SPLIT_K", 16}}), h100, problem(128, 128, 16));
  ASSERT_TRUE(fixed);
  EXPECT_EQ(*fixed, seed(0, {{"SPLIT_K", 2}}));
}

TEST(RuntimeRepair, ATileTooLargeForTheDeviceShrinksUntilItFits) {
  DeviceInfo small = DeviceInfo::nominal("sm_86");
  small.smem_per_block_optin = 16 * 1024;
  small.smem_per_sm = 20 * 1024;
  const Config big = seed(0, {{"STAGES", 4}, {"BK", 32}, {"UNROLL_K", 8}});
  const KernelProblem p = problem(4096, 4096, 4096);
  ASSERT_FALSE(simt().manifest.violations(big, &small, &p).empty());
  const std::optional<Config> fixed = repair_config(simt(), big, small, p);
  ASSERT_TRUE(fixed);
  EXPECT_TRUE(simt().manifest.violations(*fixed, &small, &p).empty()) << fixed->key();
}

TEST(RuntimeHeuristic, ValidForEveryProblemOnEverySupportedArchitecture) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> size(1, 5000);
  std::uniform_int_distribution<int> pick(0, 2);
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90"}) {
    const DeviceInfo device = DeviceInfo::nominal(arch);
    for (int i = 0; i < 60; ++i) {
      const char* layouts[] = {"nn", "nt", "tn", "tt"};
      const int aligns[] = {1, 2, 4};
      const KernelProblem p =
          problem(size(rng) % (i % 3 == 0 ? 40 : 5000) + 1, size(rng), size(rng) % (i % 2 ? 9 : 5000) + 1,
                  layouts[i % 4], aligns[pick(rng)], aligns[pick(rng)], aligns[pick(rng)]);
      const runtime::Selection s = runtime::heuristic_selection(library, device, p);
      EXPECT_EQ(s.level, PlanLevel::kHeuristic);
      EXPECT_NO_THROW(rtc::make_spec(*s.choice.kernel_template, s.choice.config, p, arch, &device))
          << s.choice.config.key() << " for " << p.to_string() << " on " << arch;
    }
  }
}

TEST(RuntimeHeuristic, LargeProblemsFillTheDeviceAndTinyOnesTakeASmallBlock) {
  const DeviceInfo h100 = DeviceInfo::nominal("sm_90");
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelProblem large = problem(4096, 4096, 4096);
  const runtime::Selection big = runtime::heuristic_selection(library, h100, large);
  EXPECT_GE(big.choice.kernel_template->manifest.geometry(big.choice.config, large, h100).tiles,
            h100.sm_count);

  const KernelProblem tiny = problem(1, 1, 1, "nn", 1, 1, 1);
  const runtime::Selection small = runtime::heuristic_selection(library, h100, tiny);
  const int64_t threads =
      small.choice.kernel_template->manifest.geometry(small.choice.config, tiny, h100).threads;
  for (const KernelTemplate* t : library.all()) {
    for (const Config& s : t->manifest.seeds()) {
      EXPECT_LE(threads, t->manifest.geometry(s, tiny, h100).threads)
          << "a smaller block exists: " << s.key();
    }
  }
}

TEST(RuntimeHeuristic, NoTemplateForTheDtypeOrTheArchitectureIsAClearError) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  DeviceInfo volta = DeviceInfo::nominal("sm_80");
  volta.name = "Tesla V100";
  volta.cc_major = 7, volta.cc_minor = 0;
  try {
    runtime::heuristic_selection(library, volta, problem(64, 64, 64));
    FAIL() << "Volta has no template";
  } catch (const ArchMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("Tesla V100"), std::string::npos) << e.what();
  }
  KernelProblem bf16 = problem(64, 64, 64);
  bf16.dtype = Dtype::kBf16;
  EXPECT_THROW(runtime::heuristic_selection(library, DeviceInfo::nominal("sm_90"), bf16), NotFoundError);
}

}  // namespace
}  // namespace gemmforge::testing
