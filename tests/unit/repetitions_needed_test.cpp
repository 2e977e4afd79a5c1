// How many repetitions timing asks for, without a GPU: the minimum count (smaller for long launches), the
// budget at the pace so far, the cap, and the first look that ends a clearly beaten contender's timing,
// which a long contender's verification launches may already give.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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

TEST(RepetitionsNeeded, WithAPrecisionASteadyContenderStopsAtTheMinimumCount) {
  TimingOptions o = options(50);
  o.precision = 0.005;
  // 0.1 ms launches: the budget would hold 500. The minimum count first, then the median's error decides.
  EXPECT_EQ(repetitions_needed({}, WarmUp{2, 0.2}, o), o.min_repetitions);
  std::vector<double> steady;
  for (int i = 0; i < o.min_repetitions; ++i) steady.push_back(0.1 * (1 + 0.002 * (i % 3)));
  EXPECT_EQ(repetitions_needed(steady, WarmUp{2, 0.2}, o), 0) << "known within 0.5% after ten";
  // Launches spread by 10%: the median is not known well enough, the budget goes on.
  std::vector<double> noisy;
  for (int i = 0; i < o.min_repetitions; ++i) noisy.push_back(0.1 * (1 + 0.1 * (i % 5) / 4.0));
  EXPECT_GT(repetitions_needed(noisy, WarmUp{2, 0.2}, o), 0);
  // Without a precision the budget is spent whatever the spread.
  EXPECT_GT(repetitions_needed(steady, WarmUp{2, 0.2}, options(50)), 0);
}

TEST(RelativeMedianError, FromTheSpreadAroundTheMedianNotFromOutliers) {
  EXPECT_TRUE(std::isinf(relative_median_error({1.0})));
  EXPECT_DOUBLE_EQ(relative_median_error(std::vector<double>(10, 2.0)), 0.0);
  // Median 1, absolute deviations 0.1 (MAD 0.1): 1.2533 * 1.4826 * 0.1 / sqrt(4).
  EXPECT_NEAR(relative_median_error({0.9, 1.1, 0.9, 1.1}), 1.2533 * 1.4826 * 0.1 / 2, 1e-9);
  // One launch a hundred times slower (a preempted one) barely moves it.
  std::vector<double> samples(20, 1.0);
  for (int i = 0; i < 20; ++i) samples[i] += 0.001 * (i % 2);
  const double clean = relative_median_error(samples);
  samples.back() = 100.0;
  EXPECT_LT(relative_median_error(samples), 2 * clean + 1e-12);
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
