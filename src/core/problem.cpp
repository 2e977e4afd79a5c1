// Validation and canonicalization of GEMM calls (see problem.hpp for the canonical form).
#include "core/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>

#include "core/dtype.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {

std::string KernelProblem::layout() const {
  return std::string(1, a_trans ? 't' : 'n') + (b_trans ? 't' : 'n');
}

std::string KernelProblem::shape() const {
  return fmt::format("{}x{}x{}", m, n, k);
}

std::string KernelProblem::type_name() const {
  if (c_dtype == default_output(dtype)) return gemmforge::to_string(dtype);
  return fmt::format("{}>{}", gemmforge::to_string(dtype), gemmforge::to_string(c_dtype));
}

std::string KernelProblem::to_string() const {
  return fmt::format("{} {} {} align {}/{}/{}", type_name(), layout(), shape(), align_a, align_b, align_c);
}

Dtype default_output(Dtype dtype) noexcept {
  return element_bytes(dtype) == 4 ? Dtype::kF32 : dtype;
}

bool output_allowed(Dtype input, Dtype output) noexcept {
  if (element_bytes(input) == 4) return output == Dtype::kF32;
  return output == input || output == Dtype::kF32;
}

std::optional<KernelProblem> sixteen_bit_twin(const KernelProblem& problem) {
  const auto other = [](Dtype d) { return d == Dtype::kBf16 ? Dtype::kF16 : Dtype::kBf16; };
  if (problem.dtype != Dtype::kBf16 && problem.dtype != Dtype::kF16) return std::nullopt;
  KernelProblem twin = problem;
  twin.dtype = other(problem.dtype);
  if (problem.c_dtype == problem.dtype) twin.c_dtype = twin.dtype;
  return twin;
}

void parse_type_name(const std::string& text, Dtype& dtype, Dtype& c_dtype) {
  const size_t arrow = text.find('>');
  dtype = parse_dtype(text.substr(0, arrow));
  c_dtype = arrow == std::string::npos ? default_output(dtype) : parse_dtype(text.substr(arrow + 1));
  if (!output_allowed(dtype, c_dtype)) {
    throw InvalidArgumentError(fmt::format("type '{}': {} operands cannot give a {} C", text,
                                           gemmforge::to_string(dtype), gemmforge::to_string(c_dtype)));
  }
}

int align_bytes(int elements, Dtype dtype) noexcept {
  return elements * element_bytes(dtype);
}

int align_elements(int bytes, Dtype dtype) noexcept {
  const int elements = bytes / element_bytes(dtype);
  return elements > 0 ? elements : 1;
}

void parse_layout(const std::string& text, bool& a_trans, bool& b_trans) {
  if (text.size() != 2) {
    throw InvalidArgumentError(
        fmt::format("layout '{}' must be two letters from n/t, e.g. 'nn' or 'nt'", text));
  }
  a_trans = parse_op(text[0]) == Op::kT;
  b_trans = parse_op(text[1]) == Op::kT;
}

int64_t min_leading_dimension(Order order, int64_t rows, int64_t cols) noexcept {
  const int64_t contiguous = order == Order::kColMajor ? rows : cols;
  return contiguous > 1 ? contiguous : 1;
}

int vector_alignment(const void* ptr, int64_t ld, int element_bytes) noexcept {
  const auto address = reinterpret_cast<std::uintptr_t>(ptr);
  for (int width = 16 / element_bytes; width > 1; width /= 2) {
    const auto bytes = static_cast<std::uintptr_t>(width * element_bytes);
    if (address % bytes == 0 && ld % width == 0) return width;
  }
  return 1;
}

int64_t tight_leading_dimension(int64_t extent, int align, int widest) noexcept {
  int64_t ld = std::max<int64_t>(extent, 1);
  ld = (ld + align - 1) / align * align;
  if (align < widest && ld % (2 * align) == 0) ld += align;
  return ld;
}

int64_t KernelProblem::tight_lda() const {
  return tight_leading_dimension(a_row_length(), align_a, 16 / element_bytes(dtype));
}

int64_t KernelProblem::tight_ldb() const {
  return tight_leading_dimension(b_row_length(), align_b, 16 / element_bytes(dtype));
}

int64_t KernelProblem::tight_ldc() const {
  return tight_leading_dimension(n, align_c, 16 / element_bytes(c_dtype));
}

static_assert(kMaxDimension == std::numeric_limits<int32_t>::max());

void check_dimension(const char* name, int64_t value, int64_t min_value) {
  if (value < min_value || value > kMaxDimension) {
    throw InvalidArgumentError(
        fmt::format("{} = {} is not a size in {}..{}", name, value, min_value, kMaxDimension));
  }
}

void check_kernel_problem(const KernelProblem& problem) {
  for (auto [name, value] :
       {std::pair{"m", problem.m}, std::pair{"n", problem.n}, std::pair{"k", problem.k}}) {
    try {
      check_dimension(name, value, 1);
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError(fmt::format("problem {}: {}", problem.to_string(), e.what()));
    }
  }
  if (!output_allowed(problem.dtype, problem.c_dtype)) {
    throw InvalidArgumentError(fmt::format("problem {}: {} operands cannot give a {} C", problem.to_string(),
                                           to_string(problem.dtype), to_string(problem.c_dtype)));
  }
  // Alignments in elements: a vector of at most 16 bytes (1, 2 or 4 floats; up to 8 16-bit elements).
  for (auto [name, value, dtype] : {std::tuple{"align_a", problem.align_a, problem.dtype},
                                    std::tuple{"align_b", problem.align_b, problem.dtype},
                                    std::tuple{"align_c", problem.align_c, problem.c_dtype}}) {
    const int widest = 16 / element_bytes(dtype);
    if (value < 1 || value > widest || (value & (value - 1)) != 0) {
      const std::string allowed = widest == 4 ? "1, 2 or 4" : "1, 2, 4 or 8";
      throw InvalidArgumentError(
          fmt::format("problem {}: {} = {} is not {}", problem.to_string(), name, value, allowed));
    }
  }
}

namespace {

void check_operand(const char* matrix, const char* ld_name, Order order, int64_t rows, int64_t cols,
                   const void* ptr, int64_t ld) {
  const int64_t minimum = min_leading_dimension(order, rows, cols);
  if (ld < minimum) {
    throw InvalidArgumentError(fmt::format(
        "{} = {} is too small: {} is stored {} as {}x{}, so {} must be >= {}", ld_name, ld, matrix,
        order == Order::kColMajor ? "column-major" : "row-major", rows, cols, ld_name, minimum));
  }
  const int64_t lines = order == Order::kColMajor ? cols : rows;
  if (lines > 0 && ld > std::numeric_limits<int64_t>::max() / lines) {
    throw InvalidArgumentError(
        fmt::format("{} = {} with {} lines overflows a 64-bit offset", ld_name, ld, lines));
  }
  if (ptr == nullptr && rows > 0 && cols > 0) {
    throw InvalidArgumentError(
        fmt::format("{} is a null pointer but holds a {}x{} matrix", matrix, rows, cols));
  }
}

}  // namespace

void validate(const GemmCall& call) {
  if (!output_allowed(call.dtype, call.c_dtype)) {
    throw InvalidArgumentError(fmt::format("{} operands with a {} C is not a supported combination",
                                           to_string(call.dtype), to_string(call.c_dtype)));
  }
  if (call.order != Order::kRowMajor && call.order != Order::kColMajor) {
    throw InvalidArgumentError(
        fmt::format("storage order {} is not row- or column-major", static_cast<int>(call.order)));
  }
  for (auto [name, op] : {std::pair{"op(A)", call.op_a}, std::pair{"op(B)", call.op_b}}) {
    if (op != Op::kN && op != Op::kT) {
      throw InvalidArgumentError(fmt::format("{} = {} is neither N nor T", name, static_cast<int>(op)));
    }
  }
  check_dimension("m", call.m, 0);
  check_dimension("n", call.n, 0);
  check_dimension("k", call.k, 0);
  // Stored shapes: op(A) is m x k, so A itself is k x m when transposed; likewise for B.
  const bool ta = call.op_a == Op::kT;
  const bool tb = call.op_b == Op::kT;
  check_operand("A", "lda", call.order, ta ? call.k : call.m, ta ? call.m : call.k, call.a, call.lda);
  check_operand("B", "ldb", call.order, tb ? call.n : call.k, tb ? call.k : call.n, call.b, call.ldb);
  check_operand("C", "ldc", call.order, call.m, call.n, call.c, call.ldc);
}

void validate_batch(const GemmCall& call, int64_t stride_a, int64_t stride_b, int64_t stride_c,
                    int64_t batch_count) {
  validate(call);
  if (batch_count < 0) throw InvalidArgumentError(fmt::format("batchCount = {} is negative", batch_count));
  for (auto [name, stride] :
       {std::pair{"strideA", stride_a}, std::pair{"strideB", stride_b}, std::pair{"strideC", stride_c}}) {
    if (stride < 0) throw InvalidArgumentError(fmt::format("{} = {} is negative", name, stride));
  }
  const int64_t lines = call.order == Order::kColMajor ? call.n : call.m;
  if (batch_count > 1 && call.m > 0 && call.n > 0 && stride_c < lines * call.ldc) {
    throw InvalidArgumentError(
        fmt::format("strideC = {} is below ldc * {} = {}: the outputs of the batch would overlap", stride_c,
                    call.order == Order::kColMajor ? "n" : "m", lines * call.ldc));
  }
}

KernelCall canonicalize(const GemmCall& call) {
  validate(call);
  KernelCall out;
  out.alpha = call.alpha;
  out.beta = call.beta;
  out.c = call.c;
  out.ldc = call.ldc;
  KernelProblem& p = out.problem;
  p.dtype = call.dtype;
  p.c_dtype = call.c_dtype;
  p.k = call.k;
  if (call.order == Order::kRowMajor) {
    // Row-major storage: op(A) = A is k-contiguous exactly when op_a == N.
    p.m = call.m;
    p.n = call.n;
    p.a_trans = call.op_a == Op::kT;
    p.b_trans = call.op_b == Op::kT;
    out.a = call.a;
    out.lda = call.lda;
    out.b = call.b;
    out.ldb = call.ldb;
  } else {
    // Column-major C is row-major C^T = op(B)^T op(A)^T: B becomes the left operand.
    p.m = call.n;
    p.n = call.m;
    p.a_trans = call.op_b == Op::kT;
    p.b_trans = call.op_a == Op::kT;
    out.a = call.b;
    out.lda = call.ldb;
    out.b = call.a;
    out.ldb = call.lda;
  }
  const int operand_bytes = element_bytes(p.dtype);
  p.align_a = vector_alignment(out.a, out.lda, operand_bytes);
  p.align_b = vector_alignment(out.b, out.ldb, operand_bytes);
  p.align_c = vector_alignment(out.c, out.ldc, element_bytes(p.c_dtype));
  return out;
}

}  // namespace gemmforge
