// Vocabulary of the public API: element types, operations on operands, storage orders.
#pragma once

#include <cstdint>
#include <string>

namespace gemmforge {

/// Element type of A, B and C. Only FP32 has kernels today; the others are reserved so the API
/// keeps its shape when they arrive.
enum class Dtype { kF32, kTf32, kF16, kBf16 };

/// op(X): the operand as stored, or its transpose.
enum class Op { kN, kT };

/// How a matrix is laid out in memory.
enum class Order { kRowMajor, kColMajor };

const char* to_string(Dtype dtype) noexcept;
const char* to_string(Op op) noexcept;
const char* to_string(Order order) noexcept;

/// Parses "f32" (also "fp32", "float"), "n"/"t", "row"/"col"; throws InvalidArgumentError otherwise.
Dtype parse_dtype(const std::string& text);
Op parse_op(char letter);
Order parse_order(const std::string& text);

}  // namespace gemmforge
