// The strategies on their own: what each proposes and in which order, its reproducibility, and the
// neighbourhood the guided strategy's local search walks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "gemmforge/error.hpp"
#include "model/analytic.hpp"
#include "search_fixtures.hpp"
#include "tuner/candidate_table.hpp"
#include "tuner/neighbourhood.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {
namespace {

// Proposes batch after batch, recording each proposal as a failed evaluation, until the strategy runs dry.
std::vector<size_t> drain(Strategy& strategy, const SearchSpace& space, size_t batch) {
  History history;
  std::vector<size_t> order;
  for (;;) {
    const std::vector<size_t> proposed = strategy.propose(space, history, batch);
    if (proposed.empty()) return order;
    EXPECT_LE(proposed.size(), batch);
    for (size_t c : proposed) {
      Observation o;
      o.candidate = c;
      o.outcome = Outcome::kLaunchError;
      history.add(o);
      order.push_back(c);
    }
  }
}

void expect_each_candidate_once(const std::vector<size_t>& order, const SearchSpace& space) {
  EXPECT_EQ(order.size(), space.size());
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), space.size());
  EXPECT_LT(*std::max_element(order.begin(), order.end()), space.size());
}

TEST(ExhaustiveStrategy, ProposesEveryCandidateOnceFastestEstimateFirst) {
  const SearchSpace space = testing::small_space();
  const auto strategy = make_strategy("exhaustive", 0);
  const std::vector<size_t> order = drain(*strategy, space, 16);
  expect_each_candidate_once(order, space);
  const std::vector<double> estimates = estimate_all(space, CandidateTable(space));
  for (size_t i = 1; i < order.size(); ++i) EXPECT_LE(estimates[order[i - 1]], estimates[order[i]]);
}

TEST(RandomStrategy, IsUniformWithoutReplacementAndReproduciblePerSeed) {
  const SearchSpace space = testing::small_space();
  const std::vector<size_t> a = drain(*make_strategy("random", 7), space, 10);
  const std::vector<size_t> b = drain(*make_strategy("random", 7), space, 3);
  const std::vector<size_t> c = drain(*make_strategy("random", 8), space, 10);
  expect_each_candidate_once(a, space);
  EXPECT_EQ(a, b);  // the batch size does not change the sequence
  EXPECT_NE(a, c);
  // The first tenth of a uniform shuffle holds about a tenth of each template's candidates.
  const size_t tenth = space.size() / 10;
  const auto simt = static_cast<size_t>(
      std::count_if(a.begin(), a.begin() + tenth, [&](size_t i) { return space.space_of(i) == 0; }));
  const double expected = tenth * static_cast<double>(space.spaces()[0].size()) / space.size();
  EXPECT_NEAR(simt, expected, 4 * std::sqrt(expected) + 1);
}

TEST(GuidedStrategy, ProposesEveryCandidateOnceAndTheSameForTheSameSeed) {
  const SearchSpace space = testing::small_space();
  const std::vector<size_t> a = drain(*make_strategy("guided", 5), space, 8);
  const std::vector<size_t> b = drain(*make_strategy("guided", 5), space, 8);
  expect_each_candidate_once(a, space);
  EXPECT_EQ(a, b);
}

TEST(GuidedStrategy, StartsFromTheManifestSeeds) {
  // The unpinned 4096^3 spaces hold most seed configs of both manifests; the others are replaced by
  // their nearest candidates, in the same first proposals.
  const SearchSpace space =
      testing::search_space(testing::problem(4096, 4096, 4096), {{"sgemm_simt", {}}, {"sgemm_tf32x3", {}}});
  size_t seed_count = 0;
  std::set<size_t> present;
  for (const Space& s : space.spaces()) {
    for (const Config& seed : s.kernel_template().manifest.seeds()) {
      ++seed_count;
      if (space.find(seed) >= 0) present.insert(static_cast<size_t>(space.find(seed)));
    }
  }
  ASSERT_GE(present.size(), 2u);
  History none;
  const std::vector<size_t> first = make_strategy("guided", 1)->propose(space, none, seed_count);
  for (size_t seed : present)
    EXPECT_EQ(std::count(first.begin(), first.end(), seed), 1) << space.config(seed).key();
}

// Answers every candidate with the same time.
class FlatEvaluator : public Evaluator {
 public:
  std::vector<Observation> evaluate(const SearchSpace&, const std::vector<size_t>& candidates) override {
    std::vector<Observation> out;
    for (size_t c : candidates) {
      Observation o;
      o.candidate = c;
      o.time_ms = 1.0;
      out.push_back(o);
    }
    return out;
  }
};

std::vector<size_t> candidates_of(const History& h) {
  std::vector<size_t> out;
  for (const Observation& o : h.observations()) out.push_back(o.candidate);
  return out;
}

TEST(Strategies, ServeOneSearchAfterAnother) {
  // The second search of the same problem starts afresh, whether its space sits where the first one
  // did or not, and a search of another problem in between changes nothing.
  FlatEvaluator evaluator;
  for (const char* name : {"exhaustive", "random", "guided"}) {
    const auto strategy = make_strategy(name, 4);
    std::vector<size_t> first, again;
    {
      const SearchSpace space = testing::small_space();
      first = candidates_of(search(space, *strategy, evaluator, *stop_after_evaluations(20), 8));
    }
    {
      const SearchSpace other = testing::search_space(
          testing::problem(1000, 2000, 300), {{"sgemm_tf32x3", {"BK=32", "STAGES=3", "MIN_BLOCKS=1"}}});
      EXPECT_EQ(search(other, *strategy, evaluator, *stop_after_evaluations(20), 8).size(), 20u) << name;
    }
    {
      const SearchSpace space = testing::small_space();
      again = candidates_of(search(space, *strategy, evaluator, *stop_after_evaluations(20), 8));
    }
    EXPECT_EQ(first, again) << name;
  }
}

TEST(MeasureFirst, ProposesTheNamedCandidatesFirstInTheirOwnBatchesThenItsStrategysPicks) {
  const SearchSpace space = testing::small_space();
  const size_t last = space.size() - 1;
  const Config outside("sgemm_simt", {{"BM", 7}});
  std::vector<KernelProblem> asked;
  const FirstCandidates first = [&](const DeviceInfo&, const KernelProblem& problem) {
    asked.push_back(problem);
    return std::vector<Config>{space.config(5), outside,         space.config(last),
                               space.config(5), space.config(2), space.config(9)};
  };
  FlatEvaluator evaluator;
  const auto strategy = measure_first(first, make_strategy("exhaustive", 0));
  EXPECT_EQ(strategy->name(), "exhaustive");
  const std::vector<size_t> order = drain(*strategy, space, 3);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], space.problem());
  // Named ones first, in their order, once each, the one outside the space passed over; the second batch
  // holds only the last of them; then the exhaustive order without them.
  ASSERT_GE(order.size(), 6u);
  EXPECT_EQ(std::vector<size_t>(order.begin(), order.begin() + 4), (std::vector<size_t>{5, last, 2, 9}));
  expect_each_candidate_once(order, space);
  const std::vector<size_t> exhaustive = drain(*make_strategy("exhaustive", 0), space, 3);
  std::vector<size_t> rest;
  for (size_t c : exhaustive) {
    if (c != 5 && c != last && c != 2 && c != 9) rest.push_back(c);
  }
  EXPECT_EQ(std::vector<size_t>(order.begin() + 4, order.end()), rest);

  // A search resumed with some of them stored measures only the others first; a new search asks again.
  History stored;
  Observation o;
  o.candidate = last;
  o.outcome = Outcome::kLaunchError;
  stored.add(o);
  const auto resumed = measure_first(first, make_strategy("exhaustive", 0));
  const History history = search(space, *resumed, evaluator, *stop_after_evaluations(4), 2, stored);
  EXPECT_EQ(candidates_of(history), (std::vector<size_t>{last, 5, 2, 9}));
  EXPECT_EQ(asked.size(), 2u);
}

TEST(MeasureFirst, GuessesTheFirstCandidatesLeftThenItsStrategysGuesses) {
  const SearchSpace space = testing::small_space();
  const FirstCandidates first = [&](const DeviceInfo&, const KernelProblem&) {
    return std::vector<Config>{space.config(5), space.config(7), space.config(2)};
  };
  const auto strategy = measure_first(first, make_strategy("exhaustive", 0));
  History history;
  EXPECT_TRUE(strategy->upcoming(space, history, {}, 4).empty());  // no search started yet
  const std::vector<size_t> batch = strategy->propose(space, history, 2);
  EXPECT_EQ(batch, (std::vector<size_t>{5, 7}));
  EXPECT_EQ(strategy->upcoming(space, history, batch, 4), (std::vector<size_t>{2}));
  EXPECT_EQ(strategy->propose(space, history, 2), (std::vector<size_t>{2}));
  // Then the exhaustive strategy proposes, and guesses as it would alone.
  for (const size_t c : {5, 7, 2}) {
    Observation o;
    o.candidate = c;
    o.outcome = Outcome::kLaunchError;
    history.add(o);
  }
  const auto alone = make_strategy("exhaustive", 0);
  const std::vector<size_t> next = strategy->propose(space, history, 1);
  EXPECT_EQ(next, alone->propose(space, history, 1));
  const std::vector<size_t> guesses = strategy->upcoming(space, history, next, 3);
  EXPECT_EQ(guesses.size(), 3u);
  EXPECT_EQ(guesses, alone->upcoming(space, history, next, 3));
}

TEST(MeasureFirst, AFailingSourceOfFirstCandidatesLeavesTheStrategyAsItIs) {
  const SearchSpace space = testing::small_space();
  const FirstCandidates failing = [](const DeviceInfo&, const KernelProblem&) -> std::vector<Config> {
    throw DatabaseError("cannot read the results");
  };
  const auto strategy = measure_first(failing, make_strategy("exhaustive", 0));
  EXPECT_EQ(drain(*strategy, space, 5), drain(*make_strategy("exhaustive", 0), space, 5));
}

TEST(Neighbourhood, MovesOneParameterAnywhereOrTwoToAdjacentValues) {
  const SearchSpace space = testing::small_space();
  const CandidateTable table(space);
  const Neighbourhood neighbourhood(space, table);
  for (size_t c = 0; c < space.size(); c += 13) {
    const size_t s = table.space_of(c);
    const auto& parameters = space.spaces()[s].kernel_template().manifest.parameters();
    const std::vector<size_t> around = neighbourhood.of(c);
    EXPECT_EQ(std::set<size_t>(around.begin(), around.end()).size(), around.size()) << "listed twice";
    for (size_t n : around) {
      EXPECT_NE(n, c);
      if (table.space_of(n) != s) continue;
      std::vector<size_t> moved;
      for (size_t p = 0; p < parameters.size(); ++p) {
        if (table.level(n, p) != table.level(c, p)) moved.push_back(p);
      }
      ASSERT_GE(moved.size(), 1u);
      ASSERT_LE(moved.size(), 2u);
      if (moved.size() == 2) {
        for (size_t p : moved) {
          // Adjacent: no value of the domain lies between the old and the new one.
          const auto& domain = parameters[p].values;
          const int64_t from = domain[table.level(c, p)], to = domain[table.level(n, p)];
          EXPECT_EQ(
              std::count_if(domain.begin(), domain.end(),
                            [&](int64_t v) { return v > std::min(from, to) && v < std::max(from, to); }),
              0);
        }
      }
    }
  }
}

TEST(Neighbourhood, FindsEverySingleParameterMoveInTheSpace) {
  const SearchSpace space = testing::small_space();
  const CandidateTable table(space);
  const Neighbourhood neighbourhood(space, table);
  const size_t c = space.size() / 3;
  const std::vector<size_t> around = neighbourhood.of(c);
  const std::set<size_t> listed(around.begin(), around.end());
  const size_t s = table.space_of(c);
  for (size_t other = 0; other < space.size(); ++other) {
    if (table.space_of(other) != s || other == c) continue;
    size_t differences = 0;
    for (size_t p = 0; p < table.parameter_count(s); ++p)
      differences += table.level(c, p) != table.level(other, p);
    if (differences == 1) {
      EXPECT_TRUE(listed.count(other)) << space.config(other).key();
    }
  }
}

// Shared parameters (by name) of a candidate of one template that a candidate of another matches.
size_t agreements(const Config& here, const Config& there, size_t* shared) {
  size_t count = 0;
  *shared = 0;
  for (const auto& [name, value] : here.values()) {
    if (const auto other = there.find(name)) {
      ++*shared;
      count += *other == value;
    }
  }
  return count;
}

TEST(Neighbourhood, CrossesToTheClosestCandidatesOfOtherTemplates) {
  const SearchSpace space = testing::small_space();  // simt pinned to BK=16, tf32x3 to BK=32
  const CandidateTable table(space);
  const Neighbourhood neighbourhood(space, table);
  size_t crossings = 0;
  for (size_t c = space.spaces()[0].size(); c < space.size(); c += 3) {  // tf32x3 candidates
    const Config here = space.config(c);
    size_t closest = 0, shared = 0;
    for (size_t other = 0; other < space.spaces()[0].size(); ++other) {
      closest = std::max(closest, agreements(here, space.config(other), &shared));
    }
    for (size_t n : neighbourhood.of(c)) {
      if (table.space_of(n) == 1) continue;
      ++crossings;
      EXPECT_EQ(agreements(here, space.config(n), &shared), closest)
          << here.key() << " -> " << space.config(n).key();
      EXPECT_GE(2 * closest, shared);
    }
  }
  EXPECT_GT(crossings, 0u);
}

}  // namespace
}  // namespace gemmforge::tuner
