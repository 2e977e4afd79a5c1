// The analytic performance model: occupancy, waves with their tail, roofline of a block tile, split-K,
// and the device-memory floor.
#include "model/analytic.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dtype.hpp"

namespace gemmforge::model {
namespace {

// Allocation rules of sm_80 to sm_90 (the CUDA occupancy calculator's figures).
constexpr int64_t kRegisterUnit = 256;  // registers are granted per warp in these units
constexpr int64_t kSubPartitions = 4;   // each holds a quarter of the register file
constexpr int64_t kSmemUnit = 128;
constexpr int64_t kSmemReservedPerBlock = 1024;

// Warps per SM that keep the FMA pipes busy: register tiles give each warp long runs of independent
// FMAs, so two warps per scheduler cover shared-memory and pipeline latency.
constexpr double kWarpsToHideLatency = 8;
// The L2's rate to one SM in bytes per SM clock, the same whatever the SM multiplies. Operand tiles, kept
// many bytes in flight by TMA, cp.async or a register pipeline, cross at about 51 bytes a clock (13.4 TB/s
// on the H100: 132 SMs at 1.98 GHz); a block tile of lower intensity than the SM's math rate over this
// waits on its loads. Partial tiles of split-K and stream-K sums, which a block's threads read and write
// after their main loop with few loads in flight, move at half that rate. Both used to be tied to the rate
// of the kernel's math (0.1 byte per flop), which charged a 16-bit kernel's sums at 16 times the FP32
// kernels' rate, more than an SM's port to L2 carries: with every H100 problem left out in turn,
// 16x4096x4096 BF16 nn then took a stream-K config that cut 16 tiles into 8 segments each, predicted at
// 0.65x of its time and measured 1.55x its best's (1.13x with these rates); the left-out chosen configs ran
// 1.100x their best's time (1.081x with these rates).
constexpr double kL2OperandBytesPerSmClock = 51.2;
constexpr double kL2SumBytesPerSmClock = 25.6;
// Each k-step a thread loads (and for tf32x3 splits) operands for its accumulators: about 2 * sqrt(acc)
// values for acc accumulators, so issue time grows by a factor 1 + kOperandOverhead / sqrt(acc) over the
// multiply-adds alone. Fitted on the H200 to sgemm_tf32x3 at 128x4096x4096, where 32x32 warp tiles (32
// accumulators per thread) ran about 12% slower per flop than 64x32 ones (64).
constexpr double kOperandOverhead = 3.0;
// A K slice waits for the previous slice's semaphore and C tile before adding its own: a round trip
// through L2 and a fence.
constexpr double kSliceHandoffMs = 0.002;
constexpr double kLaunchMs = 0.003;
// A round of blocks starting on the SMs: its first loads come from device memory before any product, and
// its last tile's epilogue stores C with nothing to overlap: about a device-memory round trip each way. A
// persistent block pays it once and overlaps the loads of its next tile with the store of its last.
// Measured on the H100: 8192x8192x64 FP32 ran 0.280 ms in 31 rounds of one-tile blocks against 0.188 ms
// persistent, about 3 us a round.
constexpr double kBlockStartMs = 0.003;
// Threads copying operand tiles through their registers into a TMA kernel's shared stages (operands TMA
// cannot address) keep few loads in flight: a block fills at about this rate, whatever its tile. Measured
// on the H100 with gemm_tma at 4103x4105x4104 and 4097^3 BF16: 14 and 22 GB/s per block.
constexpr double kThreadFillBytesPerMs = 18e6;
// Operand rows that do not start on 32-byte sectors (kSectorBytes), read by TMA or by 16-byte cp.async: the
// GPU as a whole reads them at about sm_count times this, however many SMs ask. Measured on the H100 (132
// SMs), BF16, on training problems (shapes/half-pitch-train.txt): gemm_tma with 128 x 256 tiles moved 811 MB
// of such boxes in 0.163 ms at 2048x2048x8200 nt, 1.79 GB in 0.370 ms at 4104^3 nn, 1.64 GB in 0.326 ms at
// 4096x4096x4104 nt; gemm_wgmma's cp.async 1.61 GB in 0.321 ms at 2048x2048x8200 nt (64 x 128 tiles;
// 0.222 ms at K = 8192) and 537 MB in 0.110 ms at 1024x1024x8200 nt (64 x 64 tiles; 0.084 ms at 8192);
// about 5.0 TB/s.
constexpr double kUnsectoredBytesPerSmMs = 38e6;
// Device memory and L2 answer a load after about this long under load, so a block whose loads in flight
// are `b` bytes receives its operand tiles at b per this time at most (Little's law). Measured on the H200
// with gemm_tma at BF16 128x4096x4096 nn, 64 x 64 tiles, one block per SM: 4 stages (48 KiB in flight)
// ran 0.0316 ms against 0.0244 for 8 stages (112 KiB), which the L2's rate to an SM bounds: about the
// difference that 0.8 us gives.
constexpr double kLoadLatencyMs = 0.8e-3;
// Used when a device description lacks its clock.
constexpr double kFallbackClockKhz = 1.5e6;
constexpr double kFallbackSmFlopsPerMs = 2.0 * 128 * kFallbackClockKhz;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Occupancy estimate_occupancy(const DeviceInfo& device, int64_t threads, int64_t registers_per_thread,
                             int64_t smem_bytes) {
  Occupancy o;
  const int64_t warp = std::max(1, device.warp_size);
  const int64_t warps_per_block = ceil_div(std::max<int64_t>(threads, 1), warp);
  const int64_t registers_per_warp =
      ceil_div(std::max<int64_t>(registers_per_thread, 1) * warp, kRegisterUnit) * kRegisterUnit;
  const int64_t smem = ceil_div(std::max<int64_t>(smem_bytes, 0), kSmemUnit) * kSmemUnit;
  if (threads > device.max_threads_per_block || smem > device.smem_per_block_optin ||
      registers_per_warp * warps_per_block > device.regs_per_block) {
    return o;
  }
  const int64_t max_warps = device.max_threads_per_sm / warp;
  const int64_t by_threads = max_warps / warps_per_block;
  const int64_t by_registers =
      kSubPartitions * (device.regs_per_sm / kSubPartitions / registers_per_warp) / warps_per_block;
  const int64_t by_smem = device.smem_per_sm / (smem + kSmemReservedPerBlock);
  const int64_t by_slots = device.max_blocks_per_sm;
  int64_t blocks = by_slots;
  o.limit = Occupancy::Limit::kBlockSlots;
  for (auto [limit, count] : {std::pair{Occupancy::Limit::kThreads, by_threads},
                              std::pair{Occupancy::Limit::kRegisters, by_registers},
                              std::pair{Occupancy::Limit::kSharedMemory, by_smem}}) {
    if (count < blocks) {
      blocks = count;
      o.limit = limit;
    }
  }
  o.blocks_per_sm = static_cast<int>(std::max<int64_t>(blocks, 0));
  o.warps_per_sm = static_cast<int>(o.blocks_per_sm * warps_per_block);
  o.warp_fraction = max_warps > 0 ? static_cast<double>(o.warps_per_sm) / max_warps : 0;
  return o;
}

Waves count_waves(int64_t blocks, int blocks_per_sm, int sm_count) {
  Waves w;
  w.blocks = blocks;
  w.slots = static_cast<int64_t>(blocks_per_sm) * sm_count;
  if (w.slots <= 0 || blocks <= 0) {
    w.waves = blocks > 0 ? std::numeric_limits<double>::infinity() : 0;
    return w;
  }
  w.full_waves = blocks / w.slots;
  w.tail_blocks = blocks % w.slots;
  w.tail_blocks_per_sm = ceil_div(w.tail_blocks, sm_count);
  w.waves = static_cast<double>(blocks) / w.slots;
  w.utilization = static_cast<double>(blocks) / (ceil_div(blocks, w.slots) * w.slots);
  return w;
}

double dram_bytes_per_ms(const DeviceInfo& device) {
  // HBM and GDDR transfer on both clock edges.
  return 2.0 * device.memory_clock_khz * (device.memory_bus_width / 8.0);
}

Estimate estimate(const DeviceInfo& device, const KernelProblem& problem, const Footprint& f,
                  int64_t registers_per_thread) {
  const int element_bytes = gemmforge::element_bytes(problem.dtype);
  Estimate e;
  e.occupancy = estimate_occupancy(device, f.threads, registers_per_thread, f.smem_bytes);
  const bool stream = f.stream_blocks > 0;
  e.waves = count_waves(stream ? f.whole_tiles + f.stream_blocks : f.tiles * f.split_k,
                        e.occupancy.blocks_per_sm, device.sm_count);
  const double flops_per_k = 2.0 * f.tile_m * f.tile_n * f.k_products;
  const double bytes_per_k = static_cast<double>(element_bytes) * (f.tile_m + f.tile_n) * f.operand_parts;
  e.flops_per_byte = bytes_per_k > 0 ? flops_per_k / bytes_per_k : 0;
  if (e.occupancy.blocks_per_sm == 0 || device.sm_count <= 0) {
    e.time_ms = e.main_loop_ms = std::numeric_limits<double>::infinity();
    return e;
  }
  const double peak = peak_tflops(f.math_type, device);
  const double sm_flops_per_ms = peak > 0 ? peak * 1e9 / device.sm_count : kFallbackSmFlopsPerMs;
  const double sm_clocks_per_ms =
      device.clock_khz > 0 ? static_cast<double>(device.clock_khz) : kFallbackClockKhz;
  const double sm_bytes_per_ms = sm_clocks_per_ms * kL2OperandBytesPerSmClock;
  const double sm_sum_bytes_per_ms = sm_clocks_per_ms * kL2SumBytesPerSmClock;
  const int64_t warps_per_block = ceil_div(std::max<int64_t>(f.threads, 1), std::max(1, device.warp_size));
  const double accumulators = static_cast<double>(f.tile_m * f.tile_n) / std::max<int64_t>(f.threads, 1);
  const double issue_factor = 1 + kOperandOverhead / std::sqrt(std::max(accumulators, 1.0));

  // One round of `blocks` co-resident blocks on an SM, each summing `k_extent` of K: its compute time
  // and its total time.
  const auto round_ms = [&](int64_t blocks, int64_t k_extent, double* hiding, double* compute_ms) {
    const double h = std::min(1.0, static_cast<double>(blocks * warps_per_block) / kWarpsToHideLatency);
    const double compute = blocks * flops_per_k * k_extent * issue_factor / (sm_flops_per_ms * h);
    if (hiding != nullptr) *hiding = h;
    if (compute_ms != nullptr) *compute_ms = compute;
    const double filled = f.thread_filled_bytes_per_k * k_extent / kThreadFillBytesPerMs;
    const double in_flight =
        f.loads_in_flight_bytes > 0 ? bytes_per_k * k_extent * kLoadLatencyMs / f.loads_in_flight_bytes : 0;
    return std::max({compute, blocks * bytes_per_k * k_extent / sm_bytes_per_ms, filled, in_flight});
  };
  // `blocks` blocks of `k_extent` each over every slot: full waves, then a partial one.
  const auto phase_ms = [&](int64_t blocks, int64_t k_extent) {
    const Waves w = count_waves(blocks, e.occupancy.blocks_per_sm, device.sm_count);
    if (blocks <= 0) return 0.0;
    const int64_t resident = std::min<int64_t>(e.occupancy.blocks_per_sm, ceil_div(blocks, device.sm_count));
    return w.full_waves * round_ms(resident, k_extent, nullptr, nullptr) +
           (w.tail_blocks > 0 ? round_ms(w.tail_blocks_per_sm, k_extent, nullptr, nullptr) : 0);
  };

  double full_compute_ms = 0;
  const int64_t resident =
      std::min<int64_t>(e.occupancy.blocks_per_sm, ceil_div(e.waves.blocks, device.sm_count));
  const double full_round_ms = round_ms(resident, f.k_per_split, &e.latency_hiding, &full_compute_ms);
  e.memory_bound = full_compute_ms > 0 ? full_round_ms / full_compute_ms : 1;
  const double tile_bytes = static_cast<double>(element_bytes) * f.tile_m * f.tile_n;
  // A K range handing its sum to the next reads and writes C's tile.
  const double handoff_ms = kSliceHandoffMs + 2 * tile_bytes / sm_sum_bytes_per_ms;
  // K ranges summed through the workspace (parallel_split): each but the last leaves an FP32 partial tile
  // at once and the last reads them all, `pieces` partial tiles' worth in all.
  const double partial_bytes = 4.0 * f.tile_m * f.tile_n;
  const auto parallel_sums_ms = [&](double pieces) {
    return kSliceHandoffMs + pieces * partial_bytes / sm_sum_bytes_per_ms;
  };
  if (stream) {
    // Whole tiles in full waves, then one wave of stream blocks.
    e.main_loop_ms = phase_ms(f.whole_tiles, f.k_per_split) + phase_ms(f.stream_blocks, f.stream_k);
    // The stream blocks' ranges cut the streamed tiles into this many segments. A stream block's segments
    // after its first start their loads anew and store a tile with nothing to overlap, as a round of block
    // starts does.
    const int64_t streamed = f.tiles - f.whole_tiles;
    const int64_t segments = f.stream_blocks + streamed - 1;
    const double segments_per_tile = streamed > 0 ? static_cast<double>(segments) / streamed : 1;
    // The kernel ends with its slowest blocks: those that take the most segments pay their starts, however
    // few blocks do.
    const int64_t most_segments_per_block = ceil_div(segments, f.stream_blocks);
    e.segments_per_tile = segments_per_tile;
    // A streamed tile's segments add into C one after the other, or through the workspace.
    const double sums_ms = f.parallel_split ? parallel_sums_ms(segments_per_tile)
                                            : std::max(0.0, segments_per_tile - 1) * handoff_ms;
    e.split_k_ms = (segments_per_tile > 1 ? sums_ms : 0) +
                   static_cast<double>(std::max<int64_t>(most_segments_per_block - 1, 0)) * kBlockStartMs;
  } else {
    e.main_loop_ms = phase_ms(f.tiles * f.split_k, f.k_per_split);
    if (f.split_k > 1) {
      // Serial: each slice in turn reads and writes the C tile. Parallel: through the workspace.
      e.split_k_ms =
          f.parallel_split ? parallel_sums_ms(static_cast<double>(f.split_k)) : (f.split_k - 1) * handoff_ms;
    }
  }
  if (f.unsectored_bytes_per_k > 0) {
    // Every tile reads its whole K once, however its K is shared out.
    const int64_t granule = std::max<int64_t>(f.k_granule, 1);
    const double k_read = static_cast<double>(ceil_div(problem.k, granule) * granule);
    const double unsectored_ms = static_cast<double>(f.tiles) * k_read * f.unsectored_bytes_per_k /
                                 (kUnsectoredBytesPerSmMs * device.sm_count);
    e.main_loop_ms = std::max(e.main_loop_ms, unsectored_ms);
  }
  // Device memory: A and B (both TF32 parts of a split operand) are read while the blocks compute, so
  // their reading overlaps the main loop; C is written as tiles finish, mostly after their blocks' main
  // loops.
  const double bandwidth = dram_bytes_per_ms(device);
  double c_write_ms = 0;
  if (bandwidth > 0) {
    const double bytes = static_cast<double>(element_bytes);
    e.dram_ms = bytes * static_cast<double>(f.operand_parts) *
                (static_cast<double>(problem.m) * problem.k + static_cast<double>(problem.k) * problem.n) /
                bandwidth;
    c_write_ms = bytes * static_cast<double>(problem.m) * problem.n / bandwidth;
  }
  // An operand streamed through L2 (evict-first) is read from device memory again by each later round of
  // tiles that needs it: the tiles of one round that read a panel of it read it together, while its lines
  // are in L2, but the lines are the first to go, so a later round finds them gone. Charged once per tile
  // row (B) or column (A) beyond the first, the left-out H100 problems ranked their configs with a median
  // correlation of 0.885 and chose configs 1.081x their best's time; once per round, 0.893 and 1.077x.
  if (bandwidth > 0 && f.streamed_readers > 1) {
    const double rounds = std::min(static_cast<double>(f.streamed_readers), std::ceil(e.waves.waves));
    e.dram_ms += std::max(0.0, rounds - 1) * static_cast<double>(f.streamed_bytes) / bandwidth;
  }
  // Operands split into TF32 parts or copied with aligned rows first: a pass of their own through device
  // memory, and its launch.
  const double operand_pass_ms =
      f.operand_pass_bytes > 0 && bandwidth > 0 ? f.operand_pass_bytes / bandwidth + kLaunchMs : 0;
  const int64_t launched = f.blocks > 0 ? f.blocks : e.waves.blocks;
  e.block_start_ms =
      static_cast<double>(ceil_div(launched, std::max<int64_t>(e.waves.slots, 1))) * kBlockStartMs;
  e.time_ms = std::max(e.main_loop_ms + e.split_k_ms, e.dram_ms) + c_write_ms + operand_pass_ms + kLaunchMs +
              e.block_start_ms;
  return e;
}

}  // namespace gemmforge::model
