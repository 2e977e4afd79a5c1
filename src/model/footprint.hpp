// What the performance models read of a config for a problem on a device, computed from generic manifest
// data: the derived values THREADS, SMEM_BYTES, EST_REGS and TILES that every GEMM template defines, and
// the launch geometry. No template's parameter names appear here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/manifest.hpp"
#include "core/problem.hpp"

namespace gemmforge::model {

/// Launch shape and resources of one config for one problem.
struct Footprint {
  int64_t tile_m = 0;              ///< rows of C one block computes
  int64_t tile_n = 0;              ///< columns of C one block computes
  int64_t tiles = 0;               ///< blocks per K slice
  int64_t blocks = 0;              ///< blocks launched: tiles x K slices, or one per SM for persistent blocks
  int64_t split_k = 1;             ///< K slices launched
  int64_t k_per_split = 0;         ///< K extent of one slice
  int64_t k_granule = 1;           ///< K depth of one main-loop iteration
  int64_t whole_tiles = 0;         ///< stream-K: tiles computed whole before the stream blocks run
  int64_t stream_blocks = 0;       ///< stream-K: blocks sharing the other tiles' K iterations (0: none)
  int64_t stream_k = 0;            ///< stream-K: K extent one stream block sums
  bool parallel_split = false;     ///< slices leave partial tiles in a workspace for the last one to sum
                                   ///< (stream-K segments add into one there in turn), rather than adding
                                   ///< into C one after the other
  int64_t operand_pass_bytes = 0;  ///< device memory the operand split or copies move before the main kernel
  /// An operand read with an evict-first L2 policy: its bytes (every part), and the tiles that read each of
  /// its panels (tile rows for B, tile columns for A). Its lines do not wait in L2 for tiles of later
  /// rounds.
  int64_t streamed_bytes = 0;
  int64_t streamed_readers = 0;
  Dtype math_type = Dtype::kF32;  ///< whose units run the multiply-adds: FFMA for FP32, else tensor cores
  int64_t k_products = 1;         ///< products per unit of K: 3 TF32 products of split FP32 operands, or 1
  int64_t operand_parts = 1;      ///< tiles of each operand a block loads per unit of K: 2 parts when split
                                  ///< before the main kernel
  /// Bytes per unit of K of a block's operand tiles that its threads copy through registers in a kernel
  /// that loads the others by TMA (operands whose rows TMA cannot address).
  int64_t thread_filled_bytes_per_k = 0;
  /// Bytes per unit of K of a block's operand tiles read in place (by TMA or by the threads' loads) from rows
  /// 16-byte aligned that do not start on 32-byte sectors (stored tight: a leading dimension of 8 modulo 16
  /// 16-bit elements, 4 modulo 8 floats); a TMA cluster's B once, since its blocks share its boxes.
  int64_t unsectored_bytes_per_k = 0;
  /// Operand bytes a block keeps in flight where its shared memory is a ring of stages that TMA fills: all
  /// but the stage its consumers compute on (0 where the template does not say).
  int64_t loads_in_flight_bytes = 0;
  int64_t threads = 0;     ///< threads per block
  int64_t smem_bytes = 0;  ///< dynamic shared memory per block
  int64_t est_regs = 0;    ///< registers per thread as the manifest estimates them before compiling, at most
                           ///< one block's share of the register file where warpgroups trade registers
};

/// Reads footprints of one template's configs for one problem on one device. Throws InvalidArgumentError
/// when the template lacks one of the derived values the models read.
class FootprintReader {
 public:
  FootprintReader(const Manifest& manifest, const DeviceInfo& device, const KernelProblem& problem);

  /// The footprint of a config normalized by the manifest (parameters in manifest order).
  Footprint read(const Config& normalized) const;

 private:
  // The manifest's symbol table for one problem: parameters written in, derived values evaluated in
  // manifest order (they may read earlier ones).
  std::vector<int64_t> symbols(const Config& normalized, const std::vector<int64_t>& context) const;

  const Manifest& manifest_;
  const DeviceInfo& device_;
  const KernelProblem& problem_;
  size_t threads_, smem_, regs_, tiles_;  // derived value indices
  bool shares_registers_;  // the template derives CONSUMER_REGS: its warpgroups trade registers
  // Symbol tables bound to the problem, and to it stretched along M and along N: TILES / extent there
  // recovers a block tile's extent without knowing the template's parameter names.
  std::vector<int64_t> actual_, along_m_, along_n_;
};

}  // namespace gemmforge::model
