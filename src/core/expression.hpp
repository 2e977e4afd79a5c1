// Integer expressions used by template manifests for derived values, constraints and launch geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gemmforge {

/// An integer expression over named values, e.g. "STAGES * BK * (BM + BN) * 4 <=
/// device.smem_per_block_optin". Grammar: literals, identifiers (letters, digits, '_' and '.'), unary - and
/// !, * / %, + -, < <= > >=,
/// == !=, &&, ||, c ? a : b, and the functions cdiv(a, b), min(a, b), max(a, b), is_pow2(a).
/// Comparisons and logic give 0 or 1; division truncates; dividing by zero is an error.
class Expression {
 public:
  Expression() = default;

  /// Throws InvalidArgumentError naming the column of the first syntax error.
  static Expression parse(const std::string& text);

  const std::string& text() const { return text_; }
  /// Distinct identifiers in order of first appearance; evaluate() resolves them by this index.
  const std::vector<std::string>& identifiers() const { return identifiers_; }

  /// Evaluates with identifier i taking the value resolve(i).
  template <typename Resolve>
  int64_t evaluate(const Resolve& resolve) const {
    std::vector<int64_t> values(identifiers_.size());
    for (size_t i = 0; i < values.size(); ++i) values[i] = resolve(i);
    return evaluate_with(values.data());
  }

  /// Evaluates with identifier i taking values[i].
  int64_t evaluate_with(const int64_t* values) const;

  enum class Op : uint8_t {
    kConst,
    kIdent,
    kNeg,
    kNot,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kMod,
    kLt,
    kLe,
    kGt,
    kGe,
    kEq,
    kNe,
    kAnd,
    kOr,
    kSelect,
    kCdiv,
    kMin,
    kMax,
    kIsPow2,
  };
  struct Node {
    Op op = Op::kConst;
    int64_t value = 0;               // constant, or identifier index
    int32_t args[3] = {-1, -1, -1};  // child node indices
  };

 private:
  friend class ExpressionParser;
  int64_t eval(int32_t node, const int64_t* values) const;

  std::string text_;
  std::vector<std::string> identifiers_;
  std::vector<Node> nodes_;
  int32_t root_ = -1;
};

}  // namespace gemmforge
