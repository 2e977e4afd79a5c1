// How many repetitions timing asks for, without a GPU: the minimum count, the budget at the pace so far,
// the cap, and the first look that ends a clearly beaten contender's timing.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "tuner/timing.hpp"

namespace gemmforge::tuner {
namespace {

TimingOptions options(double budget_ms) {
  TimingOptions o;
  o.budget_ms = budget_ms;
  return o;
}

TEST(RepetitionsNeeded, ALongKernelGetsTheMinimumCountNotWhatTheBudgetWouldHold) {
  const TimingOptions o = options(50);
  // One 16 ms warm-up launch: the budget holds 4, the minimum count is 10.
  EXPECT_EQ(repetitions_needed({}, WarmUp{1, 16.0}, o), o.min_repetitions);
  const std::vector<double> eight(8, 16.0);
  EXPECT_EQ(repetitions_needed(eight, WarmUp{1, 16.0}, o), 2);
  const std::vector<double> ten(10, 16.0);
  EXPECT_EQ(repetitions_needed(ten, WarmUp{1, 16.0}, o), 0);
}

TEST(RepetitionsNeeded, AShortKernelFillsTheBudgetUpToTheCap) {
  const TimingOptions o = options(50);
  EXPECT_EQ(repetitions_needed({}, WarmUp{3, 0.3}, o), std::min(500, o.max_repetitions));  // 0.1 ms each
  const std::vector<double> hundred(100, 0.1);  // 10 ms of 50: 400 more fit, the cap allows 100
  EXPECT_EQ(repetitions_needed(hundred, WarmUp{3, 0.3}, o), o.max_repetitions - 100);
  const std::vector<double> at_cap(o.max_repetitions, 0.1);
  EXPECT_EQ(repetitions_needed(at_cap, WarmUp{3, 0.3}, o), 0);
}

TEST(RepetitionsNeeded, WithoutAWarmUpTheFirstBatchSetsThePace) {
  const TimingOptions o = options(50);
  EXPECT_EQ(repetitions_needed({}, WarmUp{}, o), o.min_repetitions);
  EXPECT_EQ(repetitions_needed({}, WarmUp{}, options(0)), o.min_repetitions);
}

TEST(RepetitionsNeeded, AClearlyBeatenContenderStopsAfterTheFirstLook) {
  TimingOptions o = options(0);  // the minimum count alone
  o.beaten_above_ms = 1.0;
  EXPECT_EQ(repetitions_needed({}, WarmUp{}, o), o.beaten_repetitions) << "the first look first";
  EXPECT_EQ(repetitions_needed({2.0}, WarmUp{}, o), o.beaten_repetitions - 1);
  EXPECT_EQ(repetitions_needed({2.0, 1.5, 3.0}, WarmUp{}, o), 0) << "every repetition slower: beaten";
  // One repetition under the time to beat: it may win, and gets the full count.
  EXPECT_EQ(repetitions_needed({2.0, 0.9, 3.0}, WarmUp{}, o), o.min_repetitions - 3);
}

TEST(RepetitionsNeeded, TheFirstLookNeverExceedsTheCap) {
  TimingOptions o = options(50);
  o.beaten_above_ms = 1.0;
  o.max_repetitions = 1;
  EXPECT_EQ(repetitions_needed({}, WarmUp{}, o), 1);
  EXPECT_EQ(repetitions_needed({2.0}, WarmUp{}, o), 0);
  EXPECT_EQ(repetitions_needed({0.5}, WarmUp{}, o), 0) << "the cap holds even for a contender that may win";
}

}  // namespace
}  // namespace gemmforge::tuner
