// The search contracts: flat numbering of candidates, the history, stop conditions and the search loop.
#include "tuner/search.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <set>

#include "gemmforge/error.hpp"
#include "search_fixtures.hpp"

namespace gemmforge::tuner {
namespace {

Observation ok(size_t candidate, double time_ms) {
  Observation o;
  o.candidate = candidate;
  o.time_ms = time_ms;
  return o;
}

Observation failed(size_t candidate, Outcome outcome = Outcome::kCompileError) {
  Observation o;
  o.candidate = candidate;
  o.outcome = outcome;
  return o;
}

History history_of(const std::vector<Observation>& observations) {
  History h;
  for (const Observation& o : observations) h.add(o);
  return h;
}

TEST(SearchSpace, NumbersTheTemplatesConsecutively) {
  const SearchSpace space = testing::small_space();
  ASSERT_EQ(space.spaces().size(), 2u);
  const size_t simt = space.spaces()[0].size(), tf32 = space.spaces()[1].size();
  ASSERT_GT(simt, 0u);
  ASSERT_GT(tf32, 0u);
  EXPECT_EQ(space.size(), simt + tf32);
  EXPECT_EQ(space.space_of(0), 0u);
  EXPECT_EQ(space.space_of(simt - 1), 0u);
  EXPECT_EQ(space.space_of(simt), 1u);
  EXPECT_EQ(space.index_in_space(simt + 2), 2u);
  EXPECT_EQ(space.config(simt + 2), space.spaces()[1].config(2));
  EXPECT_THROW(space.space_of(space.size()), InvalidArgumentError);
}

TEST(SearchSpace, FindsEveryConfigItHoldsAndNothingElse) {
  const SearchSpace space = testing::small_space();
  for (size_t i = 0; i < space.size(); i += 7)
    EXPECT_EQ(space.find(space.config(i)), static_cast<int64_t>(i));
  Config outside = space.config(0);
  outside.set("STAGES", 2);  // pinned to 3 in this space
  EXPECT_EQ(space.find(outside), -1);
  EXPECT_EQ(space.find(Config("sgemm_simt", {{"NOT_A_PARAMETER", 1}})), -1);
  EXPECT_EQ(space.find(Config("no_such_template", space.config(0).values())), -1);
}

TEST(SearchSpace, SkipsEmptyTemplateSpaces) {
  // tf32x3 needs four warps; pinning it to 16 x 16 warp tiles in 32 x 32 blocks leaves nothing.
  const SearchSpace space = testing::search_space(
      testing::problem(4096, 4096, 4096),
      {{"sgemm_tf32x3", {"BM=32", "BN=32", "WM=32", "WN=32"}}, {"sgemm_simt", {"BM=32", "BN=32", "BK=8"}}});
  ASSERT_TRUE(space.spaces()[0].empty());
  ASSERT_FALSE(space.empty());
  EXPECT_EQ(space.space_of(0), 1u);
  EXPECT_EQ(space.config(0).template_name(), "sgemm_simt");
}

TEST(History, KeepsTheFastestOkObservation) {
  const History h = history_of({failed(4), ok(2, 3.0), ok(7, 1.5), failed(9, Outcome::kCrashed), ok(1, 2.0)});
  ASSERT_NE(h.best(), nullptr);
  EXPECT_EQ(h.best()->candidate, 7u);
  EXPECT_EQ(h.size(), 5u);
  EXPECT_TRUE(h.contains(4));
  EXPECT_TRUE(h.contains(9));
  EXPECT_FALSE(h.contains(3));
  EXPECT_FALSE(h.contains(1000));
  EXPECT_EQ(History().best(), nullptr);
  EXPECT_EQ(history_of({failed(0)}).best(), nullptr);
}

TEST(History, RejectsAnOkObservationWithoutATime) {
  History h;
  EXPECT_THROW(h.add(ok(0, std::numeric_limits<double>::infinity())), InvalidArgumentError);
  EXPECT_THROW(h.add(ok(0, 0.0)), InvalidArgumentError);
  EXPECT_NO_THROW(h.add(failed(0)));
}

TEST(History, CountsEvaluationsSinceTheLastImprovement) {
  History h;
  EXPECT_EQ(h.since_improvement(), 0u);
  h.add(failed(0));
  EXPECT_EQ(h.since_improvement(), 1u);  // nothing ok yet: every evaluation counts
  h.add(ok(1, 10.0));
  EXPECT_EQ(h.since_improvement(), 0u);
  h.add(ok(2, 12.0));
  h.add(failed(3));
  EXPECT_EQ(h.since_improvement(), 2u);
  h.add(ok(4, 9.0));
  EXPECT_EQ(h.since_improvement(), 0u);
}

TEST(History, SmallGainsAddUpAgainstTheTolerance) {
  // 1% steps do not count against a 5% tolerance one by one, but the sixth takes the best 5.9% below
  // the reference of 100.
  History h = history_of({ok(0, 100.0)});
  for (size_t i = 1; i <= 5; ++i) {
    h.add(ok(i, 100.0 - i));
    EXPECT_EQ(h.since_improvement(0.05), i);
    EXPECT_EQ(h.since_improvement(0.0), 0u);
  }
  h.add(ok(6, 94.1));
  EXPECT_EQ(h.since_improvement(0.05), 0u);
}

TEST(StopCondition, AfterEvaluationsCountsAndSaysHowManyAreLeft) {
  const auto stop = stop_after_evaluations(3);
  const History two = history_of({ok(0, 1), ok(1, 1)});
  EXPECT_FALSE(stop->done(two, 0));
  EXPECT_EQ(stop->evaluations_left(two), 1u);
  const History three = history_of({ok(0, 1), ok(1, 1), failed(2)});
  EXPECT_TRUE(stop->done(three, 0));
  EXPECT_EQ(stop->evaluations_left(three), 0u);
  EXPECT_EQ(stop->describe(), "after 3 evaluations");
}

TEST(StopCondition, AfterSecondsLooksAtTheClockOnly) {
  const auto stop = stop_after_seconds(2.5);
  EXPECT_FALSE(stop->done(History(), 2.4));
  EXPECT_TRUE(stop->done(History(), 2.5));
  EXPECT_EQ(stop->evaluations_left(History()), std::numeric_limits<size_t>::max());
  EXPECT_THROW(stop_after_seconds(-1), InvalidArgumentError);
  EXPECT_THROW(stop_after_seconds(std::numeric_limits<double>::quiet_NaN()), InvalidArgumentError);
}

TEST(StopCondition, WithoutImprovementWaitsForAWholeWindow) {
  const auto stop = stop_without_improvement(2, 0.01);
  EXPECT_FALSE(stop->done(history_of({ok(0, 1.0), ok(1, 1.1)}), 0));
  EXPECT_TRUE(stop->done(history_of({ok(0, 1.0), ok(1, 1.1), ok(2, 0.995)}), 0));  // under 1% gain
  EXPECT_FALSE(stop->done(history_of({ok(0, 1.0), ok(1, 1.1), ok(2, 0.9)}), 0));
  EXPECT_THROW(stop_without_improvement(0, 0.01), InvalidArgumentError);
  EXPECT_THROW(stop_without_improvement(5, 1.0), InvalidArgumentError);
}

TEST(StopCondition, WhenAnyStopsWithTheFirstAndTakesTheSmallestBudget) {
  std::vector<std::unique_ptr<StopCondition>> conditions;
  conditions.push_back(stop_after_evaluations(10));
  conditions.push_back(stop_after_seconds(60));
  conditions.push_back(stop_after_evaluations(4));
  const auto stop = stop_when_any(std::move(conditions));
  const History three = history_of({ok(0, 1), ok(1, 1), ok(2, 1)});
  EXPECT_FALSE(stop->done(three, 1));
  EXPECT_TRUE(stop->done(three, 61));
  EXPECT_EQ(stop->evaluations_left(three), 1u);
  EXPECT_EQ(stop->describe(), "after 10 evaluations or after 60 s or after 4 evaluations");
  EXPECT_FALSE(stop_when_any({})->done(three, 1e9));
}

// Answers every candidate with a time of its own; every fifth one fails.
class FakeEvaluator : public Evaluator {
 public:
  std::vector<Observation> evaluate(const SearchSpace&, const std::vector<size_t>& candidates) override {
    batches.push_back(candidates.size());
    std::vector<Observation> out;
    for (size_t c : candidates) out.push_back(c % 5 == 4 ? failed(c) : ok(c, 1.0 + (c * 7919 % 101) / 100.0));
    return out;
  }
  std::vector<size_t> batches;
};

TEST(Search, NeverOvershootsAnEvaluationBudget) {
  const SearchSpace space = testing::small_space();
  const auto strategy = make_strategy("random", 1);
  FakeEvaluator evaluator;
  const History h = search(space, *strategy, evaluator, *stop_after_evaluations(21), 8);
  EXPECT_EQ(h.size(), 21u);
  EXPECT_EQ(evaluator.batches, (std::vector<size_t>{8, 8, 5}));
  std::set<size_t> distinct;
  for (const Observation& o : h.observations()) distinct.insert(o.candidate);
  EXPECT_EQ(distinct.size(), 21u);
}

TEST(Search, EndsWhenTheStrategyRunsDry) {
  const SearchSpace space = testing::search_space(
      testing::problem(4096, 4096, 4096), {{"sgemm_tf32x3", {"BM=128", "BN=128", "BK=32", "STAGES=3"}}});
  ASSERT_GT(space.size(), 0u);
  const auto strategy = make_strategy("exhaustive", 0);
  FakeEvaluator evaluator;
  const History h = search(space, *strategy, evaluator, *stop_when_any({}), 16);
  EXPECT_EQ(h.size(), space.size());
}

TEST(Search, ResumesWithoutProposingWhatIsKnown) {
  const SearchSpace space = testing::small_space();
  const History earlier = history_of({ok(0, 0.5), failed(1), ok(2, 3.0)});
  for (const char* name : {"exhaustive", "random", "guided"}) {
    const auto strategy = make_strategy(name, 3);
    FakeEvaluator evaluator;
    const History h = search(space, *strategy, evaluator, *stop_after_evaluations(40), 8, earlier);
    EXPECT_EQ(h.size(), 40u) << name;
    EXPECT_EQ(h.best()->candidate, 0u) << name;  // nothing the fake answers beats 0.5 ms
    for (size_t i = 3; i < h.size(); ++i) EXPECT_GT(h.observations()[i].candidate, 2u) << name;
  }
}

// Answers in the wrong order.
class ScramblingEvaluator : public FakeEvaluator {
 public:
  std::vector<Observation> evaluate(const SearchSpace& space,
                                    const std::vector<size_t>& candidates) override {
    std::vector<Observation> out = FakeEvaluator::evaluate(space, candidates);
    std::reverse(out.begin(), out.end());
    return out;
  }
};

TEST(Search, RefusesAnswersThatDoNotMatchTheQuestion) {
  const SearchSpace space = testing::small_space();
  const auto strategy = make_strategy("random", 1);
  ScramblingEvaluator evaluator;
  EXPECT_THROW(search(space, *strategy, evaluator, *stop_after_evaluations(8), 8), InternalError);
  EXPECT_THROW(search(space, *strategy, evaluator, *stop_after_evaluations(8), 0), InvalidArgumentError);
}

TEST(MakeStrategy, KnowsThreeStrategiesByName) {
  for (const char* name : {"exhaustive", "random", "guided"}) EXPECT_EQ(make_strategy(name, 1)->name(), name);
  EXPECT_THROW(make_strategy("annealing", 1), InvalidArgumentError);
}

}  // namespace
}  // namespace gemmforge::tuner
