// Strategies replayed on trial tables: the tables an exhaustive run recorded on a GPU, committed under
// tests/data/replay/, and synthetic ones generated here. On both, the guided strategy must come within
// 3% of the exhaustive best with at most a fifth of the evaluations (median over seeds).
#include "tuner/replay_evaluator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gemmforge/error.hpp"
#include "synthetic_tables.hpp"

namespace gemmforge::tuner {
namespace {

constexpr double kWithinBest = 1.03;  // of the exhaustive best time
constexpr size_t kBudgetDivisor = 5;  // a fifth of the exhaustive run's evaluations
constexpr uint64_t kSeeds[] = {1, 2, 3, 4, 5, 6, 7};
constexpr size_t kBatch = 8;
constexpr size_t kRecordedProblemsNeeded = 3;

const std::string kRecordedFolder = std::string(GEMMFORGE_SOURCE_DIR) + "/tests/data/replay";

// A table and the space it was recorded over.
struct Replay {
  std::string origin;
  RecordedTable table;
  SearchSpace space;
  double best_ms = 0;

  std::string name() const { return fmt::format("{}: {}", origin, table.problem.to_string()); }
};

std::vector<Replay> replays_of(const nlohmann::json& document, const std::string& origin) {
  std::vector<Replay> out;
  for (RecordedTable& table : load_recorded_tables(document, TemplateLibrary::instance())) {
    SearchSpace space = recorded_space(table, TemplateLibrary::instance());
    const std::optional<double> best = ReplayEvaluator(table).best_time_ms(space);
    if (!best)
      throw InvalidArgumentError(
          fmt::format("{}: no ok trial in the table of {}", origin, table.problem.to_string()));
    out.push_back(Replay{origin, std::move(table), std::move(space), *best});
  }
  return out;
}

// Every tests/data/replay/*.json, in name order.
const std::vector<Replay>& recorded_replays() {
  static const std::vector<Replay> replays = [] {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(kRecordedFolder)) {
      for (const auto& entry : std::filesystem::directory_iterator(kRecordedFolder)) {
        if (entry.path().extension() == ".json") files.push_back(entry.path());
      }
    }
    std::sort(files.begin(), files.end());
    std::vector<Replay> all;
    for (const auto& file : files) {
      std::ifstream in(file);
      for (Replay& r : replays_of(nlohmann::json::parse(in), file.filename().string()))
        all.push_back(std::move(r));
    }
    return all;
  }();
  return replays;
}

const std::vector<Replay>& synthetic_replays() {
  static const std::vector<Replay> replays =
      replays_of(synthetic::synthetic_export(TemplateLibrary::instance(), synthetic::standard_runs(), 2025),
                 "synthetic");
  return replays;
}

void expect_table_covers_its_space(const Replay& r) {
  const size_t covered = ReplayEvaluator(r.table).covered(r.space);
  EXPECT_EQ(covered, r.space.size())
      << r.name() << ": the table holds " << covered << " of the " << r.space.size()
      << " candidates of the space it was recorded over; record an exhaustive run of that space (a "
         "candidate missing from the table counts as failed)";
}

// Best time each seed's run of the strategy finds within the budget, over the exhaustive best, sorted.
std::vector<double> best_ratios(const Replay& r, const std::string& strategy_name, size_t budget) {
  std::vector<double> ratios;
  for (uint64_t seed : kSeeds) {
    ReplayEvaluator evaluator(r.table);
    const auto strategy = make_strategy(strategy_name, seed);
    const History h = search(r.space, *strategy, evaluator, *stop_after_evaluations(budget), kBatch);
    EXPECT_LE(h.size(), budget);
    ratios.push_back(h.best() != nullptr ? h.best()->time_ms / r.best_ms
                                         : std::numeric_limits<double>::infinity());
  }
  std::sort(ratios.begin(), ratios.end());
  return ratios;
}

void expect_guided_reaches_the_best(const Replay& r) {
  const size_t budget = r.space.size() / kBudgetDivisor;
  const std::vector<double> ratios = best_ratios(r, "guided", budget);
  const double median = ratios[ratios.size() / 2];
  // The same budget spent at random, printed beside it, shows what the model adds.
  const std::vector<double> random = best_ratios(r, "random", budget);
  fmt::print("{}: {} of {} evaluations, median best / exhaustive best: guided {:.4f}, random {:.4f}\n",
             r.name(), budget, r.space.size(), median, random[random.size() / 2]);
  EXPECT_LE(median, kWithinBest) << r.name() << ": with " << budget << " of " << r.space.size()
                                 << " evaluations the guided strategy's median best is " << median
                                 << " x the exhaustive best (seeds from best to worst: "
                                 << fmt::format("{:.3f}", fmt::join(ratios, ", ")) << ")";
}

void expect_exhaustive_finds_the_best(const Replay& r) {
  ReplayEvaluator evaluator(r.table);
  const auto strategy = make_strategy("exhaustive", 0);
  const History h = search(r.space, *strategy, evaluator, *stop_when_any({}), kBatch);
  EXPECT_EQ(h.size(), r.space.size()) << r.name();
  ASSERT_NE(h.best(), nullptr) << r.name();
  EXPECT_EQ(h.best()->time_ms, r.best_ms) << r.name();
}

void expect_random_reproducible(const Replay& r) {
  const auto run = [&](uint64_t seed) {
    ReplayEvaluator evaluator(r.table);
    const auto strategy = make_strategy("random", seed);
    const History h = search(r.space, *strategy, evaluator,
                             *stop_after_evaluations(r.space.size() / kBudgetDivisor), kBatch);
    std::vector<size_t> order;
    for (const Observation& o : h.observations()) order.push_back(o.candidate);
    return order;
  };
  EXPECT_EQ(run(11), run(11)) << r.name();
  EXPECT_NE(run(11), run(12)) << r.name();
}

// Recorded tables ------------------------------------------------------------------------------------

TEST(RecordedReplay, AtLeastThreeProblemsAreRecorded) {
  if (recorded_replays().size() < kRecordedProblemsNeeded) {
    FAIL()
        << kRecordedFolder << " holds trial tables of " << recorded_replays().size() << " problem(s); the "
        << "replay test needs exhaustive runs of at least " << kRecordedProblemsNeeded
        << " problems recorded on a GPU, each exported with all trials (gemmforge export --all-trials) into "
           "a .json file there. The synthetic tables of SyntheticReplay stand in until then.";
  }
}

TEST(RecordedReplay, TablesCoverTheSpaceTheyWereRecordedOver) {
  for (const Replay& r : recorded_replays()) expect_table_covers_its_space(r);
}

TEST(RecordedReplay, GuidedComesWithin3PercentOfTheBestWithAFifthOfTheEvaluations) {
  for (const Replay& r : recorded_replays()) expect_guided_reaches_the_best(r);
}

TEST(RecordedReplay, ExhaustiveFindsTheBest) {
  for (const Replay& r : recorded_replays()) expect_exhaustive_finds_the_best(r);
}

TEST(RecordedReplay, RandomIsReproduciblePerSeed) {
  for (const Replay& r : recorded_replays()) expect_random_reproducible(r);
}

// Synthetic tables -----------------------------------------------------------------------------------

TEST(SyntheticReplay, TablesCoverTheSpaceTheyWereRecordedOver) {
  ASSERT_EQ(synthetic_replays().size(), synthetic::standard_runs().size());
  for (const Replay& r : synthetic_replays()) expect_table_covers_its_space(r);
}

TEST(SyntheticReplay, GuidedComesWithin3PercentOfTheBestWithAFifthOfTheEvaluations) {
  for (const Replay& r : synthetic_replays()) expect_guided_reaches_the_best(r);
}

TEST(SyntheticReplay, ExhaustiveFindsTheBest) {
  for (const Replay& r : synthetic_replays()) expect_exhaustive_finds_the_best(r);
}

TEST(SyntheticReplay, RandomIsReproduciblePerSeed) {
  for (const Replay& r : synthetic_replays()) expect_random_reproducible(r);
}

TEST(SyntheticReplay, StopConditionsEndTheReplay) {
  const Replay& r = synthetic_replays().front();
  ReplayEvaluator evaluator(r.table);
  const auto guided = make_strategy("guided", 1);
  // A plateau: the run ends exactly `window` evaluations after its last gain.
  const History plateau = search(r.space, *guided, evaluator, *stop_without_improvement(10, 0.0), 1);
  EXPECT_EQ(plateau.since_improvement(), 10u);
  EXPECT_LT(plateau.size(), r.space.size());
  const auto random = make_strategy("random", 1);
  EXPECT_EQ(search(r.space, *random, evaluator, *stop_after_seconds(0), kBatch).size(), 0u);
  std::vector<std::unique_ptr<StopCondition>> either;
  either.push_back(stop_after_seconds(3600));
  either.push_back(stop_after_evaluations(13));
  EXPECT_EQ(search(r.space, *random, evaluator, *stop_when_any(std::move(either)), kBatch).size(), 13u);
}

// The evaluator and the space of a table -------------------------------------------------------------

nlohmann::json small_synthetic_export() {
  std::vector<synthetic::SyntheticRun> runs = {synthetic::standard_runs().front()};
  return synthetic::synthetic_export(TemplateLibrary::instance(), runs, 7);
}

TEST(ReplayEvaluator, RebuildsThePinnedSpaceTheTableWasRecordedOver) {
  const synthetic::SyntheticRun run = synthetic::standard_runs().front();
  const std::vector<RecordedTable> tables =
      load_recorded_tables(small_synthetic_export(), TemplateLibrary::instance());
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0].problem, run.problem);
  EXPECT_EQ(tables[0].device.sm_count, 132);
  const SearchSpace space = recorded_space(tables[0], TemplateLibrary::instance());
  size_t expected = 0;
  for (const auto& [name, pins] : run.pins) {
    expected +=
        Space::build(TemplateLibrary::instance().get(name), tables[0].device, run.problem, pins).size();
  }
  EXPECT_EQ(space.size(), expected);
  EXPECT_EQ(space.size(), tables[0].trials.size());
}

TEST(ReplayEvaluator, AnswersWhatTheTableRecordedAndFailsWhatItLacks) {
  nlohmann::json document = small_synthetic_export();
  auto& trials = document["trials"];
  // Two trials other than the best (which "results" holds too): one becomes a crash, one disappears.
  const std::string best_config = document["results"][0]["config"];
  std::vector<size_t> others;
  for (size_t i = 0; i < trials.size() && others.size() < 2; ++i) {
    if (trials[i]["config"] != best_config) others.push_back(i);
  }
  ASSERT_EQ(others.size(), 2u);
  trials[others[0]]["status"] = "crashed";
  trials[others[0]]["measurement"] = nlohmann::json::object();
  const nlohmann::json crashed = trials[others[0]];
  const nlohmann::json dropped = trials[others[1]];
  trials.erase(others[1]);

  const std::vector<RecordedTable> tables = load_recorded_tables(document, TemplateLibrary::instance());
  const SearchSpace space = recorded_space(tables[0], TemplateLibrary::instance());
  ReplayEvaluator evaluator(tables[0]);
  const auto index = [&](const nlohmann::json& trial) {
    return space.find(Config::parse_key(trial["template"], trial["config"]));
  };
  const int64_t crash = index(crashed);
  const int64_t missing = index(dropped);
  const int64_t fine = index(document["results"][0]);
  ASSERT_GE(crash, 0);
  ASSERT_GE(missing, 0);
  ASSERT_GE(fine, 0);
  const std::vector<Observation> answers = evaluator.evaluate(
      space, {static_cast<size_t>(crash), static_cast<size_t>(missing), static_cast<size_t>(fine)});
  ASSERT_EQ(answers.size(), 3u);
  EXPECT_EQ(answers[0].outcome, Outcome::kCrashed);
  EXPECT_EQ(answers[1].outcome, Outcome::kInvalid);
  EXPECT_TRUE(std::isinf(answers[1].time_ms));
  EXPECT_TRUE(answers[2].ok());
  EXPECT_EQ(answers[2].time_ms, document["results"][0]["measurement"]["time_median_ms"].get<double>());
  EXPECT_GT(answers[2].registers, 0);
  EXPECT_EQ(evaluator.covered(space), space.size() - 1);
}

TEST(ReplayEvaluator, RefusesAnExportWithoutItsTrials) {
  nlohmann::json document = small_synthetic_export();
  document.erase("trials");
  try {
    load_recorded_tables(document, TemplateLibrary::instance());
    FAIL() << "an export of best results only was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--all-trials"), std::string::npos) << e.what();
  }
}

TEST(ReplayEvaluator, RefusesAConfigItsTemplateDoesNotAllow) {
  nlohmann::json document = small_synthetic_export();
  document["trials"][0]["config"] = "BM=128";
  EXPECT_THROW(load_recorded_tables(document, TemplateLibrary::instance()), InvalidArgumentError);
}

}  // namespace
}  // namespace gemmforge::tuner
