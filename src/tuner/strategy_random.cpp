// The random strategy: candidates drawn uniformly without replacement, the same sequence for the same seed.
#include <numeric>

#include "tuner/rng.hpp"
#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

class RandomStrategy : public Strategy {
 public:
  explicit RandomStrategy(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }

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
  // A whole permutation up front (Fisher-Yates): a few bytes per candidate buys O(1) draws.
  void start(const SearchSpace& space) {
    next_ = 0;
    order_.resize(space.size());
    std::iota(order_.begin(), order_.end(), size_t{0});
    Rng rng(seed_);
    for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[rng.below(i)]);
  }

  uint64_t seed_;
  SearchIdentity identity_;
  std::vector<size_t> order_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<Strategy> make_random_strategy(uint64_t seed) {
  return std::make_unique<RandomStrategy>(seed);
}

}  // namespace gemmforge::tuner
