// The local moves of the guided strategy's refinement: which candidates lie next to a candidate, within
// its template and across templates.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "tuner/candidate_table.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

class Neighbourhood {
 public:
  Neighbourhood(const SearchSpace& space, const CandidateTable& table);

  /// The candidates next to `candidate`, each once: those of its template differing in one parameter
  /// (any value), or in two parameters each moved to an adjacent value (domains ordered by value, so
  /// coupled parameters such as a tile and its per-thread share move together); and those of other
  /// templates agreeing on every parameter the two templates share by name, or where none does, on as
  /// many of them as any candidate there (at least half).
  std::vector<size_t> of(size_t candidate) const;

  /// The candidate of template space `space` whose parameters sit at `levels`, or -1.
  int64_t find(size_t space, const std::vector<uint8_t>& levels) const;

 private:
  struct TemplateIndex {
    size_t first = 0;                                       // flat index of its first candidate
    std::unordered_multimap<uint64_t, uint32_t> by_levels;  // hash of the levels -> flat index
    std::vector<std::vector<uint8_t>> by_rank;              // per parameter: levels in ascending value
    std::vector<std::vector<uint8_t>> rank_of;              // per parameter: rank of each level
  };
  // Parameters two templates share by name, and the other template's candidates by their values.
  struct SharedParameters {
    size_t other = 0;
    std::vector<std::pair<size_t, size_t>> positions;  // (here, there)
    std::unordered_multimap<uint64_t, uint32_t> by_values;
  };

  std::vector<int64_t> shared_values(size_t space, size_t candidate, const SharedParameters& shared,
                                     bool here) const;
  // Appends the other template's candidates agreeing with `values` on the most shared parameters.
  void closest_across(const SharedParameters& shared, const std::vector<int64_t>& values,
                      std::vector<size_t>& out) const;

  const SearchSpace& space_;
  const CandidateTable& table_;
  std::vector<TemplateIndex> templates_;
  std::vector<std::vector<SharedParameters>> shared_;  // per template space
};

}  // namespace gemmforge::tuner
