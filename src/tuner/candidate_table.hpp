// What the tuner's model reads of every candidate of a search space, computed once from generic manifest
// data: the derived values THREADS, SMEM_BYTES, EST_REGS and TILES that every GEMM template defines, and
// the launch geometry. No template's parameter names appear here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/manifest.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

/// Launch shape and resources of one candidate for the problem of its search space.
struct Footprint {
  int64_t tile_m = 0;           ///< rows of C one block computes
  int64_t tile_n = 0;           ///< columns of C one block computes
  int64_t tiles = 0;            ///< blocks per K slice
  int64_t split_k = 1;          ///< K slices launched
  int64_t k_per_split = 0;      ///< K extent of one slice
  int64_t whole_tiles = 0;      ///< stream-K: tiles computed whole before the stream blocks run
  int64_t stream_blocks = 0;    ///< stream-K: blocks sharing the other tiles' K iterations (0: none)
  int64_t stream_k = 0;         ///< stream-K: K extent one stream block sums
  bool parallel_split = false;  ///< slices leave partial tiles in a workspace for the last one to sum,
                                ///< rather than adding into C one after the other
  int64_t threads = 0;          ///< threads per block
  int64_t smem_bytes = 0;       ///< dynamic shared memory per block
  int64_t est_regs = 0;         ///< registers per thread as the manifest estimates them before compiling
};

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

}  // namespace gemmforge::tuner
