// The strategies make_strategy() knows, each built in its own file. Internal to src/tuner.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tuner/search.hpp"

namespace gemmforge::tuner {

/// Tells whether a strategy is asked about the search it has been serving: the same space (not merely
/// one built at the same address) and a history that only grew. Strategies start over otherwise, so
/// one strategy object may serve several searches in turn.
class SearchIdentity {
 public:
  /// True when (space, history) continue the search last seen; then remembers them.
  bool continues(const SearchSpace& space, const History& history) {
    std::vector<std::pair<std::string, size_t>> templates;
    for (const Space& s : space.spaces())
      templates.emplace_back(s.kernel_template().manifest.name(), s.size());
    const bool same = space_ == &space && problem_ == space.problem() && device_ == space.device().name &&
                      templates_ == templates && history.size() >= history_size_;
    space_ = &space;
    problem_ = space.problem();
    device_ = space.device().name;
    templates_ = std::move(templates);
    history_size_ = history.size();
    return same;
  }
  /// Whether `space` is the one last seen (without remembering anything).
  bool same(const SearchSpace& space) const { return space_ == &space && problem_ == space.problem(); }

 private:
  const SearchSpace* space_ = nullptr;
  KernelProblem problem_;
  std::string device_;
  std::vector<std::pair<std::string, size_t>> templates_;
  size_t history_size_ = 0;
};

/// Up to `count` of `order[from..]` in order, passing over those `history` holds or `pending` lists: the
/// guesses of a strategy proposing from a fixed list.
inline std::vector<size_t> untried_from(const std::vector<size_t>& order, size_t from, const History& history,
                                        const std::vector<size_t>& pending, size_t count) {
  std::vector<size_t> out;
  for (size_t i = from; i < order.size() && out.size() < count; ++i) {
    const size_t candidate = order[i];
    if (!history.contains(candidate) &&
        std::find(pending.begin(), pending.end(), candidate) == pending.end()) {
      out.push_back(candidate);
    }
  }
  return out;
}

/// Proposes every candidate once, in an order fixed when a search starts, passing over those the history
/// already holds (a resumed search).
class FixedOrderStrategy : public Strategy {
 public:
  std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) final {
    if (!identity_.continues(space, history)) {
      order_ = order(space);
      next_ = 0;
    }
    std::vector<size_t> out;
    while (out.size() < count && next_ < order_.size()) {
      const size_t candidate = order_[next_++];
      if (!history.contains(candidate)) out.push_back(candidate);
    }
    return out;
  }

  std::vector<size_t> upcoming(const SearchSpace& space, const History& history,
                               const std::vector<size_t>& pending, size_t count) const final {
    if (!identity_.same(space)) return {};
    return untried_from(order_, next_, history, pending, count);
  }

 protected:
  /// A permutation of the space's candidates.
  virtual std::vector<size_t> order(const SearchSpace& space) = 0;

 private:
  SearchIdentity identity_;
  std::vector<size_t> order_;
  size_t next_ = 0;
};

/// Every candidate once, best predicted first (see model.hpp), so a run cut short by a budget has
/// measured the likeliest winners.
std::unique_ptr<Strategy> make_exhaustive_strategy();
/// Uniform sampling without replacement; the same seed gives the same sequence.
std::unique_ptr<Strategy> make_random_strategy(uint64_t seed);
/// Model-ranked candidates refined by local search, learning from every observation.
std::unique_ptr<Strategy> make_guided_strategy(uint64_t seed);

}  // namespace gemmforge::tuner
