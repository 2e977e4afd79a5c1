// A strategy measuring named candidates first, then another strategy's picks: a search that starts from
// what served its problem before it was tuned ends no slower than that.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

class MeasureFirst : public Strategy {
 public:
  MeasureFirst(FirstCandidates first, std::unique_ptr<Strategy> then)
      : first_(std::move(first)), then_(std::move(then)) {}

  std::string name() const override { return then_->name(); }

  std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) override {
    if (!identity_.continues(space, history)) start(space);
    std::vector<size_t> out;
    while (out.size() < count && next_ < first_candidates_.size()) {
      const size_t candidate = first_candidates_[next_++];
      if (!history.contains(candidate)) out.push_back(candidate);
    }
    // A batch of their own: `then` learns of them from the history before it proposes anything.
    if (!out.empty()) return out;
    return then_->propose(space, history, count);
  }

  std::vector<size_t> upcoming(const SearchSpace& space, const History& history,
                               const std::vector<size_t>& pending, size_t count) const override {
    if (!identity_.same(space)) return {};
    // The first candidates still to come are proposed in batches of their own, so `then` comes after them.
    if (next_ >= first_candidates_.size()) return then_->upcoming(space, history, pending, count);
    return untried_from(first_candidates_, next_, history, pending, count);
  }

 private:
  void start(const SearchSpace& space) {
    first_candidates_.clear();
    next_ = 0;
    std::vector<Config> configs;
    try {
      configs = first_(space.device(), space.problem());
    } catch (const std::exception& e) {
      spdlog::warn("{}: the search starts without its first candidates: {}", space.problem().to_string(),
                   e.what());
    }
    for (const Config& config : configs) {
      const int64_t found = space.find(config);
      if (found < 0) continue;
      const auto candidate = static_cast<size_t>(found);
      if (std::find(first_candidates_.begin(), first_candidates_.end(), candidate) ==
          first_candidates_.end()) {
        first_candidates_.push_back(candidate);
      }
    }
  }

  FirstCandidates first_;
  std::unique_ptr<Strategy> then_;
  SearchIdentity identity_;
  std::vector<size_t> first_candidates_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> measure_first(FirstCandidates first, std::unique_ptr<Strategy> then) {
  return std::make_unique<MeasureFirst>(std::move(first), std::move(then));
}

}  // namespace gemmforge::tuner
