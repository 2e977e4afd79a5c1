// Base fixture of the tests of the 16-bit templates for few rows of C (hgemm_skinny, hgemm_rows): the
// test's parameter names the types ("bf16", "f16>f32", ...), and configs run as the runtime would run them,
// fitted to each case's canonical problem (repair_config).
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/config_repair.hpp"
#include "core/dtype.hpp"
#include "core/template_library.hpp"
#include "gemm_harness.hpp"
#include "kernel_fixture.hpp"

namespace gemmforge::testing {

class FewRowsTest : public KernelTest, public ::testing::WithParamInterface<const char*> {
 protected:
  /// The template under test.
  virtual const char* template_name() const = 0;
  const KernelTemplate& tmpl() const { return TemplateLibrary::instance().get(template_name()); }

  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    if (kernels().device().cc() < 80) GTEST_SKIP() << template_name() << " needs compute capability 8.0";
  }

  GemmCase typed(GemmCase c) const {
    parse_type_name(GetParam(), c.dtype, c.c_dtype);
    return c;
  }
  double bound() const {
    const GemmCase c = typed(GemmCase{});
    return verification_tolerance(c.dtype, c.c_dtype);
  }

  /// Runs each config fitted to each case's canonical problem, where the template serves it; `served`
  /// (if given) counts the cases it serves.
  std::string run_all(const std::vector<Config>& configs, const std::vector<GemmCase>& cases, int& checked,
                      int* served = nullptr) {
    const auto fitted = [&](const Config& config, const GemmCase& c) {
      return repair_config(tmpl(), config, kernels().device(), GemmHarness::problem(c));
    };
    return check_all(tmpl(), configs, cases, bound(), fitted, checked, served);
  }
};

}  // namespace gemmforge::testing
