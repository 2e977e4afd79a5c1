// Neighbours of a candidate, found through hash indexes of every template's candidates by their levels
// and, for each pair of templates, by the values of the parameters they share.
#include "tuner/neighbourhood.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace gemmforge::tuner {
namespace {

// FNV-1a: the indexes verify every hit, so a plain, fast hash does.
uint64_t hash_bytes(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < size; ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
  return h;
}

}  // namespace

Neighbourhood::Neighbourhood(const SearchSpace& space, const CandidateTable& table)
    : space_(space), table_(table) {
  const auto& spaces = space.spaces();
  size_t first = 0;
  for (size_t s = 0; s < spaces.size(); ++s) {
    const auto& parameters = spaces[s].kernel_template().manifest.parameters();
    TemplateIndex index;
    index.first = first;
    for (const Parameter& p : parameters) {
      std::vector<uint8_t> order(p.values.size());
      std::iota(order.begin(), order.end(), 0);
      std::sort(order.begin(), order.end(), [&](uint8_t a, uint8_t b) { return p.values[a] < p.values[b]; });
      std::vector<uint8_t> rank(order.size());
      for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<uint8_t>(r);
      index.by_rank.push_back(std::move(order));
      index.rank_of.push_back(std::move(rank));
    }
    index.by_levels.reserve(spaces[s].size());
    for (size_t i = first; i < first + spaces[s].size(); ++i) {
      index.by_levels.emplace(hash_bytes(table.levels(i), parameters.size()), static_cast<uint32_t>(i));
    }
    templates_.push_back(std::move(index));
    first += spaces[s].size();
  }

  shared_.resize(spaces.size());
  for (size_t s = 0; s < spaces.size(); ++s) {
    const auto& here = spaces[s].kernel_template().manifest.parameters();
    for (size_t t = 0; t < spaces.size(); ++t) {
      if (t == s || spaces[t].empty()) continue;
      const auto& there = spaces[t].kernel_template().manifest.parameters();
      SharedParameters shared;
      shared.other = t;
      for (size_t p = 0; p < here.size(); ++p) {
        for (size_t q = 0; q < there.size(); ++q) {
          if (here[p].name == there[q].name) shared.positions.emplace_back(p, q);
        }
      }
      if (shared.positions.empty()) continue;
      const size_t begin = templates_[t].first;
      for (size_t j = begin; j < begin + spaces[t].size(); ++j) {
        const std::vector<int64_t> values = shared_values(t, j, shared, false);
        shared.by_values.emplace(hash_bytes(values.data(), values.size() * sizeof(int64_t)),
                                 static_cast<uint32_t>(j));
      }
      shared_[s].push_back(std::move(shared));
    }
  }
}

std::vector<int64_t> Neighbourhood::shared_values(size_t space, size_t candidate,
                                                  const SharedParameters& shared, bool here) const {
  const auto& parameters = space_.spaces()[space].kernel_template().manifest.parameters();
  std::vector<int64_t> values;
  values.reserve(shared.positions.size());
  for (const auto& [p_here, p_there] : shared.positions) {
    const size_t p = here ? p_here : p_there;
    values.push_back(parameters[p].values[table_.level(candidate, p)]);
  }
  return values;
}

int64_t Neighbourhood::find(size_t space, const std::vector<uint8_t>& levels) const {
  const auto [begin, end] = templates_[space].by_levels.equal_range(hash_bytes(levels.data(), levels.size()));
  for (auto it = begin; it != end; ++it) {
    if (std::memcmp(table_.levels(it->second), levels.data(), levels.size()) == 0) return it->second;
  }
  return -1;
}

std::vector<size_t> Neighbourhood::of(size_t candidate) const {
  const size_t s = table_.space_of(candidate);
  const TemplateIndex& index = templates_[s];
  const size_t parameters = table_.parameter_count(s);
  std::vector<uint8_t> levels(table_.levels(candidate), table_.levels(candidate) + parameters);
  std::vector<size_t> out;
  const auto visit = [&] {
    if (const int64_t found = find(s, levels); found >= 0) out.push_back(static_cast<size_t>(found));
  };

  for (size_t p = 0; p < parameters; ++p) {
    const uint8_t own = levels[p];
    for (size_t level = 0; level < index.rank_of[p].size(); ++level) {
      if (level == own) continue;
      levels[p] = static_cast<uint8_t>(level);
      visit();
    }
    levels[p] = own;
  }

  // Adjacent value of a parameter, or -1 past either end of its domain.
  const auto step = [&](size_t p, uint8_t level, int direction) -> int {
    const int rank = index.rank_of[p][level] + direction;
    if (rank < 0 || rank >= static_cast<int>(index.by_rank[p].size())) return -1;
    return index.by_rank[p][rank];
  };
  for (size_t p = 0; p < parameters; ++p) {
    for (size_t q = p + 1; q < parameters; ++q) {
      const uint8_t own_p = levels[p], own_q = levels[q];
      for (int dp : {-1, 1}) {
        const int lp = step(p, own_p, dp);
        if (lp < 0) continue;
        for (int dq : {-1, 1}) {
          const int lq = step(q, own_q, dq);
          if (lq < 0) continue;
          levels[p] = static_cast<uint8_t>(lp);
          levels[q] = static_cast<uint8_t>(lq);
          visit();
        }
      }
      levels[p] = own_p;
      levels[q] = own_q;
    }
  }

  for (const SharedParameters& shared : shared_[s]) {
    const std::vector<int64_t> values = shared_values(s, candidate, shared, true);
    const size_t before = out.size();
    const auto [begin, end] =
        shared.by_values.equal_range(hash_bytes(values.data(), values.size() * sizeof(int64_t)));
    for (auto it = begin; it != end; ++it) {
      if (shared_values(shared.other, it->second, shared, false) == values) out.push_back(it->second);
    }
    if (out.size() == before) closest_across(shared, values, out);
  }
  return out;
}

void Neighbourhood::closest_across(const SharedParameters& shared, const std::vector<int64_t>& values,
                                   std::vector<size_t>& out) const {
  const Space& other = space_.spaces()[shared.other];
  const auto& parameters = other.kernel_template().manifest.parameters();
  const size_t begin = templates_[shared.other].first;
  size_t most = (shared.positions.size() + 1) / 2;  // fewer agreements are no longer "next to"
  std::vector<size_t> closest;
  for (size_t j = begin; j < begin + other.size(); ++j) {
    size_t agreements = 0;
    for (size_t i = 0; i < shared.positions.size(); ++i) {
      const size_t q = shared.positions[i].second;
      agreements += parameters[q].values[table_.level(j, q)] == values[i];
    }
    if (agreements > most) {
      most = agreements;
      closest.clear();
    }
    if (agreements == most) closest.push_back(j);
  }
  out.insert(out.end(), closest.begin(), closest.end());
}

}  // namespace gemmforge::tuner
