// GEMM problems: a user's call in any storage order, and the one canonical form the kernels implement.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

#include "gemmforge/types.hpp"

namespace gemmforge {

/// The problem as every kernel sees it: row-major C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C.
/// a_trans == false: element (i, p) of op(A) lives at A[i * lda + p] (k is contiguous);
/// a_trans == true:  it lives at A[p * lda + i] (m is contiguous).
/// b_trans == false: element (p, j) of op(B) lives at B[p * ldb + j] (n is contiguous);
/// b_trans == true:  it lives at B[j * ldb + p] (k is contiguous).
/// A column-major call is the row-major problem of C^T, so both orders share one tuning result.
struct KernelProblem {
  Dtype dtype = Dtype::kF32;
  bool a_trans = false;
  bool b_trans = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  /// Widest vector, in elements (1, 2 or 4), that each operand's pointer and leading dimension allow.
  int align_a = 4;
  int align_b = 4;
  int align_c = 4;

  /// "nn", "nt", "tn" or "tt" for (a_trans, b_trans).
  std::string layout() const;
  /// "4096x4096x4096".
  std::string shape() const;
  /// "f32 nn 4096x4096x4096 align 4/4/4".
  std::string to_string() const;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }

  auto operator<=>(const KernelProblem&) const = default;
};

/// Largest m, n or k gemmforge accepts anywhere: kernels index rows and columns with 32-bit integers.
inline constexpr int64_t kMaxDimension = 2147483647;

/// The one size check of every entry point (C and C++ APIs, CLI shapes, imports, the database): throws
/// InvalidArgumentError "<name> = <value> is not a size in <min_value>..2147483647" unless it is one.
/// min_value is 0 where a call may be empty (the APIs), 1 where a kernel must run (problems).
void check_dimension(const char* name, int64_t value, int64_t min_value);

/// Throws InvalidArgumentError naming the problem unless m, n, k are in 1..kMaxDimension and every
/// alignment is 1, 2 or 4.
void check_kernel_problem(const KernelProblem& problem);

/// Parses "nn", "nt", "tn", "tt" into (a_trans, b_trans) of a row-major problem.
void parse_layout(const std::string& text, bool& a_trans, bool& b_trans);

/// One GEMM call exactly as a user states it, before canonicalization.
struct GemmCall {
  Order order = Order::kColMajor;
  Op op_a = Op::kN;
  Op op_b = Op::kN;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  float alpha = 1.0f;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  void* c = nullptr;
  int64_t ldc = 0;
};

/// A call in canonical form: what a kernel launch needs.
struct KernelCall {
  KernelProblem problem;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
};

/// Throws InvalidArgumentError naming the first argument that breaks the cuBLAS contract
/// (negative or oversized sizes, leading dimensions below the minimum, null pointers for non-empty data).
void validate(const GemmCall& call);

/// Validates, then maps the call to its row-major canonical form (swapping A and B for column-major).
KernelCall canonicalize(const GemmCall& call);

/// Widest vector width in elements (4, 2, 1) such that ptr and every row start (ptr + r * ld) are aligned.
int vector_alignment(const void* ptr, int64_t ld, int element_bytes = 4) noexcept;

/// Minimum leading dimension of a stored matrix with `rows` x `cols` logical shape in `order`.
int64_t min_leading_dimension(Order order, int64_t rows, int64_t cols) noexcept;

}  // namespace gemmforge
