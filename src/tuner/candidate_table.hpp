// What the tuner's model reads of every candidate of a search space, computed once: its footprint
// (model/footprint.hpp) and the domain position of each of its parameters.
#pragma once

#include <cstdint>
#include <vector>

#include "core/manifest.hpp"
#include "model/footprint.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

using model::Footprint;

/// The footprint of every candidate, and the domain position ("level") of each of its parameters.
class CandidateTable {
 public:
  /// Throws InvalidArgumentError when a template lacks one of the derived values the model reads.
  explicit CandidateTable(const SearchSpace& space);

  size_t size() const { return footprints_.size(); }
  const Footprint& footprint(size_t candidate) const { return footprints_[candidate]; }
  /// Which template space holds the candidate (as SearchSpace::space_of, without the bounds check).
  size_t space_of(size_t candidate) const { return space_index_[candidate]; }
  size_t parameter_count(size_t space) const { return parameter_counts_[space]; }
  /// Position in its domain (manifest order) of parameter p of the candidate.
  uint8_t level(size_t candidate, size_t p) const { return levels_[level_offsets_[candidate] + p]; }
  const uint8_t* levels(size_t candidate) const { return &levels_[level_offsets_[candidate]]; }

 private:
  std::vector<Footprint> footprints_;
  std::vector<uint32_t> space_index_;
  std::vector<size_t> parameter_counts_;
  std::vector<uint8_t> levels_;
  std::vector<size_t> level_offsets_;
};

/// Every candidate's time as the analytic model estimates it with manifest register estimates, in ms
/// (infinite for those the model says cannot launch).
std::vector<double> estimate_all(const SearchSpace& space, const CandidateTable& table);

}  // namespace gemmforge::tuner
