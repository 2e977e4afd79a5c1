// The TF32 mma.sync template without a GPU: it serves TF32 problems only, on sm_80 and newer; every seed
// compiles with NVRTC for sm_80 and sm_90 without spills, as does a sample of its space, over every layout
// and leading dimensions aligned to 4, 2 and 1 elements; the SASS runs on HMMA.1688 TF32 fed by shared loads,
// with no ldmatrix and no local memory (where cuobjdump is installed).
#include <gtest/gtest.h>

#include <array>
#include <random>

#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "rtc/kernel_spec.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& tf32_mma() {
  return TemplateLibrary::instance().get("tf32gemm_mma");
}

using test_support::count;
using test_support::typed_problem;

// Adds to `cases` the seeds (their copy widths narrowed to the problem) over layouts and alignments, and a
// random sample of a few problems' tuning spaces.
void add_cases(const std::string& arch, test_support::KernelCases& cases) {
  const DeviceInfo device = DeviceInfo::nominal(arch);
  const auto add = [&](Config config, const KernelProblem& problem, bool sampled = false) {
    config.set("VEC_A", std::min<int64_t>(config.at("VEC_A"), problem.align_a));
    config.set("VEC_B", std::min<int64_t>(config.at("VEC_B"), problem.align_b));
    return cases.add(tf32_mma(), config, problem, arch, device, sampled);
  };
  const std::array<const char*, 4> layouts = {"nn", "nt", "tn", "tt"};
  const std::vector<Config>& seeds = tf32_mma().manifest.seeds();
  for (size_t s = 0; s < seeds.size(); ++s) {
    for (const char* layout : layouts) add(seeds[s], typed_problem(1024, 1024, 1024, layout, "tf32"));
  }
  // Leading dimensions aligned to 2 and 1 elements: narrow cp.async and single stores of C.
  for (const char* layout : layouts) {
    add(seeds.front(), typed_problem(1022, 1022, 1022, layout, "tf32"));
    add(seeds.front(), typed_problem(1001, 1003, 1005, layout, "tf32"));
  }
  std::mt19937_64 rng(11);
  for (const KernelProblem& problem :
       {typed_problem(4096, 4096, 4096, "nt", "tf32"), typed_problem(16, 4096, 4096, "nn", "tf32"),
        typed_problem(4103, 4105, 4104, "tn", "tf32")}) {
    const Space space = Space::build(tf32_mma(), device, problem);
    EXPECT_FALSE(space.empty()) << problem.to_string();
    if (space.empty()) continue;
    for (int i = 0; i < 3; ++i) add(space.config(rng() % space.size()), problem, true);
  }
}

TEST(Tf32MmaTemplate, ServesTf32ProblemsOnlyOnSm80AndNewer) {
  const KernelProblem tf32 = typed_problem(64, 64, 64, "nn", "tf32");
  EXPECT_TRUE(can_serve(tf32_mma(), tf32, 80));
  EXPECT_TRUE(can_serve(tf32_mma(), tf32, 90));
  EXPECT_FALSE(can_serve(tf32_mma(), tf32, 75));
  // FP32 asks for FP32 accuracy, which one TF32 product does not give.
  EXPECT_FALSE(can_serve(tf32_mma(), typed_problem(64, 64, 64, "nn", "f32"), 90));
  EXPECT_FALSE(can_serve(tf32_mma(), typed_problem(64, 64, 64, "nn", "bf16"), 90));
  // On sm_80, where the Hopper templates do not run, a TF32 problem has this template.
  bool offered = false;
  for (const KernelTemplate* t : candidates(TemplateLibrary::instance(), tf32, 80))
    offered = offered || t->manifest.name() == "tf32gemm_mma";
  EXPECT_TRUE(offered);
}

TEST(Tf32MmaTemplate, CopiesNeverOutrunTheOperandsAlignmentAndSomeSeedsNarrowToAnyRows) {
  const DeviceInfo device = DeviceInfo::nominal("sm_80");
  const KernelProblem odd = typed_problem(1001, 1003, 1005, "nn", "tf32");
  size_t narrowed = 0;
  for (const Config& seed : tf32_mma().manifest.seeds()) {
    EXPECT_FALSE(tf32_mma().manifest.violations(seed, &device, &odd).empty())
        << seed.key() << ": 16-byte copies of odd rows";
    Config narrow = seed;
    narrow.set("VEC_A", 1);
    narrow.set("VEC_B", 1);
    narrowed += tf32_mma().manifest.violations(narrow, &device, &odd).empty() ? 1 : 0;
  }
  // 4-byte copies take more registers: the large tiles no longer fit, smaller ones do.
  EXPECT_GE(narrowed, 2u) << "seeds the runtime can narrow for a problem whose rows are not aligned";
}

TEST(Tf32MmaTemplate, SeedsAndASampleCompileForSm80AndSm90WithoutSpillsOnTf32Hmma) {
  test_support::KernelCases cases;
  for (const char* arch : {"sm_80", "sm_90"}) add_cases(arch, cases);
  ASSERT_GE(cases.size(), 40u);
  size_t sampled_spills = 0;
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& sass) {
        const std::string& what = cases[i].what;
        if (!test_support::expect_compiled(cases[i], r, sampled_spills) || sass.empty()) return;
        const KernelSpec& spec = cases[i].spec;
        const int64_t tiles =
            (spec.config.at("WM") / 16) * (spec.config.at("WN") / 8) * (spec.config.at("BK") / 8);
        // One mainloop: an HMMA per mma tile and k-step of a stage, fragments by plain shared loads.
        EXPECT_EQ(count(sass, "HMMA.1688.F32.TF32"), static_cast<size_t>(tiles)) << what;
        EXPECT_EQ(count(sass, "LDSM"), 0u) << what;
        EXPECT_GT(count(sass, "LDGSTS"), 0u) << what << ": cp.async copies";
        if (!cases[i].sampled) EXPECT_EQ(sass.find("STL"), std::string::npos) << what << ": no local memory";
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills);
}

}  // namespace
}  // namespace gemmforge::rtc
