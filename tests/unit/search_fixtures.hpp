// Small search spaces and problems shared by the tuner's unit tests.
#pragma once

#include <string>
#include <vector>

#include "core/space.hpp"
#include "core/template_library.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner::testing {

inline KernelProblem problem(int64_t m, int64_t n, int64_t k, const std::string& layout = "nn",
                             int align = 4) {
  KernelProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  parse_layout(layout, p.a_trans, p.b_trans);
  p.align_a = p.align_b = p.align_c = align;
  return p;
}

inline Pins pins(const std::vector<std::string>& texts) {
  Pins out;
  for (const std::string& text : texts) add_pin(out, text);
  return out;
}

/// Templates with their pins, built into one search space on nominal sm_90 limits.
inline SearchSpace search_space(
    const KernelProblem& problem,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& templates) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  std::vector<Space> spaces;
  for (const auto& [name, pin_texts] : templates) {
    spaces.push_back(Space::build(TemplateLibrary::instance().get(name), device, problem, pins(pin_texts)));
  }
  return SearchSpace(std::move(spaces), device, problem);
}

/// A few hundred candidates of two templates for 4096^3.
inline SearchSpace small_space() {
  return search_space(
      problem(4096, 4096, 4096),
      {{"sgemm_simt", {"STAGES=3", "MIN_BLOCKS=1", "BK=16", "RASTER=8", "UNROLL_K=4", "TM=8"}},
       {"sgemm_tf32x3", {"MIN_BLOCKS=1", "RASTER=8", "BK=32", "STAGES=3"}}});
}

}  // namespace gemmforge::tuner::testing
