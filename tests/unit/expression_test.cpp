// Manifest expressions: grammar, precedence, functions and errors.
#include "core/expression.hpp"

#include <gtest/gtest.h>

#include "gemmforge/error.hpp"

namespace gemmforge {
namespace {

int64_t eval(const std::string& text, std::vector<int64_t> values = {}) {
  const Expression e = Expression::parse(text);
  return e.evaluate([&](size_t i) { return values.at(i); });
}

TEST(Expression, FollowsCPrecedence) {
  EXPECT_EQ(eval("1 + 2 * 3"), 7);
  EXPECT_EQ(eval("(1 + 2) * 3"), 9);
  EXPECT_EQ(eval("10 - 4 - 3"), 3);
  EXPECT_EQ(eval("17 / 5 % 2"), 1);
  EXPECT_EQ(eval("-3 + 5"), 2);
  EXPECT_EQ(eval("1 + 2 < 4 && 3 != 3 || 1"), 1);
  EXPECT_EQ(eval("!0 + !5"), 1);
}

TEST(Expression, ComparisonsAreNotSwallowedByShorterTokens) {
  EXPECT_EQ(eval("3 <= 3"), 1);
  EXPECT_EQ(eval("3 < 3"), 0);
  EXPECT_EQ(eval("4 >= 5"), 0);
  EXPECT_EQ(eval("4 != 5"), 1);
  EXPECT_EQ(eval("4 == 4"), 1);
}

TEST(Expression, SelectIsRightAssociative) {
  EXPECT_EQ(eval("0 ? 1 : 0 ? 2 : 3"), 3);
  EXPECT_EQ(eval("1 ? 10 : 20"), 10);
}

TEST(Expression, FunctionsComputeWhatTheyName) {
  EXPECT_EQ(eval("cdiv(10, 4)"), 3);
  EXPECT_EQ(eval("cdiv(8, 4)"), 2);
  EXPECT_EQ(eval("min(3, -2)"), -2);
  EXPECT_EQ(eval("max(3, -2)"), 3);
  EXPECT_EQ(eval("is_pow2(64) + is_pow2(48) + is_pow2(0)"), 1);
}

TEST(Expression, IdentifiersResolveByFirstAppearance) {
  const Expression e = Expression::parse("BM * device.sm_count + BM");
  ASSERT_EQ(e.identifiers().size(), 2u);
  EXPECT_EQ(e.identifiers()[0], "BM");
  EXPECT_EQ(e.identifiers()[1], "device.sm_count");
  EXPECT_EQ(eval("BM * device.sm_count + BM", {128, 132}), 128 * 132 + 128);
}

TEST(Expression, SyntaxErrorsNameTheColumn) {
  try {
    Expression::parse("BM * (BN + 1");
    FAIL() << "unbalanced parenthesis accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("expected ')'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Expression::parse("BM +"), InvalidArgumentError);
  EXPECT_THROW(Expression::parse("BM $ 2"), InvalidArgumentError);
  EXPECT_THROW(Expression::parse("floor(2)"), InvalidArgumentError);
  EXPECT_THROW(Expression::parse(""), InvalidArgumentError);
}

TEST(Expression, DivisionByZeroIsAnError) {
  EXPECT_THROW(eval("4 / 0"), InvalidArgumentError);
  EXPECT_THROW(eval("4 % (2 - 2)"), InvalidArgumentError);
  EXPECT_THROW(eval("cdiv(4, 0)"), InvalidArgumentError);
}

}  // namespace
}  // namespace gemmforge
