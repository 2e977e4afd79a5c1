// How many repetitions timing asks for, without a GPU: the minimum count (smaller for long launches), the
// budget at the pace so far, the cap, and the first look that ends a clearly beaten contender's timing,
// which a long contender's verification launches may already give.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "gemmforge/error.hpp"
#include "tuner/timing.hpp"

namespace gemmforge::tuner {
namespace {

TimingOptions options(double budget_ms) {
  TimingOptions o;
  o.budget_ms = budget_ms;
  return o;
}

TEST(RepetitionsNeeded, AMidLengthKernelGetsTheMinimumCountNotWhatTheBudgetWouldHold) {
  const TimingOptions o = options(50);
  // One 8 ms warm-up launch: the budget holds 7, the minimum count of 10 takes 80 ms, within twice it.
  EXPECT_EQ(repetitions_needed({}, WarmUp{1, 8.0}, o), o.min_repetitions);
  const std::vector<double> eight(8, 8.0);
  EXPECT_EQ(repetitions_needed(eight, WarmUp{1, 8.0}, o), 2);
  const std::vector<double> ten(10, 8.0);
  EXPECT_EQ(repetitions_needed(ten, WarmUp{1, 8.0}, o), 0);
}

TEST(RepetitionsNeeded, ALongKernelGetsWhatTwiceTheBudgetHoldsButNotFewerThanTheLongMinimum) {
  const TimingOptions o = options(50);
  // 16 ms launches: ten would take 160 ms; twice the budget holds 7 (rounded up).
  EXPECT_EQ(repetitions_needed({}, WarmUp{2, 32.0}, o), 7);
  EXPECT_EQ(repetitions_needed(std::vector<double>(7, 16.0), WarmUp{2, 32.0}, o), 0);
  // 60 ms launches: twice the budget holds 2, the long minimum is 5.
  EXPECT_EQ(repetitions_needed({}, WarmUp{2, 120.0}, o), o.min_repetitions_long);
  EXPECT_EQ(repetitions_needed(std::vector<double>(5, 60.0), WarmUp{2, 120.0}, o), 0);
  // Never more than the minimum count would be.
  TimingOptions few = o;
  few.min_repetitions = 3;
  EXPECT_EQ(repetitions_needed({}, WarmUp{2, 120.0}, few), 3);
  // Without a budget the minimum count alone decides, however long the launches.
  EXPECT_EQ(repetitions_needed({}, WarmUp{2, 120.0}, options(0)), o.min_repetitions);
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

TEST(BeatenAtVerification, OnlyALongContenderWhoseEveryVerificationLaunchLosesClearly) {
  TimingOptions o = options(50);
  EXPECT_FALSE(beaten_at_verification({30.0, 31.0}, o)) << "nothing to beat yet";
  o.beaten_above_ms = 20.0;
  EXPECT_TRUE(beaten_at_verification({30.0, 31.0}, o));
  EXPECT_FALSE(beaten_at_verification({30.0, 19.0}, o)) << "one launch under the time to beat: it may win";
  EXPECT_FALSE(beaten_at_verification({}, o));
  // Short launches: one cold launch says too little, the first look times them properly.
  o.beaten_above_ms = kLongLaunchMs / 2;
  EXPECT_FALSE(beaten_at_verification({10 * kLongLaunchMs, 10 * kLongLaunchMs}, o));
}

TEST(TimingOf, MedianExtremesAndCount) {
  const Timing odd = timing_of({3.0, 1.0, 2.0});
  EXPECT_DOUBLE_EQ(odd.median_ms, 2.0);
  EXPECT_DOUBLE_EQ(odd.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(odd.max_ms, 3.0);
  EXPECT_EQ(odd.repetitions, 3);
  EXPECT_DOUBLE_EQ(timing_of({4.0, 2.0}).median_ms, 3.0);
  EXPECT_THROW(timing_of({}), InvalidArgumentError);
}

}  // namespace
}  // namespace gemmforge::tuner
