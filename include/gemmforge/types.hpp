// Vocabulary of the public API: element types, operations on operands, storage orders.
#pragma once

#include <cstdint>
#include <string>

namespace gemmforge {

/// Element type of A and B, and how they are multiplied: kF32 at FP32-level accuracy (FFMA, or three TF32
/// products of split operands), kTf32 FP32 data rounded to TF32 for the tensor cores, kF16 and kBf16 on the
/// tensor cores, and kFfma FP32 data multiplied by plain FFMA only (cuBLAS's CUBLAS_COMPUTE_32F_PEDANTIC).
/// C is of the operands' type, or FP32.
enum class Dtype { kF32, kTf32, kF16, kBf16, kFfma };

/// op(X): the operand as stored, or its transpose.
enum class Op { kN, kT };

/// How a matrix is laid out in memory.
enum class Order { kRowMajor, kColMajor };

const char* to_string(Dtype dtype) noexcept;
const char* to_string(Op op) noexcept;
const char* to_string(Order order) noexcept;

/// Parses "f32" (also "fp32", "float"), "tf32", "f16", "bf16", "ffma" (also "f32-pedantic"), "n"/"t",
/// "row"/"col"; throws InvalidArgumentError otherwise.
Dtype parse_dtype(const std::string& text);
Op parse_op(char letter);
Order parse_order(const std::string& text);

}  // namespace gemmforge
