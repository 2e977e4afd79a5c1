// GEMM problems: a user's call in any storage order, and the one canonical form the kernels implement.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
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
  /// Type of A and B, and how they are multiplied (kTf32: FP32 storage, TF32 tensor-core products; kFfma:
  /// FP32 storage, FFMA only).
  Dtype dtype = Dtype::kF32;
  /// Storage type of C: FP32, or the 16-bit type of A and B (see output_dtypes()).
  Dtype c_dtype = Dtype::kF32;
  bool a_trans = false;
  bool b_trans = false;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  /// Widest vector, in elements, that each operand's pointer and leading dimension allow: 1, 2 or 4 for
  /// 4-byte elements, up to 8 for 2-byte ones (16 bytes at most). Stored in bytes (align_bytes()).
  int align_a = 4;
  int align_b = 4;
  int align_c = 4;

  /// A and B as they lie in memory, canonical row-major: A is m x k (k x m when a_trans), B is k x n (n x k
  /// when b_trans); rows of row_length elements each.
  int64_t a_rows() const { return a_trans ? k : m; }
  int64_t a_row_length() const { return a_trans ? m : k; }
  int64_t b_rows() const { return b_trans ? n : k; }
  int64_t b_row_length() const { return b_trans ? k : n; }
  /// Leading dimensions of A, B and C stored tight, as the tuner stores a problem and a caller most often
  /// does: each row's length rounded up to the operand's alignment class (tight_leading_dimension).
  int64_t tight_lda() const;
  int64_t tight_ldb() const;
  int64_t tight_ldc() const;

  /// "nn", "nt", "tn" or "tt" for (a_trans, b_trans).
  std::string layout() const;
  /// "4096x4096x4096".
  std::string shape() const;
  /// "f32 nn 4096x4096x4096 align 4/4/4"; "bf16>f32 ..." where C's type differs from A's and B's.
  std::string to_string() const;
  /// "f32", "bf16", or "bf16>f32" for BF16 operands with an FP32 C.
  std::string type_name() const;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }

  auto operator<=>(const KernelProblem&) const = default;
};

/// The problem in the other 16-bit type: FP16 for BF16 and back, a 16-bit C following its operands and an
/// FP32 C staying. The tensor cores multiply both types alike and every 16-bit template computes both, so
/// a config tuned for one is a measured answer for the other. None for FP32, TF32 and FFMA problems.
std::optional<KernelProblem> sixteen_bit_twin(const KernelProblem& problem);

/// The storage type of C when a caller names only the operands' type: FP32 for f32 and tf32, else the same.
Dtype default_output(Dtype dtype) noexcept;

/// Whether C may be stored as `output` for operands of `input` (cublasGemmEx's combinations).
bool output_allowed(Dtype input, Dtype output) noexcept;

/// Parses a type name as type_name() writes it ("bf16", "bf16>f32") into (dtype, c_dtype); throws
/// InvalidArgumentError for an unknown type or combination.
void parse_type_name(const std::string& text, Dtype& dtype, Dtype& c_dtype);

/// The leading dimension, in elements, of rows `extent` long stored tight in the alignment class `align`
/// (elements; `widest` the widest class of the type, 4 floats or 8 16-bit elements): the extent rounded up to
/// the alignment, and one alignment more where that would put the rows in a wider class.
int64_t tight_leading_dimension(int64_t extent, int align, int widest) noexcept;

/// Alignment in bytes of an operand aligned to `elements` elements of `dtype`.
int align_bytes(int elements, Dtype dtype) noexcept;
/// Alignment in elements of `dtype` of an operand aligned to `bytes` bytes (at least 1).
int align_elements(int bytes, Dtype dtype) noexcept;

/// Largest m, n or k gemmforge accepts anywhere: kernels index rows and columns with 32-bit integers.
inline constexpr int64_t kMaxDimension = 2147483647;

/// The one size check of every entry point (C and C++ APIs, CLI shapes, imports, the database): throws
/// InvalidArgumentError "<name> = <value> is not a size in <min_value>..2147483647" unless it is one.
/// min_value is 0 where a call may be empty (the APIs), 1 where a kernel must run (problems).
void check_dimension(const char* name, int64_t value, int64_t min_value);

/// Throws InvalidArgumentError naming the problem unless m, n, k are in 1..kMaxDimension, C's type is one its
/// operands may give (output_allowed) and every alignment is a power of two of at most 16 bytes.
void check_kernel_problem(const KernelProblem& problem);

/// Parses "nn", "nt", "tn", "tt" into (a_trans, b_trans) of a row-major problem.
void parse_layout(const std::string& text, bool& a_trans, bool& b_trans);

/// One GEMM call exactly as a user states it, before canonicalization.
struct GemmCall {
  Dtype dtype = Dtype::kF32;    ///< A's and B's type (and how they are multiplied)
  Dtype c_dtype = Dtype::kF32;  ///< C's type
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

/// validate(), then the batch: batch_count >= 0; a stride below the elements of one matrix is allowed (cuBLAS
/// allows overlapping inputs) but must be >= 0, and C's must keep the outputs apart when batch_count > 1.
void validate_batch(const GemmCall& call, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                    int64_t batch_count);

/// Validates, then maps the call to its row-major canonical form (swapping A and B for column-major).
KernelCall canonicalize(const GemmCall& call);

/// Widest vector width in elements, of at most 16 bytes (4, 2, 1 floats; 8, 4, 2, 1 halves), such that
/// ptr and every row start (ptr + r * ld) are aligned.
int vector_alignment(const void* ptr, int64_t ld, int element_bytes = 4) noexcept;

/// Minimum leading dimension of a stored matrix with `rows` x `cols` logical shape in `order`.
int64_t min_leading_dimension(Order order, int64_t rows, int64_t cols) noexcept;

}  // namespace gemmforge
