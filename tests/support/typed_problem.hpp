// A problem of any element type, as the template compile tests state one: row-major, each operand aligned
// to the widest vector (16 bytes at most) its contiguous extent allows.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.hpp"
#include "core/problem.hpp"

namespace gemmforge::test_support {

// `layout` as "nt", `type` as "bf16>f32".
inline KernelProblem typed_problem(int64_t m, int64_t n, int64_t k, const std::string& layout,
                                   const std::string& type) {
  KernelProblem p;
  p.m = m, p.n = n, p.k = k;
  parse_layout(layout, p.a_trans, p.b_trans);
  parse_type_name(type, p.dtype, p.c_dtype);
  const auto align = [](int64_t contiguous, Dtype dtype) {
    int width = 16 / element_bytes(dtype);
    while (width > 1 && contiguous % width != 0) width /= 2;
    return width;
  };
  p.align_a = align(p.a_trans ? m : k, p.dtype);
  p.align_b = align(p.b_trans ? k : n, p.dtype);
  p.align_c = align(n, p.c_dtype);
  return p;
}

}  // namespace gemmforge::test_support
