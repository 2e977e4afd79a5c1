// Recursive-descent parser and evaluator of manifest expressions.
#include "core/expression.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gemmforge/error.hpp"

namespace gemmforge {

class ExpressionParser {
 public:
  explicit ExpressionParser(Expression& out) : out_(out), text_(out.text_) {}

  void run() {
    out_.root_ = ternary();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
  }

 private:
  using Op = Expression::Op;

  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgumentError(fmt::format("expression '{}': {} at column {}", text_, what, pos_ + 1));
  }

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool accept(const char* token) {
    skip_space();
    const size_t length = std::char_traits<char>::length(token);
    if (text_.compare(pos_, length, token) != 0) return false;
    // "<" must not swallow the first half of "<=", nor "!" of "!=".
    if (length == 1 && pos_ + 1 < text_.size() && text_[pos_ + 1] == '=' &&
        (token[0] == '<' || token[0] == '>' || token[0] == '!' || token[0] == '=')) {
      return false;
    }
    pos_ += length;
    return true;
  }

  void expect(const char* token) {
    if (!accept(token)) fail(fmt::format("expected '{}'", token));
  }

  int32_t add(Op op, int32_t a = -1, int32_t b = -1, int32_t c = -1, int64_t value = 0) {
    Expression::Node node;
    node.op = op;
    node.value = value;
    node.args[0] = a;
    node.args[1] = b;
    node.args[2] = c;
    out_.nodes_.push_back(node);
    return static_cast<int32_t>(out_.nodes_.size() - 1);
  }

  int32_t ternary() {
    int32_t condition = logical_or();
    if (!accept("?")) return condition;
    int32_t if_true = ternary();
    expect(":");
    int32_t if_false = ternary();
    return add(Op::kSelect, condition, if_true, if_false);
  }

  int32_t logical_or() {
    int32_t left = logical_and();
    while (accept("||")) left = add(Op::kOr, left, logical_and());
    return left;
  }

  int32_t logical_and() {
    int32_t left = equality();
    while (accept("&&")) left = add(Op::kAnd, left, equality());
    return left;
  }

  int32_t equality() {
    int32_t left = relation();
    for (;;) {
      if (accept("=="))
        left = add(Op::kEq, left, relation());
      else if (accept("!="))
        left = add(Op::kNe, left, relation());
      else
        return left;
    }
  }

  int32_t relation() {
    int32_t left = additive();
    for (;;) {
      if (accept("<="))
        left = add(Op::kLe, left, additive());
      else if (accept(">="))
        left = add(Op::kGe, left, additive());
      else if (accept("<"))
        left = add(Op::kLt, left, additive());
      else if (accept(">"))
        left = add(Op::kGt, left, additive());
      else
        return left;
    }
  }

  int32_t additive() {
    int32_t left = multiplicative();
    for (;;) {
      if (accept("+"))
        left = add(Op::kAdd, left, multiplicative());
      else if (accept("-"))
        left = add(Op::kSub, left, multiplicative());
      else
        return left;
    }
  }

  int32_t multiplicative() {
    int32_t left = unary();
    for (;;) {
      if (accept("*"))
        left = add(Op::kMul, left, unary());
      else if (accept("/"))
        left = add(Op::kDiv, left, unary());
      else if (accept("%"))
        left = add(Op::kMod, left, unary());
      else
        return left;
    }
  }

  int32_t unary() {
    if (accept("-")) return add(Op::kNeg, unary());
    if (accept("!")) return add(Op::kNot, unary());
    return primary();
  }

  int32_t primary() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t value = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (value > (INT64_MAX - 9) / 10) fail("number too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      return add(Op::kConst, -1, -1, -1, value);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                     text_[pos_] == '_' || text_[pos_] == '.')) {
        ++pos_;
      }
      const std::string name = text_.substr(start, pos_ - start);
      if (accept("(")) return call(name);
      auto& ids = out_.identifiers_;
      auto it = std::find(ids.begin(), ids.end(), name);
      if (it == ids.end()) it = ids.insert(ids.end(), name);
      return add(Op::kIdent, -1, -1, -1, it - ids.begin());
    }
    if (accept("(")) {
      int32_t inner = ternary();
      expect(")");
      return inner;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  int32_t call(const std::string& name) {
    struct Function {
      const char* name;
      Op op;
      int arity;
    };
    static constexpr Function kFunctions[] = {
        {"cdiv", Op::kCdiv, 2}, {"min", Op::kMin, 2}, {"max", Op::kMax, 2}, {"is_pow2", Op::kIsPow2, 1}};
    for (const auto& f : kFunctions) {
      if (name != f.name) continue;
      int32_t a = ternary();
      int32_t b = -1;
      if (f.arity == 2) {
        expect(",");
        b = ternary();
      }
      expect(")");
      return add(f.op, a, b);
    }
    fail(fmt::format("unknown function '{}' (known: cdiv, min, max, is_pow2)", name));
  }

  Expression& out_;
  const std::string& text_;
  size_t pos_ = 0;
};

Expression Expression::parse(const std::string& text) {
  Expression expression;
  expression.text_ = text;
  ExpressionParser(expression).run();
  return expression;
}

int64_t Expression::evaluate_with(const int64_t* values) const {
  if (root_ < 0) throw InvalidArgumentError("evaluating an empty expression");
  return eval(root_, values);
}

int64_t Expression::eval(int32_t index, const int64_t* values) const {
  const Node& node = nodes_[index];
  auto arg = [&](int i) { return eval(node.args[i], values); };
  auto divisor = [&](int i) {
    const int64_t d = arg(i);
    if (d == 0) throw InvalidArgumentError(fmt::format("expression '{}': division by zero", text_));
    return d;
  };
  switch (node.op) {
    case Op::kConst:
      return node.value;
    case Op::kIdent:
      return values[node.value];
    case Op::kNeg:
      return -arg(0);
    case Op::kNot:
      return arg(0) == 0;
    case Op::kAdd:
      return arg(0) + arg(1);
    case Op::kSub:
      return arg(0) - arg(1);
    case Op::kMul:
      return arg(0) * arg(1);
    case Op::kDiv: {
      const int64_t a = arg(0);
      return a / divisor(1);
    }
    case Op::kMod: {
      const int64_t a = arg(0);
      return a % divisor(1);
    }
    case Op::kLt:
      return arg(0) < arg(1);
    case Op::kLe:
      return arg(0) <= arg(1);
    case Op::kGt:
      return arg(0) > arg(1);
    case Op::kGe:
      return arg(0) >= arg(1);
    case Op::kEq:
      return arg(0) == arg(1);
    case Op::kNe:
      return arg(0) != arg(1);
    case Op::kAnd:
      return arg(0) != 0 && arg(1) != 0;
    case Op::kOr:
      return arg(0) != 0 || arg(1) != 0;
    case Op::kSelect:
      return arg(0) != 0 ? arg(1) : arg(2);
    case Op::kCdiv: {
      const int64_t a = arg(0);
      const int64_t d = divisor(1);
      return (a + d - 1) / d;
    }
    case Op::kMin:
      return std::min(arg(0), arg(1));
    case Op::kMax:
      return std::max(arg(0), arg(1));
    case Op::kIsPow2: {
      const int64_t a = arg(0);
      return a > 0 && (a & (a - 1)) == 0;
    }
  }
  throw InternalError("unknown expression node");
}

}  // namespace gemmforge
