// The one median the tuner's timing and the models' fits share.
#include <gtest/gtest.h>

#include "core/statistics.hpp"

namespace gemmforge {
namespace {

TEST(Statistics, MedianOfOddAndEvenCountsInAnyOrder) {
  EXPECT_DOUBLE_EQ(median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_DOUBLE_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);  // the mean of the middle two
  EXPECT_DOUBLE_EQ(median({7.0}), 7.0);
  EXPECT_DOUBLE_EQ(median({5.0, 5.0, 1.0, 100.0}), 5.0);
  EXPECT_DOUBLE_EQ(median({}), 0.0);
}

}  // namespace
}  // namespace gemmforge
