// The exhaustive strategy: every candidate once, in the analytic model's order (fastest estimate first),
// so that a run cut short by a budget has measured the likeliest winners.
#include <algorithm>
#include <numeric>

#include "core/dtype.hpp"
#include "tuner/candidate_table.hpp"
#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

class ExhaustiveStrategy : public FixedOrderStrategy {
 public:
  std::string name() const override { return "exhaustive"; }

 private:
  std::vector<size_t> order(const SearchSpace& space) override {
    const std::vector<double> times = estimate_all(space, CandidateTable(space));
    std::vector<size_t> order(space.size());
    std::iota(order.begin(), order.end(), size_t{0});
    // Stable: equal estimates keep the enumeration order, so the order is the same everywhere.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return times[a] < times[b]; });
    return order;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_exhaustive_strategy() {
  return std::make_unique<ExhaustiveStrategy>();
}

}  // namespace gemmforge::tuner
