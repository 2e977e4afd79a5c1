// The template compile tests' common pieces: the kernels a test compiles, one per cubin; the walk that
// compiles them with NVRTC, disassembles each cubin where cuobjdump is installed and hands each result and
// its SASS to the test's own checks; and the SASS name of a warpgroup MMA.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/config_repair.hpp"
#include "core/dtype.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "support/sass.hpp"
#include "support/temp_folder.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::test_support {

/// A kernel a compile test compiles: what it is (arch, problem, config), its spec, and whether the config was
/// drawn from the tuning space rather than stated by the test (a seed, or a config fitted to the problem).
struct KernelCase {
  std::string what;
  rtc::KernelSpec spec;
  bool sampled = false;
};

/// A compile test's kernels, one per cubin.
class KernelCases {
 public:
  /// Adds `config` of `t` on `problem` for `arch` unless it breaks one of the manifest's constraints on
  /// `device` or compiles to a cubin already added; true when added.
  bool add(const KernelTemplate& t, const Config& config, const KernelProblem& problem,
           const std::string& arch, const DeviceInfo& device, bool sampled = false) {
    if (!t.manifest.violations(config, &device, &problem).empty()) return false;
    rtc::KernelSpec spec = rtc::make_spec(t, config, problem, arch, &device);
    if (!keys_.insert(spec.cubin_key(TemplateLibrary::instance())).second) return false;
    cases_.push_back(
        {fmt::format("{} {} {}", arch, problem.to_string(), config.key()), std::move(spec), sampled});
    return true;
  }
  /// Adds `config` fitted to `problem` the way the runtime fits a config (repair_config), as add() does;
  /// false where no config of the template fits the problem.
  bool add_fitted(const KernelTemplate& t, const Config& config, const KernelProblem& problem,
                  const std::string& arch, const DeviceInfo& device) {
    const std::optional<Config> fitted = repair_config(t, config, device, problem);
    if (!fitted) return false;
    add(t, *fitted, problem, arch, device);
    return true;
  }
  /// The cases of a template for few rows of C on `arch`: each seed on an `m` x 4096 x 4096 problem in
  /// each of `layouts`, the four 16-bit types in turn; the first seed on leading dimensions aligned to 4, 2
  /// and 1 elements (narrower loads, single stores of C); three configs drawn from the space of each of
  /// `sampled` (a generator seeded with `rng_seed`). A fatal failure where a seed fits none of its
  /// problems or a sampled space is empty.
  void add_few_rows(const KernelTemplate& t, int64_t m, const std::vector<const char*>& layouts,
                    const std::vector<KernelProblem>& sampled, uint64_t rng_seed, const std::string& arch) {
    const DeviceInfo device = DeviceInfo::nominal(arch);
    const std::array<const char*, 4> types = {"bf16", "f16", "bf16>f32", "f16>f32"};
    const auto add_seed = [&](const Config& config, const KernelProblem& problem) {
      ASSERT_TRUE(add_fitted(t, config, problem, arch, device)) << problem.to_string() << " " << config.key();
    };
    const std::vector<Config>& seeds = t.manifest.seeds();
    for (size_t s = 0; s < seeds.size(); ++s) {
      for (size_t l = 0; l < layouts.size(); ++l)
        ASSERT_NO_FATAL_FAILURE(
            add_seed(seeds[s], typed_problem(m, 4096, 4096, layouts[l], types[(s + l) % 4])));
    }
    for (const auto& [rows, n, k] :
         {std::array<int64_t, 3>{3, 1020, 1020}, {5, 1022, 1022}, {1, 1001, 1003}}) {
      for (const char* layout : layouts)
        ASSERT_NO_FATAL_FAILURE(add_seed(seeds.front(), typed_problem(rows, n, k, layout, "bf16")));
    }
    std::mt19937_64 rng(rng_seed);
    for (const KernelProblem& problem : sampled) {
      const Space space = Space::build(t, device, problem);
      ASSERT_FALSE(space.empty()) << problem.to_string();
      for (int i = 0; i < 3; ++i) add(t, space.config(rng() % space.size()), problem, arch, device, true);
    }
  }

  size_t size() const { return cases_.size(); }
  const KernelCase& operator[](size_t i) const { return cases_[i]; }
  /// The compile requests of the cases, in order.
  std::vector<rtc::CompileRequest> requests() const {
    std::vector<rtc::CompileRequest> out;
    for (const KernelCase& c : cases_) out.push_back(c.spec.request(TemplateLibrary::instance()));
    return out;
  }

 private:
  std::vector<KernelCase> cases_;
  std::set<std::string> keys_;
};

struct Disassembly {
  bool cuobjdump = false;  ///< cuobjdump was found
  size_t cubins = 0;       ///< cubins it read
};

/// What every template compile test asks of each kernel: it compiled within 255 registers, and a config the
/// test stated (a seed, or one fitted to its problem) does not spill. A sampled config may spill (the tuner
/// records it and moves on); `sampled_spills` counts those. False where it did not compile.
inline bool expect_compiled(const KernelCase& c, const rtc::CompileResult& r, size_t& sampled_spills) {
  EXPECT_TRUE(r.ok) << c.what << ": " << r.error << "\n" << r.log;
  if (!r.ok) return false;
  EXPECT_LE(r.usage.registers, 255) << c.what;
  if (c.sampled) {
    sampled_spills += r.usage.spills() ? 1 : 0;
  } else {
    EXPECT_FALSE(r.usage.spills()) << c.what << "\n" << r.log;
  }
  return true;
}

/// After the walk: most sampled configs kept from spilling by the register estimate, and, where cuobjdump
/// was found, every cubin read. False where it was not: the caller skips, saying so.
inline bool expect_walk_complete(const KernelCases& cases, const Disassembly& disassembly,
                                 size_t sampled_spills) {
  EXPECT_LE(sampled_spills * 4, cases.size())
      << "the register estimate keeps most sampled configs from spilling";
  if (!disassembly.cuobjdump) return false;
  EXPECT_EQ(disassembly.cubins, cases.size()) << "cuobjdump read every cubin";
  return true;
}

/// A compile test's last step: expect_walk_complete, and where cuobjdump was not found the test skips,
/// saying how many kernels compiled with their SASS unchecked. (A macro: only the test's own body can
/// skip it.)
#define GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills)              \
  do {                                                                                          \
    if (!::gemmforge::test_support::expect_walk_complete(cases, disassembly, sampled_spills)) { \
      GTEST_SKIP() << "compiled " << (cases).size()                                             \
                   << " kernels; no cuobjdump on the PATH, so their SASS went unchecked";       \
    }                                                                                           \
  } while (false)

/// Compiles `requests` on every hardware thread and calls check(i, result, sass) for each in order; `sass`
/// is empty where cuobjdump is missing or cannot read the cubin. Stops at the first fatal failure of a
/// check, as an ASSERT in the test's own loop would.
template <typename Check>
Disassembly compile_and_disassemble(const std::vector<rtc::CompileRequest>& requests, Check&& check) {
  const std::vector<rtc::CompileResult> results = rtc::compile_all(requests);
  EXPECT_EQ(results.size(), requests.size());
  const std::string cuobjdump = find_cuobjdump();
  const TempFolder folder;
  Disassembly disassembly{!cuobjdump.empty(), 0};
  for (size_t i = 0; i < results.size(); ++i) {
    std::string sass;
    if (disassembly.cuobjdump && results[i].ok) {
      sass = sass_of(cuobjdump, results[i].cubin, folder);
      if (sass.find("Function") == std::string::npos) sass.clear();
    }
    disassembly.cubins += sass.empty() ? 0 : 1;
    check(i, results[i], sass);
    if (::testing::Test::HasFatalFailure()) break;
  }
  return disassembly;
}

/// The SASS opcode of a wgmma m64n`n` with FP32 accumulators on operands of `dtype`
/// ("HGMMA.64x256x16.F32.BF16
/// "): TF32 operands, and FP32 ones split into TF32 products, take K steps of 8; the SASS names the operand
/// type after the accumulator's, but for FP16 (the default).
inline std::string hgmma_opcode(Dtype dtype, int64_t n) {
  const bool tf32 = dtype == Dtype::kF32 || dtype == Dtype::kTf32;
  const std::string operands = tf32 ? ".TF32" : dtype == Dtype::kBf16 ? ".BF16" : "";
  return fmt::format("HGMMA.64x{}x{}.F32{} ", n, tf32 ? 8 : 16, operands);
}

}  // namespace gemmforge::test_support
