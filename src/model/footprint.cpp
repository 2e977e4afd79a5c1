// Reading the models' inputs off a config: derived values through the manifest's symbol table, block tile
// extents by probing TILES, K split through the manifest's launch rule.
#include "model/footprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/dtype.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::model {
namespace {

// A problem extent far beyond any tile, so that TILES / extent recovers the tile size within rounding.
constexpr int64_t kProbeExtent = int64_t{1} << 20;

// The index of the derived value `name`, if the manifest has one.
std::optional<size_t> find_derived(const Manifest& manifest, const std::string& name) {
  const auto& derived = manifest.derived();
  for (size_t i = 0; i < derived.size(); ++i) {
    if (derived[i].name == name) return i;
  }
  return std::nullopt;
}

size_t derived_index(const Manifest& manifest, const std::string& name) {
  if (const std::optional<size_t> index = find_derived(manifest, name)) return *index;
  throw InvalidArgumentError(
      fmt::format("template {} defines no derived value {}; the performance models read THREADS, SMEM_BYTES, "
                  "EST_REGS and TILES of every GEMM template",
                  manifest.name(), name));
}

std::vector<int64_t> context(const Manifest& manifest, const DeviceInfo& device,
                             const KernelProblem& problem) {
  std::vector<int64_t> values(manifest.symbol_count(), 0);
  manifest.bind_context(values.data(), &device, &problem);
  return values;
}

KernelProblem stretched(KernelProblem problem, bool along_m) {
  problem.m = along_m ? kProbeExtent : 1;
  problem.n = along_m ? 1 : kProbeExtent;
  return problem;
}

int64_t tile_extent(int64_t probe_tiles) {
  if (probe_tiles <= 0) return kProbeExtent;
  return std::max<int64_t>(1, std::llround(static_cast<double>(kProbeExtent) / probe_tiles));
}

}  // namespace

FootprintReader::FootprintReader(const Manifest& manifest, const DeviceInfo& device,
                                 const KernelProblem& problem)
    : manifest_(manifest),
      device_(device),
      problem_(problem),
      threads_(derived_index(manifest, "THREADS")),
      smem_(derived_index(manifest, "SMEM_BYTES")),
      regs_(derived_index(manifest, "EST_REGS")),
      tiles_(derived_index(manifest, "TILES")),
      shares_registers_(find_derived(manifest, "CONSUMER_REGS").has_value()),
      actual_(context(manifest, device, problem)),
      along_m_(context(manifest, device, stretched(problem, true))),
      along_n_(context(manifest, device, stretched(problem, false))) {}

std::vector<int64_t> FootprintReader::symbols(const Config& normalized,
                                              const std::vector<int64_t>& bound) const {
  std::vector<int64_t> values = bound;
  const Config::Values& parameters = normalized.values();
  for (size_t p = 0; p < parameters.size(); ++p) values[p] = parameters[p].second;
  for (size_t d = 0; d < manifest_.derived().size(); ++d) {
    values[manifest_.derived_slot(d)] = manifest_.derived()[d].value.evaluate(values.data());
  }
  return values;
}

Footprint FootprintReader::read(const Config& normalized) const {
  const std::vector<int64_t> actual = symbols(normalized, actual_);
  const auto derived = [&](const std::vector<int64_t>& values, size_t d) {
    return values[manifest_.derived_slot(d)];
  };
  const LaunchGeometry geometry = manifest_.geometry(normalized, problem_, device_);
  Footprint f;
  f.tile_m = tile_extent(derived(symbols(normalized, along_m_), tiles_));
  f.tile_n = tile_extent(derived(symbols(normalized, along_n_), tiles_));
  f.tiles = derived(actual, tiles_);
  f.split_k = geometry.split_k;
  f.blocks = geometry.blocks();
  f.k_per_split = geometry.k_per_split;
  f.k_granule = geometry.k_granule;
  f.whole_tiles = geometry.whole_tiles;
  f.stream_blocks = geometry.stream_blocks;
  if (f.stream_blocks > 0) {
    const int64_t iterations =
        (f.tiles - f.whole_tiles) * ((problem_.k + geometry.k_granule - 1) / geometry.k_granule);
    f.stream_k = (iterations + f.stream_blocks - 1) / f.stream_blocks * geometry.k_granule;
  }
  f.parallel_split = geometry.partial_bytes > 0;
  f.operand_pass_bytes = geometry.operand_pass_bytes();
  if (geometry.l2_streamed != 0) {
    const int64_t part_bytes = element_bytes(problem_.dtype) * geometry.operand_parts();
    const bool streams_b = geometry.l2_streamed == 1;
    f.streamed_readers = streams_b ? (problem_.m + f.tile_m - 1) / std::max<int64_t>(f.tile_m, 1)
                                   : (problem_.n + f.tile_n - 1) / std::max<int64_t>(f.tile_n, 1);
    f.streamed_bytes = problem_.k * (streams_b ? problem_.n : problem_.m) * part_bytes;
  }
  // FP32 split into TF32 parts runs three products, whether the parts come from the operand passes
  // (the geometry's k_products) or are split in the kernel as operands are staged.
  const Manifest::Math math = manifest_.math(problem_.dtype);
  f.math_type = math.type;
  f.k_products = std::max<int64_t>(geometry.k_products, math.products);
  f.operand_parts = geometry.operand_parts();
  if (manifest_.loads_by_tma()) {  // the producer's threads fill what TMA does not copy
    const int64_t filled_rows =
        (geometry.tma_box_a[0] == 0 ? f.tile_m : 0) + (geometry.tma_box_b[0] == 0 ? f.tile_n : 0);
    f.thread_filled_bytes_per_k = filled_rows * element_bytes(problem_.dtype);
  }
  // An operand read where it lies (not split, not copied; with TMA, one that has a tensor map) whose rows
  // stored tight are 16-byte aligned but off sectors. A TMA cluster's blocks share each box of B (or of A),
  // which crosses from L2 once for all of them.
  const int64_t bytes = element_bytes(problem_.dtype);
  const auto unsectored = [&](const std::array<int64_t, 2>& box, int64_t copy_ld, int64_t pitch) {
    const bool in_place =
        (!manifest_.loads_by_tma() || box[0] > 0) && copy_ld == 0 && !geometry.splits_operands();
    return in_place && pitch % 16 == 0 && pitch % kSectorBytes != 0;
  };
  const auto sharers = [&](int64_t operand) {
    return geometry.cluster_shares == operand ? std::max<int64_t>(geometry.cluster, 1) : 1;
  };
  const int64_t unsectored_rows =
      (unsectored(geometry.tma_box_a, geometry.copy_ld_a, problem_.tight_lda() * bytes)
           ? f.tile_m / sharers(2)
           : 0) +
      (unsectored(geometry.tma_box_b, geometry.copy_ld_b, problem_.tight_ldb() * bytes)
           ? f.tile_n / sharers(1)
           : 0);
  f.unsectored_bytes_per_k = unsectored_rows * bytes;
  f.threads = derived(actual, threads_);
  f.smem_bytes = derived(actual, smem_);
  if (manifest_.loads_by_tma()) {  // its shared memory is the stage ring (and C's staging, if any)
    const int64_t stage_bytes = (f.tile_m + f.tile_n) * f.operand_parts * bytes * f.k_granule;
    f.loads_in_flight_bytes = std::max<int64_t>(f.smem_bytes - stage_bytes, stage_bytes);
  }
  f.est_regs = derived(actual, regs_);
  // A warp-specialized template (its manifest derives CONSUMER_REGS) estimates its consumers' need, which
  // setmaxnreg meets with the producer's registers: at launch every thread holds one block's share of the
  // register file at most.
  if (shares_registers_)
    f.est_regs = std::min(f.est_regs, device_.regs_per_block / std::max<int64_t>(f.threads, 1) / 8 * 8);
  return f;
}

}  // namespace gemmforge::model
