// Names and parsers of the public enums (types.hpp, error.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gemmforge/error.hpp"
#include "gemmforge/types.hpp"

namespace gemmforge {

const char* to_string(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      return "invalid argument";
    case ErrorKind::kNoDevice:
      return "no CUDA device";
    case ErrorKind::kCuda:
      return "CUDA error";
    case ErrorKind::kNvrtc:
      return "NVRTC error";
    case ErrorKind::kCublas:
      return "cuBLAS error";
    case ErrorKind::kDatabase:
      return "database error";
    case ErrorKind::kNotSupported:
      return "not supported";
    case ErrorKind::kNotFound:
      return "not found";
    case ErrorKind::kInternal:
      return "internal error";
  }
  return "unknown error";
}

const char* to_string(Dtype dtype) noexcept {
  switch (dtype) {
    case Dtype::kF32:
      return "f32";
    case Dtype::kTf32:
      return "tf32";
    case Dtype::kF16:
      return "f16";
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFfma:
      return "ffma";
  }
  return "unknown";
}

const char* to_string(Op op) noexcept {
  return op == Op::kT ? "T" : "N";
}

const char* to_string(Order order) noexcept {
  return order == Order::kRowMajor ? "row" : "col";
}

Dtype parse_dtype(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "f32" || lower == "fp32" || lower == "float" || lower == "sgemm") return Dtype::kF32;
  if (lower == "tf32") return Dtype::kTf32;
  if (lower == "f16" || lower == "fp16" || lower == "half") return Dtype::kF16;
  if (lower == "bf16") return Dtype::kBf16;
  if (lower == "ffma" || lower == "f32-pedantic") return Dtype::kFfma;
  throw InvalidArgumentError(
      fmt::format("unknown dtype '{}'; expected f32, tf32, f16, bf16 or ffma (FP32 by plain FFMA)", text));
}

Op parse_op(char letter) {
  switch (std::tolower(static_cast<unsigned char>(letter))) {
    case 'n':
      return Op::kN;
    case 't':
    case 'c':
      return Op::kT;  // real data: conjugate transpose is the transpose
    default:
      throw InvalidArgumentError(fmt::format("operation '{}' must be 'n' or 't'", letter));
  }
}

Order parse_order(const std::string& text) {
  if (text == "row" || text == "row-major" || text == "r") return Order::kRowMajor;
  if (text == "col" || text == "column" || text == "col-major" || text == "column-major" || text == "c") {
    return Order::kColMajor;
  }
  throw InvalidArgumentError(fmt::format("storage order '{}' must be 'row' or 'col'", text));
}

}  // namespace gemmforge
