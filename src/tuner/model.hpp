// The analytic performance model of the guided strategy: what a candidate should cost on a device, from
// its footprint alone. It ranks candidates before any is measured; what it gets wrong is learnt online
// (residual_model.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/device_info.hpp"
#include "gemmforge/types.hpp"
#include "tuner/candidate_table.hpp"

namespace gemmforge::tuner {

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
  double time_ms = 0;         ///< main loop + split-K + launch; infinite when a block does not fit
  double main_loop_ms = 0;    ///< waves of tile computation
  double split_k_ms = 0;      ///< reducing the K slices: serial hand-over of C, or summing partial tiles
  double flops_per_byte = 0;  ///< arithmetic intensity of a block tile against the operand bytes it loads
  double latency_hiding = 0;  ///< share of the issue rate a full wave's warps sustain (1: enough warps)
  double memory_bound = 0;    ///< full-wave time over its compute time (1: compute-bound)
  Occupancy occupancy;
  Waves waves;
};

/// Time of one candidate: each SM runs its resident blocks concurrently, a round of b blocks lasting as
/// long as the slower of its FMA work (slowed when too few warps hide latency, and by the operand loads
/// of small register tiles) and its operand loads from L2 (the SM's share of L2 bandwidth); full waves
/// run at full occupancy, the partial last wave at the blocks it has per SM. With stream-K, the whole
/// tiles and the stream wave are two such phases. `registers_per_thread` is the estimate or a
/// calibrated one.
Estimate estimate(const DeviceInfo& device, const Footprint& footprint, int64_t registers_per_thread,
                  int element_bytes);

/// Bytes of one element of A, B and C.
int element_bytes(Dtype dtype);

/// Every candidate's estimated time with manifest register estimates, in ms (infinite for those the
/// model says cannot launch).
std::vector<double> estimate_all(const SearchSpace& space, const CandidateTable& table);

}  // namespace gemmforge::tuner
