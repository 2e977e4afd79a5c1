// The pieces of a tuning search and how they meet: the candidates (every template's space for one
// problem), what has been observed, a strategy proposing what to try next, a condition saying when to
// stop, and an evaluator that measures candidates. Evaluators are swappable so strategies run on
// recorded trials without a GPU exactly as they run on one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/space.hpp"
#include "tuner/problem_rig.hpp"

namespace gemmforge::tuner {

/// Every candidate config for one problem on one device: the spaces of several templates, numbered
/// as one flat range (template 0's configs first).
class SearchSpace {
 public:
  SearchSpace(std::vector<Space> spaces, DeviceInfo device, KernelProblem problem);

  size_t size() const { return offsets_.back(); }
  bool empty() const { return size() == 0; }
  const std::vector<Space>& spaces() const { return spaces_; }
  /// Which template space holds flat candidate i, and its index there.
  size_t space_of(size_t i) const;
  size_t index_in_space(size_t i) const { return i - offsets_[space_of(i)]; }
  const Space& space(size_t i) const { return spaces_[space_of(i)]; }
  Config config(size_t i) const { return space(i).config(index_in_space(i)); }
  /// Flat index of a config, or -1 when no space holds it.
  int64_t find(const Config& config) const;

  const DeviceInfo& device() const { return device_; }
  const KernelProblem& problem() const { return problem_; }

 private:
  std::vector<Space> spaces_;
  std::vector<size_t> offsets_;  // offsets_[s] = first flat index of space s; back() = size()
  DeviceInfo device_;
  KernelProblem problem_;
};

/// What evaluating one candidate found.
struct Observation {
  size_t candidate = 0;
  Outcome outcome = Outcome::kOk;
  double time_ms = std::numeric_limits<double>::infinity();  ///< median; infinite unless outcome is ok
  int registers = 0;
  int occupancy_blocks = 0;
  bool ok() const { return outcome == Outcome::kOk; }
};

/// Observations so far, in the order they were made.
class History {
 public:
  void add(const Observation& observation);
  const std::vector<Observation>& observations() const { return observations_; }
  size_t size() const { return observations_.size(); }
  bool contains(size_t candidate) const;
  /// The fastest ok observation, or nullptr.
  const Observation* best() const;
  /// Evaluations since the best time last improved by more than `tolerance` (relative). Small gains
  /// add up: each is measured against the best at the last counted improvement, not the latest best.
  /// All evaluations when none was ok.
  size_t since_improvement(double tolerance = 0.0) const;

 private:
  static constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<Observation> observations_;
  std::vector<uint8_t> seen_;  // by candidate index, grown on demand
  size_t best_ = kNone;        // position of the fastest ok observation

  // since_improvement() resumes its scan where the last call with the same tolerance stopped, because
  // stop conditions ask after every batch; without this an exhaustive run would be quadratic.
  struct ImprovementScan {
    double tolerance = 0;
    size_t scanned = 0;
    bool any_ok = false;
    double reference_ms = 0;
    size_t last_improvement = 0;
  };
  mutable ImprovementScan scan_;
};

/// Proposes candidates to evaluate next.
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  /// Up to `count` candidates not yet in `history`, best guesses first; empty when nothing is left.
  virtual std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) = 0;
  /// A guess at what propose() will give after `pending` (proposed, not yet observed) joins `history`,
  /// up to `count` candidates, for compiling ahead. Changes nothing: the search proposes exactly what it
  /// would without it. Exact for fixed orders; none by default.
  virtual std::vector<size_t> upcoming(const SearchSpace& /*space*/, const History& /*history*/,
                                       const std::vector<size_t>& /*pending*/, size_t /*count*/) const {
    return {};
  }
};

/// "exhaustive", "random" or "guided" (the default); throws InvalidArgumentError for other names.
std::unique_ptr<Strategy> make_strategy(const std::string& name, uint64_t seed);

/// Configs a problem's search measures before its strategy's own picks: what served the problem before it
/// was tuned, so that the search ends no slower than that.
using FirstCandidates =
    std::function<std::vector<Config>(const DeviceInfo& device, const KernelProblem& problem)>;

/// `then`, but each search first measures the candidates `first` names for its problem on its device, in
/// batches of their own and in the order given. Configs outside the space, and those the history holds
/// already, are passed over; a `first` that throws names none (a warning says why).
std::unique_ptr<Strategy> measure_first(FirstCandidates first, std::unique_ptr<Strategy> then);

/// Says when a search has done enough.
class StopCondition {
 public:
  virtual ~StopCondition() = default;
  virtual bool done(const History& history, double elapsed_s) const = 0;
  virtual std::string describe() const = 0;
  /// How many more evaluations it allows at most, so that search() never overshoots an evaluation
  /// budget with a whole batch. Unlimited unless the condition counts evaluations.
  virtual size_t evaluations_left(const History& history) const;
};

std::unique_ptr<StopCondition> stop_after_evaluations(size_t count);
std::unique_ptr<StopCondition> stop_after_seconds(double seconds);
/// Stops when `window` evaluations in a row improved the best time by at most `tolerance` (relative).
std::unique_ptr<StopCondition> stop_without_improvement(size_t window, double tolerance);
/// Stops as soon as any of the conditions does.
std::unique_ptr<StopCondition> stop_when_any(std::vector<std::unique_ptr<StopCondition>> conditions);

/// Measures candidates: on a GPU through the isolated worker, or from a recorded table.
class Evaluator {
 public:
  virtual ~Evaluator() = default;
  /// One observation per candidate, in order. Failures are observations, not exceptions.
  virtual std::vector<Observation> evaluate(const SearchSpace& space,
                                            const std::vector<size_t>& candidates) = 0;
  /// The best time measured for the problem elsewhere: by another GPU of the model measuring shares of the
  /// same batches. A candidate clearly slower than it need not be timed in full, as with the evaluator's
  /// own best. A hint; the default ignores it.
  virtual void note_best(double /*ms*/) {}
  /// Candidates likely to be asked for soon: an evaluator that compiles may start on them while it
  /// measures the current batch. A hint; nothing is measured or recorded.
  virtual void prefetch(const SearchSpace& /*space*/, const std::vector<size_t>& /*candidates*/) {}
};

/// Runs strategy against evaluator until the stop condition holds or the strategy runs dry,
/// proposing `batch` candidates at a time (so an evaluator may compile one batch while measuring
/// the previous). Returns the history.
History search(const SearchSpace& space, Strategy& strategy, Evaluator& evaluator, const StopCondition& stop,
               size_t batch);
/// As above, continuing from observations made earlier (a resumed run: trials already stored). They
/// count towards the stop condition and inform the strategy, and are never proposed again. While a batch
/// is measured, `guessed_batches` batches' worth of the strategy's guesses at what comes next compile ahead.
History search(const SearchSpace& space, Strategy& strategy, Evaluator& evaluator, const StopCondition& stop,
               size_t batch, History history, size_t guessed_batches = 2);

}  // namespace gemmforge::tuner
