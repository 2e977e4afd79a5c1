// Compiling ahead on the tables recorded on an H200: the guided search's guesses cover most of what it
// really asks for next, and guessing changes nothing it finds.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tuner/replay_evaluator.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {
namespace {

// Answers from a recorded table and counts how many candidates asked for were guessed before.
class GuessCounter : public Evaluator {
 public:
  explicit GuessCounter(const RecordedTable& table) : replay_(table) {}
  std::vector<Observation> evaluate(const SearchSpace& space,
                                    const std::vector<size_t>& candidates) override {
    for (size_t c : candidates) {
      ++asked_;
      guessed_hits_ += guessed_.count(c);
    }
    return replay_.evaluate(space, candidates);
  }
  void prefetch(const SearchSpace&, const std::vector<size_t>& candidates) override {
    guesses_ += candidates.size();
    guessed_.insert(candidates.begin(), candidates.end());
  }
  size_t asked() const { return asked_; }
  size_t hits() const { return guessed_hits_; }
  size_t guesses() const { return guesses_; }

 private:
  ReplayEvaluator replay_;
  std::set<size_t> guessed_;
  size_t asked_ = 0, guessed_hits_ = 0, guesses_ = 0;
};

// A strategy that is never asked to guess: upcoming() is the base class's, which guesses nothing.
class NeverGuessed : public Strategy {
 public:
  explicit NeverGuessed(std::unique_ptr<Strategy> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) override {
    return inner_->propose(space, history, count);
  }

 private:
  std::unique_ptr<Strategy> inner_;
};

std::vector<RecordedTable> recorded_tables() {
  std::vector<RecordedTable> tables;
  const std::string folder = std::string(GEMMFORGE_SOURCE_DIR) + "/tests/data/replay";
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::ifstream in(entry.path());
    for (RecordedTable& t : load_recorded_tables(nlohmann::json::parse(in), TemplateLibrary::instance())) {
      tables.push_back(std::move(t));
    }
  }
  return tables;
}

TEST(CompileAhead, GuidedGuessesCoverMostOfWhatItAsksForNext) {
  const std::vector<RecordedTable> tables = recorded_tables();
  ASSERT_GE(tables.size(), 3u);
  for (const RecordedTable& table : tables) {
    const SearchSpace space = recorded_space(table, TemplateLibrary::instance());
    GuessCounter counter(table);
    const std::unique_ptr<Strategy> strategy = make_strategy("guided", 1);
    const History history = search(space, *strategy, counter, *stop_after_evaluations(128), 15);
    ASSERT_EQ(counter.asked(), 128u);
    // The first batch is the seeds, guessed by the previous problem's lane rather than by this search.
    EXPECT_GE(counter.hits(), (counter.asked() - 15) * 6 / 10) << table.problem.to_string();
    EXPECT_LE(counter.guesses(), 2 * counter.asked()) << "at most two batches' worth per batch";

    // The same search with no guess ever made proposes the same candidates in the same order.
    ReplayEvaluator plain(table);
    NeverGuessed again(make_strategy("guided", 1));
    const History unguessed = search(space, again, plain, *stop_after_evaluations(128), 15);
    ASSERT_EQ(unguessed.size(), history.size());
    for (size_t i = 0; i < history.size(); ++i) {
      EXPECT_EQ(unguessed.observations()[i].candidate, history.observations()[i].candidate) << i;
    }
  }
}

}  // namespace
}  // namespace gemmforge::tuner
