// Base fixture of the GPU tests that launch generated kernels themselves, not through the runtime: one
// kernel cache and one harness for the process, and the check of a config on a case against cuBLAS.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "gpu_fixture.hpp"
#include "kernel_cache.hpp"
#include "rtc/kernel_spec.hpp"

namespace gemmforge::testing {

class KernelTest : public GpuTest {
 protected:
  static KernelCache& kernels() {
    static KernelCache cache;
    return cache;
  }
  static GemmHarness& harness() {
    static GemmHarness h;
    return h;
  }

  /// Runs `config` of `t` on case `c` (operands drawn from `seed`), refitted to each canonical call by
  /// fit(config, problem); empty when the result lies within `bound` of cuBLAS's, else what failed.
  template <typename Fit>
  static std::string check_config(const KernelTemplate& t, const Config& config, const GemmCase& c,
                                  uint64_t seed, double bound, Fit&& fit) {
    const CaseResult r = harness().run(
        c,
        [&](const GemmCall& call, cudaStream_t stream) {
          const KernelCall canonical = canonicalize(call);
          kernels().launch(t, fit(config, canonical.problem), canonical, stream);
        },
        seed);
    if (r.passes(bound)) return "";
    return fmt::format("{} on {}: {} (bound {:.3g})", config.key(), c.describe(), r.describe(), bound);
  }
  /// The same for a config already fitted to the case.
  static std::string check_config(const KernelTemplate& t, const Config& fitted, const GemmCase& c,
                                  uint64_t seed, double bound) {
    return check_config(t, fitted, c, seed, bound,
                        [](const Config& config, const KernelProblem&) { return config; });
  }

  /// Runs every config of `t` on every case it can run, fitted to the case by fit(config, case) (nullopt
  /// where it cannot run it), after compiling all the kernels in one parallel batch. `checked` counts the
  /// runs, `served` (if given) the cases some config could run. Returns what failed (at most 20 of them,
  /// a line each), empty when nothing did.
  template <typename Fit>
  static std::string check_all(const KernelTemplate& t, const std::vector<Config>& configs,
                               const std::vector<GemmCase>& cases, double bound, Fit&& fit, int& checked,
                               int* served = nullptr) {
    std::vector<rtc::KernelSpec> specs;
    for (const GemmCase& c : cases) {
      for (const Config& config : configs) {
        if (const std::optional<Config> fitted = fit(config, c))
          specs.push_back(rtc::make_spec(t, *fitted, GemmHarness::problem(c), kernels().device().arch()));
      }
    }
    kernels().prepare(specs);
    std::vector<std::string> failures;
    for (const GemmCase& c : cases) {
      bool any = false;
      for (const Config& config : configs) {
        const std::optional<Config> fitted = fit(config, c);
        if (!fitted) continue;
        any = true;
        ++checked;
        if (std::string f = check_config(t, *fitted, c, checked, bound); !f.empty() && failures.size() < 20)
          failures.push_back(std::move(f));
      }
      if (served != nullptr && any) ++*served;
    }
    return fmt::format("{}", fmt::join(failures, "\n"));
  }
};

}  // namespace gemmforge::testing
