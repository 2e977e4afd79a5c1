// A template's manifest: its parameters and their domains, derived values, constraints and launch rule.
// The tuner, the runtime, the tests and `gemmforge space` all read this one description.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/expression.hpp"
#include "core/problem.hpp"
#include "gemmforge/types.hpp"

namespace gemmforge {

struct Parameter {
  std::string name;
  std::vector<int64_t> values;  ///< the domain, in the order the manifest lists it
  bool launch = false;          ///< chosen at launch time: does not change the compiled kernel
  std::string doc;
  /// The value a config written without this parameter means (configs stored before it existed).
  std::optional<int64_t> absent;
};

/// An expression with its identifiers resolved to slots of the manifest's symbol table.
struct BoundExpression {
  Expression expression;
  std::vector<int> slots;      ///< symbol slot of each identifier of `expression`
  bool needs_device = false;   ///< reads device.* (directly or through a derived value)
  bool needs_problem = false;  ///< reads problem.* (directly or through a derived value)
  int last_parameter = -1;     ///< highest parameter index it depends on, -1 for none

  int64_t evaluate(const int64_t* symbols) const;
};

struct DerivedValue {
  std::string name;
  BoundExpression value;
  bool define = false;  ///< passed to the compiler as -DNAME=value
  std::string doc;
};

/// A condition on configs. Constraints decide validity (a config breaking one cannot run correctly or at
/// all); pruning rules only keep unpromising configs out of the tuner's search space.
struct Constraint {
  std::string name;
  BoundExpression condition;
  std::string message;  ///< why the rule exists, for error messages and `gemmforge space`
};

/// Rows of the operands a template's passes write into the workspace for TMA (split parts, aligned copies)
/// are whole multiples of this many bytes apart. TMA reads a box's rows of 128 bytes (the swizzle's span)
/// slower from rows that are only 16-byte aligned: on an H100, BF16 4096x4104x4096 nn (B's rows 8208 bytes
/// apart) ran 0.287 ms against 0.237 for 4096x4352x4096 (8704 bytes), the same 544 tiles.
inline constexpr int64_t kWorkspaceRowBytes = 128;
/// The GPU reads rows that start on 32-byte sectors at its full speed, and rows merely 16-byte aligned at
/// about half of it once most SMs read them, by TMA and by 16-byte cp.async alike (H100, BF16 nt: gemm_tma
/// at 2048x2048x8200, rows 16400 bytes apart, 0.163 ms against 0.089 at K = 8192; gemm_wgmma's cp.async
/// 0.321 against 0.222). A manifest sees each operand's tight pitch (problem.pitch_a, pitch_b) to copy such
/// rows first (gemm_tma's SECTOR_COPY), and the analytic model charges reading them in place.
inline constexpr int64_t kSectorBytes = 32;

/// How a config is launched for a problem.
struct LaunchGeometry {
  int64_t tiles = 0;              ///< output tiles
  int64_t split_k = 1;            ///< K slices actually used: grid.z
  int64_t k_per_split = 0;        ///< K extent of each slice, a multiple of the template's K granule
  int64_t k_granule = 1;          ///< K depth of one main-loop iteration
  int64_t whole_tiles = 0;        ///< stream-K: tiles computed whole (one per block unless persistent) first
  int64_t stream_blocks = 0;      ///< stream-K: blocks sharing the other tiles' K iterations (0: none)
  int64_t threads = 0;            ///< threads per block
  int64_t smem_bytes = 0;         ///< dynamic shared memory per block
  int64_t raster_group = 1;       ///< tile rows grouped together for L2 reuse
  int64_t semaphores = 0;         ///< ints that must be zero when the kernel starts (it leaves them zero)
  int64_t workspace_bytes = 0;    ///< scratch: split-K partial tiles, operands' TF32 parts or copies
  int64_t persistent_blocks = 0;  ///< nonzero: at most this many blocks walk the tiles in turn
  /// Thread block clusters: blocks per cluster along x, and the work units the clusters share out (each a
  /// cluster's worth of tiles); 1: no clusters.
  int64_t cluster = 1;
  int64_t cluster_units = 0;
  /// The operand a cluster's blocks share, each loading a part of its boxes (launch.cluster_shares): 1 B (the
  /// blocks compute vertically adjacent tiles), 2 A (horizontally adjacent ones), 0 none.
  int64_t cluster_shares = 0;
  /// Boxes (elements along the operand's contiguous dimension, then along its rows) of kernels that read
  /// A and B (and store C) through tensor maps (TMA); {0, ...}: the operand is not accessed by TMA, and gets
  /// no map.
  std::array<int64_t, 2> tma_box_a{0, 0};
  std::array<int64_t, 2> tma_box_b{0, 0};
  std::array<int64_t, 2> tma_box_c{0, 0};
  /// FP32 at FP32 accuracy from TF32 products: with 3, a kernel of the template's own (`<kernel>_split`)
  /// first splits each operand into TF32 parts, big = tf32(x) and small = tf32(x - big), K-major in the
  /// workspace (A's big rows over its small rows, then B's likewise, rows `parts_ld` floats apart, a
  /// multiple of kWorkspaceRowBytes, from byte `parts_offset`), and the main kernel sums small(A) big(B),
  /// big(A) small(B) and big(A) big(B) per stage of K. 1: no split.
  int64_t k_products = 1;
  int64_t parts_ld = 0;
  int64_t parts_offset = 0;
  int64_t parts_b = 0;  ///< floats from A's parts to B's: A's 2 m rows
  /// Operands TMA cannot read in place (their start or rows not 16-byte aligned) are copied first by a
  /// kernel of the template's own (`<kernel>_realign`) into the workspace as they lie, their rows
  /// `copy_ld_a` (B: `copy_ld_b`) elements apart, a multiple of kWorkspaceRowBytes, from byte
  /// `copy_offset_a` (`copy_offset_b`) on. An ld of 0: the operand is read in place.
  int64_t copy_ld_a = 0;
  int64_t copy_offset_a = 0;
  int64_t copy_ld_b = 0;
  int64_t copy_offset_b = 0;
  int64_t copy_bytes = 0;  ///< bytes of the copies
  /// The operand the kernel reads with an evict-first L2 policy (launch.l2_streamed): 1 B, 2 A, 0 neither.
  /// Its lines give way first, so it comes from device memory again wherever other tiles read it later.
  int64_t l2_streamed = 0;
  /// Workspace bytes of the partial tiles of a parallel split-K reduction or of stream-K segments summed
  /// through the workspace, which come first.
  int64_t partial_bytes = 0;

  bool uses_tensor_maps() const { return tma_box_a[0] > 0 || tma_box_b[0] > 0 || tma_box_c[0] > 0; }
  bool splits_operands() const { return k_products > 1; }
  /// Tiles of each operand a block loads per unit of K: big and small parts when split, else the operand.
  int64_t operand_parts() const { return splits_operands() ? 2 : 1; }
  bool copies_operands() const { return copy_ld_a > 0 || copy_ld_b > 0; }
  /// Bytes that the pass over the operands before the main kernel moves through device memory: the split
  /// reads A and B and writes their two parts; the copies read what they write.
  int64_t operand_pass_bytes() const {
    if (splits_operands()) return (workspace_bytes - parts_offset) * 3 / 2;
    return 2 * copy_bytes;
  }
  /// grid.x: one block per tile (or fewer, persistent), or the whole tiles and then the stream blocks (or,
  /// persistent, a wave of blocks walking the whole tiles, the first stream_blocks of them streaming then).
  int64_t grid_x() const {
    if (stream_blocks > 0) {
      return persistent_blocks > 0 && whole_tiles > 0 ? std::max(persistent_blocks, stream_blocks)
                                                      : whole_tiles + stream_blocks;
    }
    if (cluster > 1) {
      const int64_t clusters =
          persistent_blocks > 0 ? std::min(cluster_units, persistent_blocks / cluster) : cluster_units;
      return cluster * clusters;
    }
    return persistent_blocks > 0 ? std::min(tiles, persistent_blocks) : tiles;
  }
  /// Blocks of the launch.
  int64_t blocks() const { return grid_x() * split_k; }
};

/// One broken constraint of a config.
struct Violation {
  const Constraint* constraint = nullptr;
  std::string describe() const;
};

class Manifest {
 public:
  /// Parses a manifest; `origin` (a file name) prefixes every error. Throws InvalidArgumentError.
  static Manifest parse(const std::string& json_text, const std::string& origin);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& source_file() const { return source_file_; }
  const std::string& kernel_name() const { return kernel_name_; }
  /// The operand type of the first type the template serves (what a problem stated without one gets).
  Dtype dtype() const { return types_.front().first; }
  /// Whether the template computes problems of operands `dtype` and C `c_dtype`.
  bool serves(Dtype dtype, Dtype c_dtype) const;
  /// "bf16, bf16>f32": the types served, as type names.
  std::string type_names() const;
  /// The first type served, as a type name (what a problem stated without a type gets).
  std::string default_type_name() const;
  int min_cc() const { return min_cc_; }
  /// The one architecture the template's code is written for ("sm_90a": wgmma, setmaxnreg), or empty when
  /// it compiles for any device of compute capability min_cc() or newer, for the device's own arch.
  const std::string& arch() const { return arch_; }
  /// Whether its configs may run the operand passes (templates/operand_passes.cu) before the main kernel:
  /// its launch section gives k_products, copy_a or copy_b. The main kernel may then be launched to
  /// overlap the passes' end and must call gf::wait_for_previous_grid (grid_dependence.cuh) before it
  /// reads anything (sm_90 and newer; tests/unit/tma_compile_test.cpp holds every such template to it).
  bool prepares_operands() const { return prepares_operands_; }
  /// Whether it multiplies in FP32 FFMA whatever its operands' type ("math": "ffma"), rather than on the
  /// units the type is computed on (tensor cores for 16-bit and TF32 operands).
  bool multiplies_in_fp32() const { return multiplies_in_fp32_; }
  /// The type whose units run the multiply-adds of a problem of operands `dtype`, and how many products of
  /// that type make one multiply-add. FFMA where the template multiplies in FP32, and for FP32 where it
  /// serves FFMA's pedantic type too; for FP32 on a template that does not, TF32 three times (FP32 at FP32
  /// accuracy as three TF32 tensor-core products of split operands); otherwise the operands' own type, once.
  struct Math {
    Dtype type;
    int products;
  };
  Math math(Dtype dtype) const;
  /// Whether its kernels load operands by TMA (its launch section gives tensor map boxes): its threads then
  /// fill only the operands a config's geometry gives no box.
  bool loads_by_tma() const { return launch_.tma_box_a.has_value(); }
  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<DerivedValue>& derived() const { return derived_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const std::vector<Constraint>& pruning() const { return pruning_; }
  const std::vector<Config>& seeds() const { return seeds_; }

  const Parameter* find_parameter(const std::string& name) const;
  /// Number of configs before any constraint (product of domain sizes).
  double space_size() const;

  /// Checks names and domains: every parameter present once, every value inside its domain, nothing
  /// unknown. Returns the config re-ordered as the manifest lists its parameters.
  Config normalize(const Config& config) const;

  /// All constraints the config breaks; those needing a device or problem are checked only when given.
  std::vector<Violation> violations(const Config& config, const DeviceInfo* device = nullptr,
                                    const KernelProblem* problem = nullptr) const;
  /// The pruning rules the config breaks for a problem on a device (rules needing neither are checked too).
  std::vector<Violation> pruned_by(const Config& config, const DeviceInfo& device,
                                   const KernelProblem& problem) const;
  /// normalize() then violations(); throws InvalidArgumentError naming every broken constraint.
  Config check(const Config& config, const DeviceInfo* device = nullptr,
               const KernelProblem* problem = nullptr) const;

  /// Preprocessor definitions of the kernel for this config and problem class: every compile-time
  /// parameter and every derived value marked `define`.
  std::vector<std::pair<std::string, int64_t>> defines(const Config& config,
                                                       const KernelProblem& problem) const;
  /// Grid, block, shared memory and K split of a (valid) config for a problem on a device (stream-K
  /// shares out the tiles past the device's last full wave).
  LaunchGeometry geometry(const Config& config, const KernelProblem& problem, const DeviceInfo& device) const;

  // Symbol table, for code that evaluates many configs quickly (the search space).
  int symbol_count() const { return static_cast<int>(symbols_.size()); }
  int derived_slot(size_t index) const { return static_cast<int>(parameters_.size() + index); }
  /// Fills the device.* and problem.* slots; either pointer may be null.
  void bind_context(int64_t* symbols, const DeviceInfo* device, const KernelProblem* problem) const;

 private:
  BoundExpression bind(const std::string& text, const std::string& where) const;
  /// Evaluates parameters, context and every derived value computable in that context into `symbols`.
  std::vector<int64_t> symbols_for(const Config& normalized, const DeviceInfo* device,
                                   const KernelProblem* problem) const;

  std::string origin_;
  std::string name_;
  std::string description_;
  std::string source_file_;
  std::string kernel_name_;
  std::vector<std::pair<Dtype, Dtype>> types_;  // (operands, C) served
  int min_cc_ = 0;
  std::string arch_;
  std::vector<Parameter> parameters_;
  std::vector<DerivedValue> derived_;
  std::vector<Constraint> constraints_;
  std::vector<Constraint> pruning_;
  std::vector<Config> seeds_;
  std::vector<std::string> symbols_;  // parameters, derived values, then context variables
  int derived_count_ = 0;
  bool prepares_operands_ = false;
  bool multiplies_in_fp32_ = false;

  struct Launch {
    BoundExpression threads, smem_bytes, tiles, split_k, k_granule, raster_group, partial_tile_floats;
    BoundExpression stream_waves;    // 0: no stream-K; w: the tiles past the last full wave and w - 1 more
    BoundExpression k_products;      // 3: operands split into TF32 parts first (LaunchGeometry::k_products)
    BoundExpression copy_a, copy_b;  // nonzero: the operand is copied with aligned rows first (copy_ld_a)
    BoundExpression wave;            // blocks the device runs at once
    BoundExpression l2_streamed;     // LaunchGeometry::l2_streamed
    // Nonzero: slices write partial tiles and the last one sums them, rather than taking turns in C.
    BoundExpression parallel_split;
    BoundExpression persistent;  // nonzero: one wave of blocks walks the tiles when K is not split
    BoundExpression cluster, cluster_units;  // blocks per cluster (1: none) and the units clusters share
    BoundExpression cluster_shares;          // LaunchGeometry::cluster_shares
    std::optional<std::array<BoundExpression, 2>> tma_box_a, tma_box_b,
        tma_box_c;  // tensor map boxes, when the kernel takes them (C's optional)
  } launch_;
};

}  // namespace gemmforge
