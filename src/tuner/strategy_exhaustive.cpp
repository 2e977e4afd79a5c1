// The exhaustive strategy: every candidate once, in the analytic model's order (fastest estimate first),
// so that a run cut short by a budget has measured the likeliest winners.
#include <algorithm>
#include <numeric>

#include "tuner/candidate_table.hpp"
#include "tuner/model.hpp"
#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

class ExhaustiveStrategy : public Strategy {
 public:
  std::string name() const override { return "exhaustive"; }

  std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) override {
    if (!identity_.continues(space, history)) start(space);
    std::vector<size_t> out;
    while (out.size() < count && next_ < order_.size()) {
      const size_t candidate = order_[next_++];
      if (!history.contains(candidate)) out.push_back(candidate);
    }
    return out;
  }

 private:
  void start(const SearchSpace& space) {
    next_ = 0;
    const std::vector<double> times = estimate_all(space, CandidateTable(space));
    order_.resize(space.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    // Stable: equal estimates keep the enumeration order, so the order is the same everywhere.
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return times[a] < times[b]; });
  }

  SearchIdentity identity_;
  std::vector<size_t> order_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy() {
  return std::make_unique<ExhaustiveStrategy>();
}

}  // namespace gemmforge::tuner
