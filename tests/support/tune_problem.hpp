// The small problem that the tests of tuning at first use queue, tune and look for.
#pragma once

#include <cstdint>

#include "core/problem.hpp"

namespace gemmforge::test_support {

// An m x 64 x 32 problem; the tests tell problems apart by m, the layout and the alignments.
inline KernelProblem problem(int64_t m, bool a_trans = false, bool b_trans = false, int align_a = 4,
                             int align_b = 4, int align_c = 4) {
  KernelProblem p;
  p.m = m, p.n = 64, p.k = 32;
  p.a_trans = a_trans, p.b_trans = b_trans;
  p.align_a = align_a, p.align_b = align_b, p.align_c = align_c;
  return p;
}

}  // namespace gemmforge::test_support
