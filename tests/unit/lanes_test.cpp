// Tuning on several GPUs with the GPUs injected: lanes whose evaluators answer from a synthetic table
// and record who measured what. Every problem is measured once per GPU model, a lone problem spreads over
// every GPU of its model without changing what the search finds, and the next problem's first batch
// compiles ahead.
#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "search_fixtures.hpp"
#include "tuner/lanes.hpp"
#include "tuner/progress_line.hpp"

namespace gemmforge::tuner {
namespace {

// What every lane did, shared by the lanes of a test.
struct Ledger {
  std::mutex mutex;
  // (model, problem m, candidate) -> lanes that measured it
  std::map<std::tuple<std::string, int64_t, size_t>, std::vector<size_t>> measured;
  std::map<std::pair<std::string, int64_t>, std::vector<size_t>> prefetched;  // (model, m) -> candidates
  std::map<std::pair<std::string, int64_t>, std::vector<size_t>> first_batch;
  std::map<size_t, std::vector<double>> noted_best;  // lane -> best times it was told, in order
};

// A deterministic time per (problem, candidate): the same on every GPU of a model.
double synthetic_ms(const KernelProblem& p, size_t candidate) {
  const uint64_t h = (static_cast<uint64_t>(p.m) * 1000003u + candidate * 7919u) % 1009u;
  return 1.0 + static_cast<double>(h) / 100.0;
}

class LedgerEvaluator : public LaneEvaluator {
 public:
  LedgerEvaluator(Ledger& ledger, std::string model, size_t lane, KernelProblem problem, bool slow)
      : ledger_(ledger), model_(std::move(model)), lane_(lane), problem_(problem), slow_(slow) {}

  std::vector<Observation> evaluate(const SearchSpace&, const std::vector<size_t>& candidates) override {
    std::vector<Observation> out;
    for (size_t c : candidates) {
      if (slow_) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      Observation o;
      o.candidate = c;
      o.time_ms = synthetic_ms(problem_, c);
      out.push_back(o);
      std::lock_guard lock(ledger_.mutex);
      ledger_.measured[{model_, problem_.m, c}].push_back(lane_);
      auto& first = ledger_.first_batch[{model_, problem_.m}];
      if (first.size() < candidates.size() && first.size() == out.size() - 1) first.push_back(c);
    }
    return out;
  }
  void note_best(double ms) override {
    std::lock_guard lock(ledger_.mutex);
    ledger_.noted_best[lane_].push_back(ms);
  }
  void prefetch(const SearchSpace&, const std::vector<size_t>& candidates) override {
    std::lock_guard lock(ledger_.mutex);
    auto& list = ledger_.prefetched[{model_, problem_.m}];
    list.insert(list.end(), candidates.begin(), candidates.end());
  }

 private:
  Ledger& ledger_;
  std::string model_;
  size_t lane_;
  KernelProblem problem_;
  bool slow_;
};

class LedgerLane : public DeviceLane {
 public:
  LedgerLane(Ledger& ledger, std::string model, size_t index, bool slow = false)
      : ledger_(ledger), index_(index), slow_(slow) {
    device_ = DeviceInfo::nominal("sm_90");
    device_.name = std::move(model);
  }
  const DeviceInfo& device() const override { return device_; }
  std::unique_ptr<LaneEvaluator> open(const SearchSpace& space) override {
    return std::make_unique<LedgerEvaluator>(ledger_, device_.name, index_, space.problem(), slow_);
  }

 private:
  Ledger& ledger_;
  DeviceInfo device_;
  size_t index_;
  bool slow_;
};

LaneSearch exhaustive_search(size_t evaluations, size_t batch) {
  LaneSearch search;
  search.space = [](const DeviceInfo&, const KernelProblem& p) {
    return testing::search_space(p, {{"sgemm_tf32x3", {"MIN_BLOCKS=1", "RASTER=8", "BK=32", "STAGES=3"}}});
  };
  search.strategy = [] { return make_strategy("guided", 7); };
  search.stop = [evaluations](const SearchSpace&) { return stop_after_evaluations(evaluations); };
  search.batch = batch;
  return search;
}

std::vector<KernelProblem> problems(size_t count) {
  std::vector<KernelProblem> out;
  for (size_t i = 0; i < count; ++i)
    out.push_back(testing::problem(512 + 64 * static_cast<int64_t>(i), 1024, 1024));
  return out;
}

std::vector<double> costs(const std::vector<KernelProblem>& ps) {
  std::vector<double> out;
  for (const KernelProblem& p : ps) out.push_back(p.flops());
  return out;
}

TEST(Lanes, GpusOfOneModelMeasureEveryProblemOnceBetweenThem) {
  Ledger ledger;
  LedgerLane a(ledger, "H200", 0), b(ledger, "H200", 1);
  const std::vector<KernelProblem> ps = problems(6);
  const std::vector<LaneResult> results = tune_on_lanes({&a, &b}, ps, costs(ps), exhaustive_search(12, 4));
  ASSERT_EQ(results.size(), ps.size());
  std::set<size_t> owners;
  for (const LaneResult& r : results) {
    EXPECT_EQ(r.model, "H200");
    EXPECT_EQ(r.history.size(), 12u);
    owners.insert(r.owner);
  }
  EXPECT_EQ(owners, (std::set<size_t>{0, 1})) << "both GPUs tuned problems of their own";
  size_t total = 0;
  for (const auto& [key, lanes] : ledger.measured) {
    EXPECT_EQ(lanes.size(), 1u) << "candidate " << std::get<2>(key) << " of m=" << std::get<1>(key)
                                << " was measured more than once";
    ++total;
  }
  EXPECT_EQ(total, 6u * 12u);
}

TEST(Lanes, EveryModelTunesEveryProblemForItself) {
  Ledger ledger;
  LedgerLane a(ledger, "H100", 0), b(ledger, "H200", 1), c(ledger, "H100", 2);
  const std::vector<KernelProblem> ps = problems(3);
  const std::vector<LaneResult> results = tune_on_lanes({&a, &b, &c}, ps, costs(ps), exhaustive_search(8, 4));
  ASSERT_EQ(results.size(), 6u);
  std::map<std::string, std::set<size_t>> by_model;
  for (const LaneResult& r : results) by_model[r.model].insert(r.problem);
  EXPECT_EQ(by_model["H100"], (std::set<size_t>{0, 1, 2}));
  EXPECT_EQ(by_model["H200"], (std::set<size_t>{0, 1, 2}));
  for (const LaneResult& r : results) {
    for (size_t lane : r.lanes) {
      EXPECT_EQ(lane == 1, r.model == "H200") << "a GPU measured a problem of another model";
    }
  }
}

TEST(Lanes, ALoneProblemSpreadsOverEveryGpuAndFindsWhatOneGpuFinds) {
  const std::vector<KernelProblem> ps = problems(1);
  Ledger alone_ledger;
  LedgerLane alone(alone_ledger, "H200", 0, /*slow=*/true);
  const std::vector<LaneResult> one = tune_on_lanes({&alone}, ps, costs(ps), exhaustive_search(48, 6));

  Ledger ledger;
  LedgerLane a(ledger, "H200", 0, true), b(ledger, "H200", 1, true), c(ledger, "H200", 2, true);
  const std::vector<LaneResult> three = tune_on_lanes({&a, &b, &c}, ps, costs(ps), exhaustive_search(48, 6));
  ASSERT_EQ(one.size(), 1u);
  ASSERT_EQ(three.size(), 1u);
  std::set<size_t> lanes;
  for (const auto& [key, who] : ledger.measured) {
    ASSERT_EQ(who.size(), 1u);
    lanes.insert(who.front());
  }
  EXPECT_EQ(lanes, (std::set<size_t>{0, 1, 2})) << "every GPU measured a share";
  EXPECT_EQ(three[0].lanes.size(), 3u);
  // The search saw the same observations in the same order: the same candidates, the same best.
  ASSERT_EQ(one[0].history.size(), three[0].history.size());
  for (size_t i = 0; i < one[0].history.size(); ++i) {
    EXPECT_EQ(one[0].history.observations()[i].candidate, three[0].history.observations()[i].candidate) << i;
  }
  ASSERT_NE(three[0].history.best(), nullptr);
  EXPECT_EQ(one[0].history.best()->candidate, three[0].history.best()->candidate);
  // Before the last batch, every lane was told the best time of all the batches before it, whichever
  // lane measured it: each stops timing a clearly beaten candidate as one GPU would.
  double best_before_last = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i + 6 < three[0].history.size(); ++i)
    best_before_last = std::min(best_before_last, three[0].history.observations()[i].time_ms);
  for (size_t lane : {0, 1, 2}) {
    ASSERT_FALSE(ledger.noted_best[lane].empty()) << "lane " << lane;
    EXPECT_EQ(ledger.noted_best[lane].back(), best_before_last) << "lane " << lane;
  }
}

TEST(Lanes, TheNextProblemsFirstBatchCompilesAheadAndIsWhatItsSearchAsksFirst) {
  Ledger ledger;
  LedgerLane lane(ledger, "H200", 0);
  const std::vector<KernelProblem> ps = problems(3);
  LaneSearch search = exhaustive_search(10, 5);
  search.compile_ahead_problems = 1;
  tune_on_lanes({&lane}, ps, costs(ps), search);
  // Problems start costliest first: 2, 1, 0. While 2 runs, 1's first batch compiles, and so on.
  for (int64_t m : {ps[1].m, ps[0].m}) {
    const auto& prefetched = ledger.prefetched[{"H200", m}];
    const auto& first = ledger.first_batch[{"H200", m}];
    ASSERT_EQ(first.size(), 5u);
    for (size_t c : first) {
      EXPECT_NE(std::find(prefetched.begin(), prefetched.end(), c), prefetched.end())
          << "candidate " << c << " of the first batch of m=" << m << " was not compiled ahead";
    }
  }
  const std::pair<std::string, int64_t> first_problem{"H200", ps[2].m};
  EXPECT_FALSE(ledger.prefetched[first_problem].empty()) << "within a search the next batch is guessed";
}

TEST(Lanes, AFailingGpuEndsTheRunWithItsError) {
  class Failing : public DeviceLane {
   public:
    Failing() { device_ = DeviceInfo::nominal("sm_90"); }
    const DeviceInfo& device() const override { return device_; }
    std::unique_ptr<LaneEvaluator> open(const SearchSpace&) override {
      throw std::runtime_error("the worker cannot start");
    }
    DeviceInfo device_;
  };
  Failing lane;
  const std::vector<KernelProblem> ps = problems(2);
  EXPECT_THROW(tune_on_lanes({&lane}, ps, costs(ps), exhaustive_search(4, 2)), std::runtime_error);
}

TEST(Lanes, AGpuThatFailsMidwayStopsTheOthersSoonAndItsErrorIsReported) {
  // Lane 1's evaluators fail on their third batch; lane 0 would otherwise search its problems to the end.
  class Breaking : public LedgerLane {
   public:
    using LedgerLane::LedgerLane;
    std::unique_ptr<LaneEvaluator> open(const SearchSpace& space) override {
      class Evaluator : public LaneEvaluator {
       public:
        explicit Evaluator(std::unique_ptr<LaneEvaluator> inner) : inner_(std::move(inner)) {}
        std::vector<Observation> evaluate(const SearchSpace& s, const std::vector<size_t>& c) override {
          if (++calls_ == 3) throw std::runtime_error("the worker of GPU 1 cannot be restarted");
          return inner_->evaluate(s, c);
        }
        std::unique_ptr<LaneEvaluator> inner_;
        int calls_ = 0;
      };
      return std::make_unique<Evaluator>(LedgerLane::open(space));
    }
  };
  Ledger ledger;
  LedgerLane a(ledger, "H200", 0, /*slow=*/true);
  Breaking b(ledger, "H200", 1, /*slow=*/true);
  const std::vector<KernelProblem> ps = problems(4);
  try {
    tune_on_lanes({&a, &b}, ps, costs(ps), exhaustive_search(60, 4));
    FAIL() << "the failure was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be restarted"), std::string::npos) << e.what();
  }
  std::lock_guard lock(ledger.mutex);
  // GPU 1 failed after 8 candidates; GPU 0, at the same pace, stops within a batch or two of that instead of
  // finishing the 60 of its problem.
  EXPECT_LT(ledger.measured.size(), 40u) << "the other GPU went on after the failure";
}

TEST(LanesProgress, OneLineShowsEveryGpu) {
  ProgressState busy;
  busy.title = "[3/20] f32 nn 4096x4096x4096 align 4/4/4";
  busy.done = 37;
  busy.total = 128;
  busy.best_tflops = 51.23;
  const std::string line = format_lanes({{"GPU0", busy}, {"GPU1", ProgressState()}});
  EXPECT_EQ(line, "GPU0 [3/20] f32 nn 4096x4096x4096 align 4/4/4 37/128 51.2 TFLOP/s | GPU1 idle");
}

// Guessing what comes next must not change what comes next.
TEST(StrategyUpcoming, GuessesChangeNothingAndFixedOrdersGuessExactly) {
  const SearchSpace space = testing::small_space();
  for (const std::string name : {"guided", "exhaustive", "random"}) {
    std::unique_ptr<Strategy> plain = make_strategy(name, 3);
    std::unique_ptr<Strategy> guessing = make_strategy(name, 3);
    History plain_history, guessing_history;
    for (int round = 0; round < 6; ++round) {
      const std::vector<size_t> a = plain->propose(space, plain_history, 8);
      const std::vector<size_t> b = guessing->propose(space, guessing_history, 8);
      ASSERT_EQ(a, b) << name << " round " << round;
      const std::vector<size_t> guess = guessing->upcoming(space, guessing_history, b, 8);
      for (size_t c : guess) {
        EXPECT_FALSE(guessing_history.contains(c)) << name;
        EXPECT_EQ(std::find(b.begin(), b.end(), c), b.end()) << name << ": a pending candidate guessed again";
      }
      for (size_t c : a) {
        Observation o;
        o.candidate = c;
        o.time_ms = 1.0 + static_cast<double>((c * 7919u) % 101u);
        plain_history.add(o);
        guessing_history.add(o);
      }
      if (name != "guided") {
        EXPECT_EQ(guess, plain->propose(space, plain_history, 8)) << name << ": a fixed order is known";
        const std::vector<size_t> again = guessing->propose(space, guessing_history, 8);
        for (size_t c : again) {
          Observation o;
          o.candidate = c;
          o.time_ms = 2.0;
          plain_history.add(o);
          guessing_history.add(o);
        }
      } else {
        EXPECT_FALSE(guess.empty()) << "guided guesses its next batch";
      }
    }
  }
}

}  // namespace
}  // namespace gemmforge::tuner
