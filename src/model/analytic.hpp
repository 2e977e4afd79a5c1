// The analytic performance model: what a config should cost on a device, from its footprint alone. The
// tuner's guided strategy ranks candidates with it before any is measured and learns online what it gets
// wrong (tuner/residual_model.hpp); the fitted model (performance_model.hpp) corrects it from every stored
// measurement.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device_info.hpp"
#include "model/footprint.hpp"

namespace gemmforge::model {

/// Resident blocks per SM.
struct Occupancy {
  enum class Limit { kThreads, kRegisters, kSharedMemory, kBlockSlots };
  int blocks_per_sm = 0;     ///< 0 when a single block does not fit
  int warps_per_sm = 0;      ///< resident warps
  double warp_fraction = 0;  ///< resident warps over the SM's maximum
  Limit limit = Limit::kBlockSlots;
};

/// Resident blocks per SM under the allocation rules of sm_80 and later: registers per warp in units of
/// 256 and from each of the four SM sub-partitions separately; shared memory in units of 128 bytes plus
/// 1 KiB the system reserves per block.
Occupancy estimate_occupancy(const DeviceInfo& device, int64_t threads, int64_t registers_per_thread,
                             int64_t smem_bytes);

/// How the blocks of a launch fall into waves over the resident-block slots of all SMs.
struct Waves {
  int64_t blocks = 0;              ///< tiles × K slices
  int64_t slots = 0;               ///< resident blocks per SM × SMs
  int64_t full_waves = 0;          ///< waves that fill every slot
  int64_t tail_blocks = 0;         ///< blocks of the last, partial wave; 0 when every wave is full
  int64_t tail_blocks_per_sm = 0;  ///< on the busiest SM during that partial wave
  double waves = 0;                ///< blocks / slots
  double utilization = 0;          ///< blocks / (whole waves × slots): share of slot time doing work
};

Waves count_waves(int64_t blocks, int blocks_per_sm, int sm_count);

/// The model's estimate for one candidate, with the terms it is made of.
struct Estimate {
  double time_ms = 0;            ///< main loop + split-K + launch; infinite when a block does not fit
  double dram_ms = 0;            ///< reading A and B through device memory once: no main loop is faster
  double main_loop_ms = 0;       ///< waves of tile computation
  double split_k_ms = 0;         ///< reducing the K slices: serial hand-over of C, or summing partial tiles
  double block_start_ms = 0;     ///< rounds of blocks over the SMs, each filling its pipeline and storing its
                                 ///< last tile: a persistent launch starts one round
  double segments_per_tile = 1;  ///< with stream-K: the segments a streamed tile's K is cut into, whose
                                 ///< partial sums its last segment gathers
  double flops_per_byte = 0;     ///< arithmetic intensity of a block tile against the operand bytes it loads
  double latency_hiding = 0;     ///< share of the issue rate a full wave's warps sustain (1: enough warps)
  double memory_bound = 0;       ///< full-wave time over its compute time (1: compute-bound)
  Occupancy occupancy;
  Waves waves;
};

/// Time of one candidate: each SM runs its resident blocks concurrently, a round of b blocks lasting as
/// long as the slower of its FMA work (slowed when too few warps hide latency, and by the operand loads
/// of small register tiles) and its operand loads from L2 (the SM's share of L2 bandwidth); full waves
/// run at full occupancy, the partial last wave at the blocks it has per SM. With stream-K, the whole
/// tiles and the stream wave are two such phases. No main loop beats reading A and B once through device
/// memory, and writing C adds its own time (`problem` gives their sizes). `registers_per_thread` is the
/// estimate or a calibrated one.
Estimate estimate(const DeviceInfo& device, const KernelProblem& problem, const Footprint& footprint,
                  int64_t registers_per_thread);

/// Device memory bandwidth in bytes per ms from the memory clock and bus width (double data rate);
/// 0 when the device description lacks them.
double dram_bytes_per_ms(const DeviceInfo& device);

}  // namespace gemmforge::model
