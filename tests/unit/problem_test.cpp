// KernelProblem's tight storage: the leading dimensions the tuner stores a problem with, whose pitches the
// manifests read (problem.pitch_a, pitch_b).
#include <gtest/gtest.h>

#include "core/problem.hpp"

namespace gemmforge {
namespace {

TEST(Problem, TightLeadingDimensionsRoundRowsUpToTheirAlignmentClassAndNoWider) {
  EXPECT_EQ(tight_leading_dimension(4096, 8, 8), 4096);
  EXPECT_EQ(tight_leading_dimension(4103, 8, 8), 4104);  // the widest class takes any multiple
  EXPECT_EQ(tight_leading_dimension(4105, 1, 8), 4105);
  EXPECT_EQ(tight_leading_dimension(4104, 1, 8), 4105);  // 4104 would be a multiple of 8: class 8, not 1
  EXPECT_EQ(tight_leading_dimension(1000, 2, 4), 1002);  // 1000 is a multiple of 4: class 4
  EXPECT_EQ(tight_leading_dimension(0, 4, 4), 4);        // an empty row still has one element's room

  KernelProblem p;
  p.dtype = p.c_dtype = Dtype::kBf16;
  p.m = 4103, p.n = 4105, p.k = 4104;
  p.align_a = 8, p.align_b = 1, p.align_c = 1;
  EXPECT_EQ(p.tight_lda(), 4104);  // A is m x k, K-contiguous
  EXPECT_EQ(p.tight_ldb(), 4105);  // B is k x n
  EXPECT_EQ(p.tight_ldc(), 4105);
  p.a_trans = true, p.b_trans = true, p.align_a = 1, p.align_b = 8;
  EXPECT_EQ(p.tight_lda(), 4103);  // A is k x m, M-contiguous
  EXPECT_EQ(p.tight_ldb(), 4104);  // B is n x k
  p.c_dtype = Dtype::kF32, p.align_c = 4;
  EXPECT_EQ(p.tight_ldc(), 4108);  // C's class counts in C's elements
}

}  // namespace
}  // namespace gemmforge
