// The guided strategy (the default): candidates ranked by a model that learns from every measurement,
// with local search around the fastest ones found and a little exploration.
//
// First come the manifests' seed configs (or their nearest candidates) and each template's best
// estimate. After that, proposals follow a fixed cycle of kinds, so that the mix does not depend on the
// batch size: mostly the best predicted neighbour of the current leaders (local search), then the best
// predicted candidate anywhere, then a candidate holding a parameter value never tried (what the
// regression knows least), then a random one among the best predicted.
#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <unordered_map>

#include "tuner/candidate_table.hpp"
#include "tuner/neighbourhood.hpp"
#include "tuner/predictor.hpp"
#include "tuner/rng.hpp"
#include "tuner/strategies.hpp"

namespace gemmforge::tuner {
namespace {

enum class Pick { kLocal, kModel, kNovel, kRandom };
constexpr std::array kCycle = {Pick::kLocal, Pick::kModel, Pick::kLocal, Pick::kNovel,
                               Pick::kLocal, Pick::kModel, Pick::kLocal, Pick::kRandom};
// Local search looks around this many of the fastest candidates measured.
constexpr size_t kLeaders = 3;
// ... and around the fastest of each other template measured within this factor of the best.
constexpr double kLeaderSlack = 1.3;
// Random picks come from the best predicted untried candidates: this many, or this share of the space.
constexpr size_t kRandomPoolMin = 32;
constexpr double kRandomPoolShare = 0.02;

constexpr size_t kNone = std::numeric_limits<size_t>::max();

// One search over one space: everything the strategy knows about it.
class GuidedSearch {
 public:
  GuidedSearch(const SearchSpace& space, uint64_t seed)
      : space_(space),
        table_(space),
        neighbourhood_(space, table_),
        predictor_(space, table_),
        rng_(seed),
        in_batch_(space.size(), 0),
        tried_levels_(space.spaces().size()) {
    for (size_t s = 0; s < space.spaces().size(); ++s) {
      for (const Parameter& p : space.spaces()[s].kernel_template().manifest.parameters()) {
        tried_levels_[s].emplace_back(p.values.size(), 0);
      }
    }
    choose_seeds();
  }

  std::vector<size_t> propose(const History& history, size_t count) {
    history_ = &history;
    for (const Observation& o : history.observations()) mark_tried(o.candidate);
    predictor_.learn(history);
    std::vector<size_t> batch;
    while (batch.size() < count) {
      const size_t candidate = pick(batch);
      if (candidate == kNone) break;
      in_batch_[candidate] = 1;
      mark_tried(candidate);
      batch.push_back(candidate);
    }
    for (size_t c : batch) in_batch_[c] = 0;
    return batch;
  }

  // Likely next picks, for compiling ahead: the seeds left, then the leaders' neighbours and the model's
  // favourites, best predicted first. Reads the state propose() left and changes none of it.
  std::vector<size_t> upcoming(const History& history, const std::vector<size_t>& pending,
                               size_t count) const {
    std::vector<size_t> out;
    auto add = [&](size_t c) {
      if (out.size() >= count || c >= table_.size() || history.contains(c)) return;
      if (std::find(pending.begin(), pending.end(), c) != pending.end()) return;
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    };
    for (size_t seed : seeds_) add(seed);
    const History* previous = history_;
    history_ = &history;
    std::vector<size_t> local;
    for (size_t leader : leaders()) {
      for (size_t n : neighbours(leader)) local.push_back(n);
    }
    history_ = previous;
    std::sort(local.begin(), local.end(), [&](size_t a, size_t b) { return better(a, b); });
    // Local picks come half the time in the cycle, the model's the other half.
    const size_t local_share = out.size() + (count - std::min(count, out.size()) + 1) / 2;
    for (size_t c : local) {
      if (out.size() >= local_share) break;
      add(c);
    }
    for (uint32_t c : predictor_.ranking()) {
      if (out.size() >= count) break;
      add(c);
    }
    return out;
  }

 private:
  bool taken(size_t c) const { return history_->contains(c) || in_batch_[c] != 0; }
  double predicted(size_t c) const { return predictor_.log_time(c); }
  bool better(size_t a, size_t b) const {
    return b == kNone || predicted(a) < predicted(b) || (predicted(a) == predicted(b) && a < b);
  }

  void mark_tried(size_t c) {
    if (c >= table_.size()) return;
    const size_t s = table_.space_of(c);
    for (size_t p = 0; p < table_.parameter_count(s); ++p) tried_levels_[s][p][table_.level(c, p)] = 1;
  }

  size_t pick(const std::vector<size_t>& batch) {
    while (!seeds_.empty()) {
      const size_t seed = seeds_.front();
      seeds_.pop_front();
      if (!taken(seed)) return seed;
    }
    const Pick kind = kCycle[cycle_++ % kCycle.size()];
    size_t c = kNone;
    switch (kind) {
      case Pick::kLocal:
        c = best_neighbour();
        break;
      case Pick::kModel:
        c = best_predicted(batch);
        break;
      case Pick::kNovel:
        c = best_novel();
        break;
      case Pick::kRandom:
        c = random_promising();
        break;
    }
    if (c == kNone) c = best_predicted(batch);
    if (c == kNone) c = best_predicted({});
    return c;
  }

  // The best predicted untried neighbour of the leaders: the fastest candidates measured, and the
  // fastest of each other template when it comes close, so one template's basin cannot hog the search.
  size_t best_neighbour() {
    size_t best = kNone;
    for (size_t leader : leaders()) {
      for (size_t n : neighbours(leader)) {
        if (!taken(n) && better(n, best)) best = n;
      }
    }
    return best;
  }

  std::vector<size_t> leaders() const {
    std::vector<const Observation*> ok;
    for (const Observation& o : history_->observations()) {
      if (o.ok() && o.candidate < table_.size()) ok.push_back(&o);
    }
    std::sort(ok.begin(), ok.end(), [](const Observation* a, const Observation* b) {
      return a->time_ms < b->time_ms || (a->time_ms == b->time_ms && a->candidate < b->candidate);
    });
    std::vector<size_t> out;
    std::vector<uint8_t> template_seen(space_.spaces().size(), 0);
    for (const Observation* o : ok) {
      const size_t s = table_.space_of(o->candidate);
      const bool top = out.size() < kLeaders;
      const bool template_best = template_seen[s] == 0 && o->time_ms <= kLeaderSlack * ok.front()->time_ms;
      if (top || template_best) out.push_back(o->candidate);
      template_seen[s] = 1;
    }
    return out;
  }

  const std::vector<size_t>& neighbours(size_t c) const {
    auto it = neighbours_.find(c);
    if (it == neighbours_.end()) it = neighbours_.emplace(c, neighbourhood_.of(c)).first;
    return it->second;
  }

  // The best predicted untried candidate not next to one already in this batch: within a batch the
  // model has not learnt from its own picks yet, and near-twins would tell it the same thing twice.
  size_t best_predicted(const std::vector<size_t>& batch) const {
    for (uint32_t c : predictor_.ranking()) {
      if (!taken(c) && std::none_of(batch.begin(), batch.end(), [&](size_t b) { return twins(b, c); }))
        return c;
    }
    return kNone;
  }

  bool twins(size_t a, size_t b) const {
    const size_t s = table_.space_of(a);
    if (table_.space_of(b) != s) return false;
    size_t differences = 0;
    for (size_t p = 0; p < table_.parameter_count(s) && differences <= 1; ++p) {
      differences += table_.level(a, p) != table_.level(b, p);
    }
    return differences <= 1;
  }

  // The best predicted untried candidate with a parameter value that no candidate tried so far had.
  size_t best_novel() {
    if (!novel_left_) return kNone;
    for (uint32_t c : predictor_.ranking()) {
      if (taken(c)) continue;
      const size_t s = table_.space_of(c);
      for (size_t p = 0; p < table_.parameter_count(s); ++p) {
        if (tried_levels_[s][p][table_.level(c, p)] == 0) return c;
      }
    }
    novel_left_ = false;  // every value of the space has been tried: no need to scan again
    return kNone;
  }

  size_t random_promising() {
    const size_t pool_size = std::max(kRandomPoolMin, static_cast<size_t>(kRandomPoolShare * space_.size()));
    std::vector<size_t> pool;
    for (uint32_t c : predictor_.ranking()) {
      if (pool.size() == pool_size) break;
      if (!taken(c)) pool.push_back(c);
    }
    return pool.empty() ? kNone : pool[rng_.below(pool.size())];
  }

  // The manifests' seed configs (or the candidates nearest to them, for seeds the space does not hold),
  // then each template's best estimate: known good starting points that also calibrate every template.
  void choose_seeds() {
    size_t first = 0;
    for (size_t s = 0; s < space_.spaces().size(); ++s) {
      const Space& template_space = space_.spaces()[s];
      const Manifest& manifest = template_space.kernel_template().manifest;
      for (const Config& seed : manifest.seeds()) {
        const size_t c = nearest(first, template_space.size(), manifest, seed);
        if (c != kNone) seeds_.push_back(c);
      }
      first += template_space.size();
    }
    first = 0;
    for (const Space& template_space : space_.spaces()) {
      size_t best = kNone;
      for (size_t c = first; c < first + template_space.size(); ++c) {
        if (better(c, best)) best = c;
      }
      if (best != kNone) seeds_.push_back(best);
      first += template_space.size();
    }
  }

  // The candidate in [first, first + size) sharing most parameter values with `seed`; ties go to the
  // better estimate.
  size_t nearest(size_t first, size_t size, const Manifest& manifest, const Config& seed) const {
    const auto& parameters = manifest.parameters();
    std::vector<int> levels(parameters.size(), -1);  // -1: the seed has no usable value
    for (size_t p = 0; p < parameters.size(); ++p) {
      if (const auto value = seed.find(parameters[p].name)) {
        const auto& domain = parameters[p].values;
        const auto at = std::find(domain.begin(), domain.end(), *value);
        if (at != domain.end()) levels[p] = static_cast<int>(at - domain.begin());
      }
    }
    size_t best = kNone, best_matches = 0;
    for (size_t c = first; c < first + size; ++c) {
      size_t matches = 0;
      for (size_t p = 0; p < parameters.size(); ++p) matches += levels[p] == table_.level(c, p);
      if (best == kNone || matches > best_matches || (matches == best_matches && better(c, best))) {
        best = c;
        best_matches = matches;
      }
    }
    return best;
  }

  const SearchSpace& space_;
  CandidateTable table_;
  Neighbourhood neighbourhood_;
  Predictor predictor_;
  Rng rng_;
  mutable const History* history_ = nullptr;  // upcoming() points it at the history it is given
  std::vector<uint8_t> in_batch_;
  std::vector<std::vector<std::vector<uint8_t>>> tried_levels_;  // per template, parameter, level
  std::deque<size_t> seeds_;
  mutable std::unordered_map<size_t, std::vector<size_t>> neighbours_;
  size_t cycle_ = 0;
  bool novel_left_ = true;
};

class GuidedStrategy : public Strategy {
 public:
  explicit GuidedStrategy(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "guided"; }

  std::vector<size_t> propose(const SearchSpace& space, const History& history, size_t count) override {
    if (!identity_.continues(space, history) || search_ == nullptr) {
      search_ = std::make_unique<GuidedSearch>(space, seed_);
    }
    return search_->propose(history, count);
  }

  std::vector<size_t> upcoming(const SearchSpace& space, const History& history,
                               const std::vector<size_t>& pending, size_t count) const override {
    if (search_ == nullptr || !identity_.same(space)) return {};
    return search_->upcoming(history, pending, count);
  }

 private:
  uint64_t seed_;
  SearchIdentity identity_;
  std::unique_ptr<GuidedSearch> search_;
};

}  // namespace

std::unique_ptr<Strategy> make_guided_strategy(uint64_t seed) {
  return std::make_unique<GuidedStrategy>(seed);
}

}  // namespace gemmforge::tuner
