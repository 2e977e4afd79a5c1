// Reading the model's inputs off every candidate: derived values through the manifest's symbol table,
// block tile extents by probing TILES, K split through the manifest's launch rule.
#include "tuner/candidate_table.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

// A problem extent far beyond any tile, so that TILES / extent recovers the tile size within rounding.
constexpr int64_t kProbeExtent = int64_t{1} << 20;

size_t derived_index(const Manifest& manifest, const std::string& name) {
  const auto& derived = manifest.derived();
  for (size_t i = 0; i < derived.size(); ++i) {
    if (derived[i].name == name) return i;
  }
  throw InvalidArgumentError(fmt::format(
      "template {} defines no derived value {}; the tuner's performance model reads THREADS, SMEM_BYTES, "
      "EST_REGS and TILES of every GEMM template",
      manifest.name(), name));
}

// The manifest's symbol table for one problem: parameters are written in, derived values evaluated.
class Symbols {
 public:
  Symbols(const Manifest& manifest, const DeviceInfo& device, const KernelProblem& problem)
      : manifest_(manifest), values_(manifest.symbol_count(), 0) {
    manifest.bind_context(values_.data(), &device, &problem);
  }
  void set_parameter(size_t p, int64_t value) { values_[p] = value; }
  // Derived values may read earlier ones, so they are evaluated in manifest order.
  void evaluate() {
    for (size_t d = 0; d < manifest_.derived().size(); ++d) {
      values_[manifest_.derived_slot(d)] = manifest_.derived()[d].value.evaluate(values_.data());
    }
  }
  int64_t derived(size_t d) const { return values_[manifest_.derived_slot(d)]; }

 private:
  const Manifest& manifest_;
  std::vector<int64_t> values_;
};

int64_t tile_extent(int64_t probe_tiles) {
  if (probe_tiles <= 0) return kProbeExtent;
  return std::max<int64_t>(1, std::llround(static_cast<double>(kProbeExtent) / probe_tiles));
}

}  // namespace

CandidateTable::CandidateTable(const SearchSpace& space) {
  footprints_.reserve(space.size());
  space_index_.reserve(space.size());
  level_offsets_.reserve(space.size());
  const KernelProblem& problem = space.problem();
  KernelProblem stretch_m = problem, stretch_n = problem;
  stretch_m.m = kProbeExtent;
  stretch_m.n = 1;
  stretch_n.m = 1;
  stretch_n.n = kProbeExtent;

  for (size_t s = 0; s < space.spaces().size(); ++s) {
    const Space& template_space = space.spaces()[s];
    const Manifest& manifest = template_space.kernel_template().manifest;
    const size_t threads = derived_index(manifest, "THREADS");
    const size_t smem = derived_index(manifest, "SMEM_BYTES");
    const size_t regs = derived_index(manifest, "EST_REGS");
    const size_t tiles = derived_index(manifest, "TILES");
    const auto& parameters = manifest.parameters();
    parameter_counts_.push_back(parameters.size());
    Symbols actual(manifest, space.device(), problem);
    Symbols along_m(manifest, space.device(), stretch_m);
    Symbols along_n(manifest, space.device(), stretch_n);

    for (size_t i = 0; i < template_space.size(); ++i) {
      level_offsets_.push_back(levels_.size());
      space_index_.push_back(static_cast<uint32_t>(s));
      for (size_t p = 0; p < parameters.size(); ++p) {
        const int64_t value = template_space.value(i, p);
        const auto& domain = parameters[p].values;
        levels_.push_back(
            static_cast<uint8_t>(std::find(domain.begin(), domain.end(), value) - domain.begin()));
        actual.set_parameter(p, value);
        along_m.set_parameter(p, value);
        along_n.set_parameter(p, value);
      }
      actual.evaluate();
      along_m.evaluate();
      along_n.evaluate();
      const LaunchGeometry geometry = manifest.geometry(template_space.config(i), problem, space.device());
      Footprint f;
      f.tile_m = tile_extent(along_m.derived(tiles));
      f.tile_n = tile_extent(along_n.derived(tiles));
      f.tiles = actual.derived(tiles);
      f.split_k = geometry.split_k;
      f.k_per_split = geometry.k_per_split;
      f.whole_tiles = geometry.whole_tiles;
      f.stream_blocks = geometry.stream_blocks;
      if (f.stream_blocks > 0) {
        const int64_t iterations =
            (f.tiles - f.whole_tiles) * ((problem.k + geometry.k_granule - 1) / geometry.k_granule);
        f.stream_k = (iterations + f.stream_blocks - 1) / f.stream_blocks * geometry.k_granule;
      }
      f.parallel_split = geometry.workspace_bytes > 0;
      f.threads = actual.derived(threads);
      f.smem_bytes = actual.derived(smem);
      f.est_regs = actual.derived(regs);
      footprints_.push_back(f);
    }
  }
}

}  // namespace gemmforge::tuner
