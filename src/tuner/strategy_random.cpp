// The random strategy: candidates drawn uniformly without replacement, the same sequence for the same seed.
#include <numeric>

#include "tuner/rng.hpp"
#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

class RandomStrategy : public FixedOrderStrategy {
 public:
  explicit RandomStrategy(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }

 private:
  // A whole permutation up front (Fisher-Yates): a few bytes per candidate buys O(1) draws.
  std::vector<size_t> order(const SearchSpace& space) override {
    std::vector<size_t> order(space.size());
    std::iota(order.begin(), order.end(), size_t{0});
    Rng rng(seed_);
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
    return order;
  }

  uint64_t seed_;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(uint64_t seed) {
  return std::make_unique<RandomStrategy>(seed);
}

}  // namespace gemmforge::tuner
