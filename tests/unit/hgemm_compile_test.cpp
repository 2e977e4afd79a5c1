// The FP16/BF16 tensor-core template without a GPU: every seed compiles with NVRTC for sm_80, sm_90 and
// sm_90a, and a sample of its space for sm_80 and sm_90, for both 16-bit types, both kinds of C, every layout
// and unaligned leading dimensions; seeds without spills; the SASS runs on HMMA fed by LDSM (where cuobjdump
// is installed).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>

#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& hgemm() {
  return TemplateLibrary::instance().get("hgemm_mma");
}

using test_support::typed_problem;

// Adds to `cases` the seeds (their copy widths fitted to the problem) over types, layouts and alignments,
// and a random sample of each problem's tuning space (whose register estimate is only a guess).
void add_cases(const std::string& arch, bool seeds_only, test_support::KernelCases& cases) {
  const DeviceInfo device = DeviceInfo::nominal(arch);
  const auto add = [&](Config config, const KernelProblem& problem, bool sampled = false) {
    for (const auto& [vector, align, realign] : {std::tuple{"VEC_A", problem.align_a, "A_REALIGN"},
                                                 std::tuple{"VEC_B", problem.align_b, "B_REALIGN"}}) {
      if (align < 2) config.set(realign, 1);
      if (config.at(vector) > align && align >= 2) config.set(vector, align);
    }
    return cases.add(hgemm(), config, problem, arch, device, sampled);
  };
  const std::array<const char*, 4> layouts = {"nn", "nt", "tn", "tt"};
  const std::array<const char*, 4> types = {"bf16", "f16", "bf16>f32", "f16>f32"};
  const std::vector<Config>& seeds = hgemm().manifest.seeds();
  for (size_t s = 0; s < seeds.size(); ++s) {
    add(seeds[s], typed_problem(1024, 1024, 1024, layouts[s % 4], types[s % 4]));
  }
  if (seeds_only) return;
  // The first seed that fits, in every layout, and over odd leading dimensions (realigned copies, scalar
  // stores of C) and leading dimensions aligned to 4 and 2 elements (narrow cp.async).
  const auto add_first_fitting = [&](const KernelProblem& problem) {
    for (const Config& seed : seeds)
      if (add(seed, problem)) break;
  };
  for (const char* layout : layouts) {
    add_first_fitting(typed_problem(1024, 1024, 1024, layout, "bf16"));
    add_first_fitting(typed_problem(1001, 1003, 1005, layout, "f16>f32"));
  }
  add_first_fitting(typed_problem(1020, 1020, 1020, "nn", "bf16"));
  add_first_fitting(typed_problem(1022, 1022, 1022, "tt", "f16"));
  // A random sample of the tuning space of a few problems.
  std::mt19937_64 rng(7);
  for (const KernelProblem& problem :
       {typed_problem(4096, 4096, 4096, "nt", "bf16"), typed_problem(16, 4096, 4096, "nn", "f16"),
        typed_problem(4103, 4105, 4104, "nn", "bf16")}) {
    const Space space = Space::build(hgemm(), device, problem);
    EXPECT_FALSE(space.empty()) << problem.to_string();
    if (space.empty()) continue;
    for (int i = 0; i < 3; ++i) add(space.config(rng() % space.size()), problem, true);
  }
}

using test_support::count;

TEST(HalfTemplate, ServesSixteenBitOperandsWithSixteenBitOrFp32COnSm80AndNewer) {
  KernelProblem p = typed_problem(64, 64, 64, "nn", "bf16");
  EXPECT_TRUE(can_serve(hgemm(), p, 80));
  EXPECT_TRUE(can_serve(hgemm(), p, 90));
  EXPECT_FALSE(can_serve(hgemm(), p, 75));
  p.c_dtype = Dtype::kF32;
  EXPECT_TRUE(can_serve(hgemm(), p, 90));
  p.dtype = Dtype::kF32;
  EXPECT_NE(ineligibility(hgemm(), p, 90).find("hgemm_mma computes"), std::string::npos);
  // And the FP32 templates do not take 16-bit problems.
  const KernelProblem half = typed_problem(64, 64, 64, "nn", "f16");
  for (const KernelTemplate* t : candidates(TemplateLibrary::instance(), half, 90)) {
    EXPECT_TRUE(t->manifest.name() == "hgemm_mma" || t->manifest.name() == "hgemm_skinny" ||
                t->manifest.name() == "hgemm_rows" || t->manifest.name() == "gemm_wgmma" ||
                t->manifest.name() == "gemm_tma")
        << t->manifest.name();
  }
}

TEST(HalfTemplate, SixteenBitCSplitsKOnlyThroughTheWorkspace) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  Config config = hgemm().manifest.seeds().front();
  config.set("SPLIT_K", 4);
  const KernelProblem bf16 = typed_problem(128, 128, 8192, "nn", "bf16");
  const KernelProblem to_f32 = typed_problem(128, 128, 8192, "nn", "bf16>f32");
  EXPECT_FALSE(hgemm().manifest.violations(config, &device, &bf16).empty()) << "serial sums round in C";
  EXPECT_TRUE(hgemm().manifest.violations(config, &device, &to_f32).empty());
  config.set("SPLIT_PAR", 1);
  EXPECT_TRUE(hgemm().manifest.violations(config, &device, &bf16).empty());
}

TEST(HalfTemplate, SeedsAndASampleCompileForSm80Sm90AndSm90aWithoutSpillsOnHmmaAndLdsm) {
  test_support::KernelCases cases;
  // sm_90a (what a later wgmma family needs) compiles the seeds; sm_80 and sm_90 everything.
  for (const char* arch : {"sm_80", "sm_90", "sm_90a"}) add_cases(arch, std::string(arch) == "sm_90a", cases);
  ASSERT_GE(cases.size(), 30u);
  size_t sampled_spills = 0;
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& sass) {
        const std::string& what = cases[i].what;
        if (!test_support::expect_compiled(cases[i], r, sampled_spills) || sass.empty()) return;
        const KernelSpec& spec = cases[i].spec;
        const int64_t tiles =
            (spec.config.at("WM") / 16) * (spec.config.at("WN") / 8) * (spec.config.at("BK") / 16);
        // One mainloop: an HMMA per mma tile and k-step of a stage, each operand through ldmatrix.
        EXPECT_EQ(count(sass, "HMMA.16816.F32"), static_cast<size_t>(tiles)) << what;
        EXPECT_GT(count(sass, "LDSM.16.M"), 0u) << what;
        const bool a_trans = spec.problem.a_trans, b_trans = spec.problem.b_trans;
        EXPECT_EQ(count(sass, "LDSM.16.MT88") > 0, a_trans || !b_trans)
            << what << ": .trans exactly for rows not along k";
        if (!cases[i].sampled) EXPECT_EQ(sass.find("STL"), std::string::npos) << what << ": no local memory";
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills);
}

}  // namespace
}  // namespace gemmforge::rtc
