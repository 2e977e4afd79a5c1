// The 16-bit template for few rows of C without a GPU: every seed, fitted to each problem as the runtime fits
// a config, compiles with NVRTC for sm_80 and sm_90, for both 16-bit types, both kinds of C, every layout and
// leading dimensions aligned to 8, 4, 2 and 1 elements, and a sample of its space; seeds without spills. The
// SASS (where cuobjdump is installed) streams B into HMMA without ldmatrix: one HMMA per fragment and 16 of
// K in each batch the main loop holds (two with PREFETCH).
#include <gtest/gtest.h>

#include "core/config_repair.hpp"
#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& skinny() {
  return TemplateLibrary::instance().get("hgemm_skinny");
}

using test_support::count;
using test_support::typed_problem;

TEST(SkinnyTemplate, ServesSixteenBitProblemsAndIsTriedOnlyForFewRows) {
  const KernelProblem few = typed_problem(8, 4096, 4096, "nt", "bf16");
  EXPECT_TRUE(can_serve(skinny(), few, 80));
  EXPECT_TRUE(can_serve(skinny(), typed_problem(8, 4096, 4096, "nn", "f16>f32"), 90));
  EXPECT_FALSE(can_serve(skinny(), few, 75));
  EXPECT_FALSE(can_serve(skinny(), typed_problem(8, 4096, 4096, "nt", "f32"), 90));
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  EXPECT_FALSE(Space::build(skinny(), device, few).empty());
  EXPECT_TRUE(Space::build(skinny(), device, typed_problem(64, 4096, 4096, "nt", "bf16")).empty())
      << "pruned where B would stream once per 16 rows of many";
}

TEST(SkinnyTemplate, AnNContiguousBTakesWholeGroupsOfEightFragments) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  Config config = skinny().manifest.seeds().front();
  config.set("NF", 2);
  const KernelProblem nt = typed_problem(4, 4096, 4096, "nt", "bf16");
  const KernelProblem nn = typed_problem(4, 4096, 4096, "nn", "bf16");
  EXPECT_TRUE(skinny().manifest.violations(config, &device, &nt).empty());
  ASSERT_FALSE(skinny().manifest.violations(config, &device, &nn).empty());
  const std::optional<Config> repaired = repair_config(skinny(), config, device, nn);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_EQ(repaired->at("NF") % 8, 0);
}

TEST(SkinnyTemplate, SeedsAndASampleCompileForSm80AndSm90StreamingBIntoHmma) {
  test_support::KernelCases cases;
  for (const char* arch : {"sm_80", "sm_90"}) {
    ASSERT_NO_FATAL_FAILURE(cases.add_few_rows(
        skinny(), 16, {"nn", "nt", "tn", "tt"},
        {typed_problem(1, 14336, 4096, "nt", "bf16"), typed_problem(16, 4096, 4096, "nn", "f16")}, 11, arch));
  }
  ASSERT_GE(cases.size(), 60u);
  size_t sampled_spills = 0;
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& sass) {
        const std::string& what = cases[i].what;
        if (!test_support::expect_compiled(cases[i], r, sampled_spills) || sass.empty()) return;
        const KernelSpec& spec = cases[i].spec;
        // Two copies of a batch's products where one batch loads while the other multiplies.
        const int64_t per_batch = spec.config.at("NF") * spec.config.at("KU") * 2;
        const int64_t copies = spec.config.at("PREFETCH") != 0 ? 2 : 1;
        EXPECT_EQ(count(sass, "HMMA.16816.F32"), static_cast<size_t>(copies * per_batch)) << what;
        EXPECT_EQ(count(sass, "LDSM"), 0u) << what << ": no operand passes through shared memory";
        if (!cases[i].sampled) EXPECT_EQ(sass.find("STL"), std::string::npos) << what << ": no local memory";
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills);
}

}  // namespace
}  // namespace gemmforge::rtc
