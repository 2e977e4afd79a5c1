// The Hopper template without a GPU: it serves every element type on sm_90 only and compiles for sm_90a
// whatever arch is asked; every seed compiles with NVRTC for each type, layout and alignment without
// serialized wgmmas, and a sample of the space compiles too; the SASS runs on HGMMA of the seed's shape, as
// many per stage as the type asks for, and copies 16-bit K-major aligned operands by cp.async (where
// cuobjdump is installed).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& wgmma() {
  return TemplateLibrary::instance().get("gemm_wgmma");
}

using test_support::typed_problem;

// The config with its loads as wide as the problem allows.
Config fitted(Config config, const KernelProblem& problem) {
  const int64_t chunk = 16 / element_bytes(problem.dtype);
  config.set("VEC_A", std::min<int64_t>(problem.align_a, chunk));
  config.set("VEC_B", std::min<int64_t>(problem.align_b, chunk));
  return config;
}

TEST(WgmmaTemplate, ServesEveryTypeOnHopperOnlyAndCompilesForSm90a) {
  for (const char* type : {"f32", "tf32", "bf16", "f16", "bf16>f32", "f16>f32"}) {
    const KernelProblem p = typed_problem(256, 256, 256, "nn", type);
    EXPECT_TRUE(can_serve(wgmma(), p, 90)) << type;
    EXPECT_NE(ineligibility(wgmma(), p, 80).find("compute capability 90 or newer"), std::string::npos)
        << type;
    EXPECT_NE(ineligibility(wgmma(), p, 100).find("written for sm_90a only"), std::string::npos) << type;
  }
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const KernelProblem p = typed_problem(256, 256, 256, "nn", "f32");
  const Config config = fitted(wgmma().manifest.seeds().front(), p);
  EXPECT_EQ(make_spec(wgmma(), config, p, "sm_90", &device).arch, "sm_90a");
  EXPECT_THROW(make_spec(wgmma(), config, p, "sm_80", &device), InvalidArgumentError);
  // And the search space of an sm_80 device has none of it.
  const std::vector<const KernelTemplate*> on_sm80 = candidates(TemplateLibrary::instance(), p, 80);
  EXPECT_EQ(std::find(on_sm80.begin(), on_sm80.end(), &wgmma()), on_sm80.end());
}

TEST(WgmmaTemplate, SeedsAndASampleCompileForSm90aOnUnserializedHgmma) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90a");
  test_support::KernelCases cases;
  const auto add = [&](const Config& config, const KernelProblem& problem, bool sampled) {
    cases.add(wgmma(), config, problem, "sm_90a", device, sampled);
  };
  const std::vector<Config>& seeds = wgmma().manifest.seeds();
  const std::vector<const char*> types = {"f32", "tf32", "bf16", "f16", "bf16>f32", "f16>f32"};
  const std::vector<const char*> layouts = {"nn", "nt", "tn", "tt"};
  for (size_t i = 0; i < types.size() * layouts.size(); ++i) {
    const char* type = types[i % types.size()];
    const char* layout = layouts[(i / types.size()) % layouts.size()];
    // Aligned and odd leading dimensions (element-wise loads, scalar stores of C).
    for (int64_t size : {1024, 1001}) {
      const KernelProblem problem = typed_problem(size, size, size, layout, type);
      add(fitted(seeds[i % seeds.size()], problem), problem, false);
    }
  }
  std::mt19937_64 rng(11);
  for (const KernelProblem& problem :
       {typed_problem(4096, 4096, 4096, "nn", "f32"), typed_problem(4103, 4105, 4104, "nt", "bf16")}) {
    const Space space = Space::build(wgmma(), device, problem);
    ASSERT_FALSE(space.empty()) << problem.to_string();
    for (int i = 0; i < 3; ++i) add(space.config(rng() % space.size()), problem, true);
  }
  ASSERT_GE(cases.size(), 40u);

  // Known defect: 19 of the seeds fitted to problems with rows of odd length (VEC_A = VEC_B = 1) spill 8 to
  // 132 bytes, which the manifest's register estimate does not foresee; the tuner skips them. Fixing the
  // estimate changes gemm_wgmma's manifest, which retires its shipped results until the next tune, so this
  // test asks only that every kernel compiles.
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& sass) {
        const std::string& what = cases[i].what;
        ASSERT_TRUE(r.ok) << what << ": " << r.error << "\n" << r.log;
        EXPECT_EQ(r.log.find("serialized"), std::string::npos) << what << ": wgmma serialized\n" << r.log;
        if (sass.empty()) return;
        const KernelSpec& spec = cases[i].spec;
        const bool split = spec.problem.dtype == Dtype::kF32;
        const std::string hgmma = test_support::hgmma_opcode(spec.problem.dtype, spec.config.at("WN"));
        // Four K steps per stage, each one product or three.
        EXPECT_EQ(test_support::count(sass, hgmma), split ? 12u : 4u) << what << " (" << hgmma << ")";
        // 16-bit rows along K, 16-byte aligned, go to shared memory by cp.async (LDGSTS); the rest through
        // registers (STS).
        const bool asynchronous = spec.problem.dtype != Dtype::kF32 && spec.problem.dtype != Dtype::kTf32 &&
                                  ((!spec.problem.a_trans && spec.config.at("VEC_A") == 8) ||
                                   (spec.problem.b_trans && spec.config.at("VEC_B") == 8));
        EXPECT_EQ(test_support::count(sass, "LDGSTS") > 0, asynchronous) << what;
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, /*sampled_spills=*/0);
}

}  // namespace
}  // namespace gemmforge::rtc
