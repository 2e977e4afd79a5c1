// Base fixture of the GPU tests that launch generated kernels themselves, not through the runtime: one
// kernel cache and one harness for the process, and the check of a config on a case against cuBLAS.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "gpu_fixture.hpp"
#include "kernel_cache.hpp"

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
};

}  // namespace gemmforge::testing
