// The guided strategy's analytic model: occupancy, waves and their tail, time estimates, and the
// footprints read off the manifests, against values computed by hand for nominal sm_90 limits.
#include "model/analytic.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "search_fixtures.hpp"
#include "support/typed_problem.hpp"
#include "tuner/candidate_table.hpp"

namespace gemmforge::tuner {
namespace {

using model::count_waves;
using model::estimate;
using model::Estimate;
using model::estimate_occupancy;
using model::Occupancy;
using model::Waves;

const DeviceInfo kH100 = DeviceInfo::nominal("sm_90");  // 132 SMs, 64 Ki registers, 228 KiB smem per SM
// 4096^3 moves 201 MB through device memory, 60 us at the nominal 3.35 TB/s: far below its compute time.
const KernelProblem kProblem = [] {
  KernelProblem p;
  p.m = p.n = p.k = 4096;
  return p;
}();

TEST(Occupancy, RegistersLimitTwoBlocksOf256ThreadsAt128Registers) {
  // 128 registers x 32 lanes = 4096 per warp; a sub-partition's 16384 hold 4 warps, the SM 16: two
  // blocks of 8 warps. Threads would allow 8 blocks, shared memory 233472 / (32768 + 1024) = 6.
  const Occupancy o = estimate_occupancy(kH100, 256, 128, 32768);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limit, Occupancy::Limit::kRegisters);
  EXPECT_EQ(o.warps_per_sm, 16);
  EXPECT_DOUBLE_EQ(o.warp_fraction, 0.25);
}

TEST(Occupancy, RegistersAreGrantedPerWarpInUnitsOf256FromEachSubPartition) {
  // 130 registers round up to 136 per lane, 4352 per warp; a sub-partition holds 3 such warps, so
  // 12 one-warp blocks fit, not the 15 that 65536 / 4352 would suggest.
  const Occupancy o = estimate_occupancy(kH100, 32, 130, 0);
  EXPECT_EQ(o.blocks_per_sm, 12);
  EXPECT_EQ(o.limit, Occupancy::Limit::kRegisters);
}

TEST(Occupancy, SharedMemoryCountsItsGranuleAndTheReservedKilobyte) {
  // 100000 bytes round up to 100096, plus 1024 reserved: 233472 / 101120 = 2 blocks.
  const Occupancy o = estimate_occupancy(kH100, 128, 64, 100000);
  EXPECT_EQ(o.blocks_per_sm, 2);
  EXPECT_EQ(o.limit, Occupancy::Limit::kSharedMemory);
}

TEST(Occupancy, ThreadsAndBlockSlotsLimitSmallBlocks) {
  EXPECT_EQ(estimate_occupancy(kH100, 512, 24, 0).blocks_per_sm, 4);  // 2048 threads per SM
  EXPECT_EQ(estimate_occupancy(kH100, 512, 24, 0).limit, Occupancy::Limit::kThreads);
  EXPECT_EQ(estimate_occupancy(kH100, 32, 32, 0).blocks_per_sm, 32);  // 32 block slots per SM
  EXPECT_EQ(estimate_occupancy(kH100, 32, 32, 0).limit, Occupancy::Limit::kBlockSlots);
}

TEST(Occupancy, ABlockBeyondTheDeviceLimitsDoesNotFit) {
  EXPECT_EQ(estimate_occupancy(kH100, 128, 32, 240000).blocks_per_sm, 0);  // over 227 KiB opt-in
  EXPECT_EQ(estimate_occupancy(kH100, 2048, 32, 0).blocks_per_sm, 0);      // over 1024 threads
  EXPECT_EQ(estimate_occupancy(kH100, 1024, 255, 0).blocks_per_sm, 0);     // over 64 Ki registers
}

TEST(Waves, CountFullWavesAndTheTail) {
  // 4096^2 in 128 x 128 tiles: 1024 blocks over 2 x 132 slots = 3 full waves and 232 blocks left,
  // two per SM on the busiest SMs. Slot time used: 1024 / (4 x 264).
  const Waves w = count_waves(1024, 2, 132);
  EXPECT_EQ(w.slots, 264);
  EXPECT_EQ(w.full_waves, 3);
  EXPECT_EQ(w.tail_blocks, 232);
  EXPECT_EQ(w.tail_blocks_per_sm, 2);
  EXPECT_NEAR(w.waves, 3.8788, 1e-4);
  EXPECT_NEAR(w.utilization, 1024.0 / 1056.0, 1e-12);
}

TEST(Waves, OneBlockPastAFullWaveWastesAlmostAWholeWave) {
  EXPECT_DOUBLE_EQ(count_waves(264, 2, 132).utilization, 1.0);
  EXPECT_EQ(count_waves(264, 2, 132).tail_blocks, 0);
  const Waves w = count_waves(265, 2, 132);
  EXPECT_EQ(w.full_waves, 1);
  EXPECT_EQ(w.tail_blocks, 1);
  EXPECT_EQ(w.tail_blocks_per_sm, 1);
  EXPECT_NEAR(w.utilization, 265.0 / 528.0, 1e-12);
}

TEST(Waves, FewerBlocksThanSlotsFormOnePartialWave) {
  const Waves w = count_waves(100, 1, 132);
  EXPECT_EQ(w.full_waves, 0);
  EXPECT_EQ(w.tail_blocks, 100);
  EXPECT_NEAR(w.utilization, 100.0 / 132.0, 1e-12);
}

Footprint tile_128x128(int64_t tiles, int64_t split_k, int64_t k) {
  Footprint f;
  f.tile_m = f.tile_n = 128;
  f.tiles = tiles;
  f.split_k = split_k;
  f.k_per_split = k / split_k;
  f.threads = 256;
  f.smem_bytes = 32768;
  f.est_regs = 128;
  return f;
}

TEST(Estimate, MainLoopIsWholeRoundsOfComputeWhenTheTileIsComputeBound) {
  // An SM does 2 x 128 FMA lanes x 1.98 GHz = 506.88e6 flop/ms. A 128 x 128 tile over K = 4096 is
  // 2 x 128 x 128 x 4096 flop, issued at 1 + 3 / sqrt(64 accumulators per thread) = 1.375 times the
  // multiply-adds' time; two resident blocks (16 warps: latency hidden) take twice that. Its intensity,
  // 32 flop/byte, keeps loads under compute. 3 full waves + a tail of 2 blocks per SM.
  const Estimate e = estimate(kH100, kProblem, tile_128x128(1024, 1, 4096), 128);
  const double round_ms = 2 * (2.0 * 128 * 128 * 4096) * 1.375 / 506.88e6;
  EXPECT_EQ(e.occupancy.blocks_per_sm, 2);
  EXPECT_DOUBLE_EQ(e.latency_hiding, 1.0);
  EXPECT_DOUBLE_EQ(e.memory_bound, 1.0);
  EXPECT_DOUBLE_EQ(e.flops_per_byte, 32.0);
  EXPECT_NEAR(e.main_loop_ms, 4 * round_ms, 1e-9);
  EXPECT_EQ(e.split_k_ms, 0.0);
  EXPECT_GT(e.time_ms, e.main_loop_ms);
}

// The units a footprint's multiply-adds run on set its rate: a template that multiplies 16-bit operands in
// FFMA is charged FFMA's rate, not the tensor cores': its compute-bound tile takes as long as the same tile
// of FP32.
TEST(Estimate, AFp32MathTemplateIsChargedFfmasRateForSixteenBitOperands) {
  KernelProblem half = kProblem;
  half.dtype = half.c_dtype = Dtype::kBf16;
  Footprint f = tile_128x128(1024, 1, 4096);
  f.math_type = Dtype::kBf16;
  const double tensor_cores = estimate(kH100, half, f, 128).main_loop_ms;
  f.math_type = Dtype::kFfma;
  const double ffma = estimate(kH100, half, f, 128).main_loop_ms;
  EXPECT_GT(ffma, 4 * tensor_cores);
  EXPECT_DOUBLE_EQ(ffma, estimate(kH100, kProblem, tile_128x128(1024, 1, 4096), 128).main_loop_ms);
}

// FP32 at FP32 accuracy as three TF32 tensor-core products: each SM clock does 1024 TF32 multiply-adds
// on sm_90 against 128 FFMAs, so the three products of a compute-bound tile take 3 x 128 / 1024 of the
// time FFMA would.
TEST(Estimate, Fp32AsThreeTf32ProductsIsChargedThreeTimesTf32sRate) {
  Footprint f = tile_128x128(1024, 1, 4096);
  const double ffma = estimate(kH100, kProblem, f, 128).main_loop_ms;
  f.math_type = Dtype::kTf32;
  f.k_products = 3;
  const double tf32x3 = estimate(kH100, kProblem, f, 128).main_loop_ms;
  EXPECT_NEAR(tf32x3 / ffma, 3.0 * 128 / 1024, 1e-9);
}

TEST(Estimate, ATailOfOneBlockPerSmCostsLessThanAFullRoundButMoreThanNothing) {
  const double full = estimate(kH100, kProblem, tile_128x128(264, 1, 4096), 128).main_loop_ms;
  const double tail = estimate(kH100, kProblem, tile_128x128(265, 1, 4096), 128).main_loop_ms;
  EXPECT_GT(tail, 1.4 * full);
  EXPECT_LT(tail, 2.0 * full);
}

TEST(Estimate, SplittingKFillsTheSmsWhenThereAreFewTiles) {
  // 256 x 256 x 16384: four tiles leave 128 of 132 SMs idle unless K is split.
  const double whole = estimate(kH100, kProblem, tile_128x128(4, 1, 16384), 128).time_ms;
  const Estimate split = estimate(kH100, kProblem, tile_128x128(4, 16, 16384), 128);
  EXPECT_GT(split.split_k_ms, 0.0);
  EXPECT_LT(split.time_ms, whole / 4);
}

TEST(Estimate, ParallelSplitKPaysOneHandOverInsteadOfAChain) {
  // 15 serial hand-overs, each reading and writing a 64 KiB C tile at the SM's 50.688 GB/s share
  // of L2, against one hand-over after the last of 16 slices reads their partial tiles.
  Footprint serial = tile_128x128(4, 16, 16384);
  Footprint parallel = serial;
  parallel.parallel_split = true;
  const double tile_ms = 4.0 * 128 * 128 / 50.688e6;
  EXPECT_NEAR(estimate(kH100, kProblem, serial, 128).split_k_ms, 15 * (0.002 + 2 * tile_ms), 1e-12);
  EXPECT_NEAR(estimate(kH100, kProblem, parallel, 128).split_k_ms, 0.002 + 16 * tile_ms, 1e-12);
  // A 16-bit C hands on a tile half as large in turn (reading and writing it), but the slices' partial
  // tiles in the workspace are FP32 whatever C's type: each costs the two accesses of a hand-over.
  KernelProblem half = kProblem;
  half.dtype = half.c_dtype = Dtype::kBf16;
  const double hand_over_ms = estimate(kH100, half, serial, 128).split_k_ms / 15 - 0.002;
  EXPECT_NEAR(estimate(kH100, half, parallel, 128).split_k_ms, 0.002 + 16 * hand_over_ms, 1e-12);
}

TEST(Estimate, StreamKSegmentsThroughTheWorkspaceAreSummedOnceInsteadOfInTurn) {
  // 264 whole tiles in two waves, then 132 stream blocks sharing the K of 33 more: 164 segments, about 5
  // a tile and 1.24 a block. Added into FP32 C in turn, each tile hands its sum on 4 times (reading and
  // writing the 64 KiB tile); through the workspace the tile's last segment reads the others' partial
  // tiles once they have left them, all at once. Either way the blocks of two segments, which the kernel
  // waits for, start their second anew: one start more, however few blocks take two.
  Footprint serial = tile_128x128(297, 1, 4096);
  serial.whole_tiles = 264;
  serial.stream_blocks = 132;
  serial.stream_k = 4096 * 33 / 132;
  Footprint parallel = serial;
  parallel.parallel_split = true;
  const double segments = 132 + 33 - 1;
  const double tile_ms = 4.0 * 128 * 128 / 50.688e6;
  const double starts_ms = (2 - 1) * 0.003;
  EXPECT_NEAR(estimate(kH100, kProblem, serial, 128).split_k_ms,
              (segments / 33 - 1) * (0.002 + 2 * tile_ms) + starts_ms, 1e-12);
  EXPECT_NEAR(estimate(kH100, kProblem, parallel, 128).split_k_ms,
              0.002 + segments / 33 * tile_ms + starts_ms, 1e-12);
  EXPECT_LT(estimate(kH100, kProblem, parallel, 128).split_k_ms,
            estimate(kH100, kProblem, serial, 128).split_k_ms);
  // The fan-in the fit weighs: a streamed tile's segments; a launch without stream-K cuts no tile.
  EXPECT_NEAR(estimate(kH100, kProblem, parallel, 128).segments_per_tile, segments / 33, 1e-12);
  EXPECT_EQ(estimate(kH100, kProblem, tile_128x128(297, 4, 4096), 128).segments_per_tile, 1.0);
}

TEST(Estimate, SmallTilesAreBoundByTheirLoads) {
  // A 16 x 16 tile of 16-bit operands does 8 flop per byte it loads, against an H100 SM's 4096 flop per
  // clock on its tensor cores and the 51.2 bytes per clock its L2 delivers.
  Footprint f = tile_128x128(4096, 1, 4096);
  f.tile_m = f.tile_n = 16;
  f.threads = 32;
  f.smem_bytes = 2048;  // 32 blocks per SM: enough warps that loads, not latency, set the pace
  f.math_type = Dtype::kBf16;
  KernelProblem half = kProblem;
  half.dtype = half.c_dtype = Dtype::kBf16;
  EXPECT_GT(estimate(kH100, half, f, 64).memory_bound, 1.0);
}

TEST(Estimate, PartialTilesCrossL2AtOneRateWhateverTheSmMultiplies) {
  // The 16 FP32 partial tiles of a parallel split cost a BF16 kernel, 16 times FFMA's rate on its tensor
  // cores, what they cost an FP32 one: the L2 feeds an SM at one rate.
  Footprint parallel = tile_128x128(4, 16, 16384);
  parallel.parallel_split = true;
  KernelProblem half = kProblem;
  half.dtype = Dtype::kBf16;
  half.c_dtype = Dtype::kF32;
  Footprint tensor_cores = parallel;
  tensor_cores.math_type = Dtype::kBf16;
  EXPECT_DOUBLE_EQ(estimate(kH100, half, tensor_cores, 128).split_k_ms,
                   estimate(kH100, kProblem, parallel, 128).split_k_ms);
}

TEST(Estimate, ABlockThatDoesNotFitTakesForever) {
  Footprint f = tile_128x128(1024, 1, 4096);
  f.threads = 512;  // 16 warps of 255 registers: twice the register file
  EXPECT_TRUE(std::isinf(estimate(kH100, kProblem, f, 255).time_ms));
}

TEST(CandidateTable, ReadsTileExtentsResourcesAndSplitOffTheManifest) {
  // One simt config for 512 x 512 x 1000, hand-evaluated from sgemm_simt.json: A k-contiguous and
  // transposed into shared rows (XPOSE_A), B n-contiguous: stages of 16 x (128 + 4) and 16 x 64 floats.
  const SearchSpace space = testing::search_space(
      testing::problem(512, 512, 1000),
      {{"sgemm_simt",
        {"BM=128", "BN=64", "BK=16", "WM=64", "WN=32", "TM=8", "TN=8", "STAGES=3", "VEC_A=4", "VEC_B=4",
         "XPOSE_A=1", "XPOSE_B=0", "UNROLL_K=4", "MIN_BLOCKS=1", "SPLIT_K=3", "RASTER=1"}}});
  ASSERT_EQ(space.size(), 1u);
  const Footprint f = CandidateTable(space).footprint(0);
  EXPECT_EQ(f.tile_m, 128);
  EXPECT_EQ(f.tile_n, 64);
  EXPECT_EQ(f.tiles, 4 * 8);
  EXPECT_EQ(f.threads, 128);
  EXPECT_EQ(f.smem_bytes, 3 * (16 * 132 + 16 * 64) * 4);
  EXPECT_EQ(f.est_regs, 8 * 8 + 8 + 8 + 32);
  EXPECT_EQ(f.split_k, 3);
  EXPECT_EQ(f.k_per_split, 336);  // 1000 / 3 rounded up to whole stages of 16
}

TEST(CandidateTable, AWarpSpecializedBlockHoldsOneShareOfTheRegisterFilePerThread) {
  // gemm_tma's 128 x 256 seed: its consumers need 184 registers a thread (EST_REGS), which setmaxnreg
  // gives them from the producer's; the block of 384 threads launches on 168 each and fits an SM.
  const KernelProblem p = test_support::typed_problem(4096, 4096, 4096, "nn", "bf16");
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  const Config seed = tma.manifest.normalize(tma.manifest.seeds().front());
  ASSERT_EQ(seed.at("WN"), 256);
  const Footprint f = model::FootprintReader(tma.manifest, kH100, p).read(seed);
  EXPECT_EQ(f.threads, 384);
  EXPECT_EQ(f.est_regs, 168);
  const Estimate e = estimate(kH100, p, f, f.est_regs);
  EXPECT_EQ(e.occupancy.blocks_per_sm, 1);
  EXPECT_TRUE(std::isfinite(e.time_ms));
}

// The units each template multiplies on, read off its manifest: FP32 runs as three TF32 products on the
// templates that do not serve FFMA's pedantic type, whether its parts are split before the main kernel
// (gemm_tma: both parts loaded) or as operands are staged (gemm_wgmma, sgemm_tf32x3); in FFMA on those
// that do; 16-bit operands on their own tensor cores, or in FFMA where the manifest says so.
TEST(CandidateTable, ReadsTheUnitsATemplatesMultiplyAddsRunOn) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const auto read = [&](const std::string& name, const char* dtype) {
    const KernelProblem p = test_support::typed_problem(1024, 1024, 1024, "nn", dtype);
    const KernelTemplate& t = library.get(name);
    return model::FootprintReader(t.manifest, kH100, p)
        .read(t.manifest.normalize(t.manifest.seeds().front()));
  };
  for (const char* name : {"gemm_tma", "gemm_wgmma", "sgemm_tf32x3"}) {
    const Footprint f = read(name, "f32");
    EXPECT_EQ(f.math_type, Dtype::kTf32) << name;
    EXPECT_EQ(f.k_products, 3) << name;
  }
  EXPECT_EQ(read("gemm_tma", "f32").operand_parts, 2);
  EXPECT_EQ(read("gemm_wgmma", "f32").operand_parts, 1);
  for (const char* name : {"sgemm_simt", "sgemm_skinny"}) {
    for (const char* dtype : {"f32", "ffma"}) {
      const Footprint f = read(name, dtype);
      EXPECT_EQ(f.math_type, Dtype::kFfma) << name << ' ' << dtype;
      EXPECT_EQ(f.k_products, 1) << name << ' ' << dtype;
    }
  }
  EXPECT_EQ(read("gemm_tma", "tf32").math_type, Dtype::kTf32);
  EXPECT_EQ(read("gemm_tma", "tf32").k_products, 1);
  EXPECT_EQ(read("hgemm_mma", "bf16").math_type, Dtype::kBf16);
  EXPECT_EQ(read("hgemm_rows", "f16").math_type, Dtype::kFfma);
}

// A TMA block's loads in flight are its stages but the one its consumers compute on; with few of them the
// tiles arrive at that many bytes per load latency, slower than the L2 feeds an SM. gemm_tma's 64 x 64
// tiles at BF16 128x4096x4096, one block per SM, each reading 1 MiB of operands: 4 stages keep 60 KB in
// flight and wait on them; 8 stages keep 123 KB, and the L2's rate bounds them instead.
TEST(CandidateTable, ATmaBlockWithFewStagesInFlightWaitsOnItsLoads) {
  const KernelProblem p = test_support::typed_problem(128, 4096, 4096, "nn", "bf16");
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  Config shallow = tma.manifest.normalize(tma.manifest.seeds().front());
  for (const auto& [name, value] : {std::pair{"WGM", 1},
                                    {"WGN", 1},
                                    {"WN", 64},
                                    {"CLUSTER", 1},
                                    {"PERSISTENT", 0},
                                    {"SPLIT_K", 1},
                                    {"STREAM_K", 0},
                                    {"STAGE_C", 1},
                                    {"STAGES", 4}})
    shallow.set(name, value);
  Config deep = shallow;
  deep.set("STAGES", 8);
  const model::FootprintReader reader(tma.manifest, kH100, p);
  const Footprint f4 = reader.read(shallow), f8 = reader.read(deep);
  const int64_t stage_bytes = (64 + 64) * 2 * 64;  // a 64-deep K stage of both operands' tiles
  EXPECT_EQ(f4.loads_in_flight_bytes, f4.smem_bytes - stage_bytes);
  EXPECT_EQ(f8.loads_in_flight_bytes, f8.smem_bytes - stage_bytes);
  EXPECT_GE(f8.loads_in_flight_bytes - f4.loads_in_flight_bytes, 4 * stage_bytes);
  const Estimate e4 = estimate(kH100, p, f4, f4.est_regs), e8 = estimate(kH100, p, f8, f8.est_regs);
  ASSERT_EQ(e4.waves.blocks, 128);
  const double operand_bytes = (64 + 64) * 2.0 * 4096;
  EXPECT_NEAR(e4.main_loop_ms, operand_bytes * 0.8e-3 / f4.loads_in_flight_bytes, 1e-9);
  EXPECT_NEAR(e8.main_loop_ms, operand_bytes / (kH100.clock_khz * 51.2), 1e-9);
  EXPECT_GT(e4.main_loop_ms, 1.3 * e8.main_loop_ms);
}

TEST(CandidateTable, OneTileBlocksStartRoundAfterRoundWhilePersistentBlocksStartOnce) {
  // gemm_tma's FP32 seed on 16384 x 2048 with K = 32: 2048 tiles of 128 x 128, one block per SM (its
  // stages fill the shared memory). One block per tile starts 16 rounds of blocks over the 132 SMs, each
  // filling its pipeline from device memory and storing its tile with nothing to overlap; persistent
  // blocks start once and walk the tiles.
  KernelProblem p = testing::problem(16384, 2048, 32);
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  Config persistent;
  for (const Config& seed : tma.manifest.seeds())
    if (seed.at("FOLD") > 0 && seed.at("CLUSTER") == 1) persistent = tma.manifest.normalize(seed);
  ASSERT_EQ(persistent.at("PERSISTENT"), 1);
  Config one_tile = persistent;
  one_tile.set("PERSISTENT", 0);
  const model::FootprintReader reader(tma.manifest, kH100, p);
  const Footprint walking = reader.read(persistent);
  const Footprint single = reader.read(one_tile);
  EXPECT_EQ(walking.blocks, kH100.sm_count);
  EXPECT_EQ(single.blocks, 2048);
  const Estimate w = estimate(kH100, p, walking, walking.est_regs);
  const Estimate s = estimate(kH100, p, single, single.est_regs);
  ASSERT_EQ(s.occupancy.blocks_per_sm, 1);
  EXPECT_DOUBLE_EQ(s.block_start_ms, 16 * w.block_start_ms);
  EXPECT_GT(s.time_ms, w.time_ms + 14 * w.block_start_ms);
}

TEST(CandidateTable, OperandsFilledThroughRegistersCostMoreThanCopyingThemForTma) {
  // gemm_tma at 4103 x 4105 x 4104 BF16 nn: B's rows (4105 elements) are not 16-byte aligned. Filled
  // through the producer's registers, each block's B tile (256 columns of 2 bytes per unit of K) limits
  // its main loop; copied with aligned rows first (REALIGN), B costs one pass through device memory and
  // comes by TMA.
  const KernelProblem p = test_support::typed_problem(4103, 4105, 4104, "nn", "bf16");  // aligned 8/1/1
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  Config copied = tma.manifest.normalize(tma.manifest.seeds().front());
  ASSERT_EQ(copied.at("REALIGN"), 1);
  Config filled = copied;
  filled.set("REALIGN", 0);
  const model::FootprintReader reader(tma.manifest, kH100, p);
  const Footprint c = reader.read(copied);
  const Footprint f = reader.read(filled);
  EXPECT_EQ(c.thread_filled_bytes_per_k, 0);
  EXPECT_EQ(f.thread_filled_bytes_per_k, 256 * 2);
  EXPECT_EQ(c.operand_pass_bytes, 2 * 4104 * 4160 * 2);  // B read and written, rows of 4160 (128 bytes)
  EXPECT_EQ(f.operand_pass_bytes, 0);
  const Estimate by_copy = estimate(kH100, p, c, c.est_regs);
  const Estimate by_threads = estimate(kH100, p, f, f.est_regs);
  EXPECT_GT(by_threads.time_ms, 1.5 * by_copy.time_ms);
}

TEST(CandidateTable, RowsOffSectorsReadInPlaceCostTheGpusRateForThem) {
  // gemm_tma at 4104^3 BF16 nn: both operands' rows are 8208 bytes apart, off 32-byte sectors. Read in
  // place, every tile's 128 + 256 rows per unit of K pass at the GPU's rate for such rows (561 tiles:
  // bound by it); copied first (SECTOR_COPY), they pay the copy's pass instead.
  const KernelProblem p = test_support::typed_problem(4104, 4104, 4104, "nn", "bf16");
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  Config in_place = tma.manifest.normalize(tma.manifest.seeds().front());
  in_place.set("REALIGN", 0);
  Config copied = in_place;
  copied.set("SECTOR_COPY", 1);
  const model::FootprintReader reader(tma.manifest, kH100, p);
  const Footprint c = reader.read(copied);
  const Footprint i = reader.read(in_place);
  EXPECT_EQ(c.unsectored_bytes_per_k, 0);
  EXPECT_EQ(i.unsectored_bytes_per_k, (128 + 256) * 2);
  EXPECT_EQ(c.operand_pass_bytes, 2 * 2 * 4104 * 4160 * 2);
  EXPECT_GT(estimate(kH100, p, i, i.est_regs).time_ms, 1.2 * estimate(kH100, p, c, c.est_regs).time_ms);

  // In clusters of two, B's boxes cross from L2 once for both blocks: half of its rows count.
  Config clustered = in_place;
  clustered.set("CLUSTER", 2);
  EXPECT_EQ(reader.read(clustered).unsectored_bytes_per_k, (128 + 256 / 2) * 2);
  // Clusters along N share A's boxes instead: half of A's rows count.
  clustered.set("CLUSTER_N", 1);
  EXPECT_EQ(reader.read(clustered).unsectored_bytes_per_k, (128 / 2 + 256) * 2);

  // At 4096^3 the rows start on sectors: nothing is charged.
  KernelProblem aligned = p;
  aligned.m = aligned.n = aligned.k = 4096;
  EXPECT_EQ(model::FootprintReader(tma.manifest, kH100, aligned).read(in_place).unsectored_bytes_per_k, 0);

  // 1024 x 1024 x 8200 nt runs 32 tiles: the rate for the whole GPU does not bind them (measured 6%
  // slower than at K = 8192).
  KernelProblem few = p;
  few.m = few.n = 1024, few.k = 8200, few.b_trans = true;
  KernelProblem few_aligned = few;
  few_aligned.k = 8192;
  const Footprint f = model::FootprintReader(tma.manifest, kH100, few).read(in_place);
  const Footprint g = model::FootprintReader(tma.manifest, kH100, few_aligned).read(in_place);
  ASSERT_GT(f.unsectored_bytes_per_k, 0);
  EXPECT_LT(estimate(kH100, few, f, f.est_regs).time_ms,
            1.05 * estimate(kH100, few_aligned, g, g.est_regs).time_ms);

  // Threads' 16-byte cp.async read such rows at the same rate: gemm_wgmma's 64 x 64 tiles at the same
  // problem make 256 of them, which move 537 MB of rows off sectors (measured 0.110 ms against 0.084 at
  // K = 8192), and the estimate is at least that traffic at 5 TB/s. Rows 32-byte aligned (K = 8208) are not
  // charged, nor rows that are not 16-byte aligned (K = 8201: other loads altogether).
  const KernelTemplate& wgmma = TemplateLibrary::instance().get("gemm_wgmma");
  Config small = wgmma.manifest.normalize(wgmma.manifest.seeds().front());
  small.set("WGM", 1), small.set("WGN", 1), small.set("WN", 64), small.set("VEC_A", 8), small.set("VEC_B", 8);
  small.set("FOLD", 0);
  ASSERT_TRUE(wgmma.manifest.violations(small, &kH100, &few).empty());
  const Footprint w = model::FootprintReader(wgmma.manifest, kH100, few).read(small);
  ASSERT_EQ(w.tiles, 256);
  EXPECT_EQ(w.unsectored_bytes_per_k, (64 + 64) * 2);
  EXPECT_GE(estimate(kH100, few, w, w.est_regs).main_loop_ms, 256.0 * 8256 * 256 / 5.02e9);
  for (int64_t k : {8192, 8208}) {
    KernelProblem on = few;
    on.k = k;
    EXPECT_EQ(model::FootprintReader(wgmma.manifest, kH100, on).read(small).unsectored_bytes_per_k, 0) << k;
  }
  KernelProblem odd = few;
  odd.k = 8201;
  odd.align_a = odd.align_b = 1;
  Config narrow = small;
  narrow.set("VEC_A", 1), narrow.set("VEC_B", 1);
  EXPECT_EQ(model::FootprintReader(wgmma.manifest, kH100, odd).read(narrow).unsectored_bytes_per_k, 0);
}

TEST(CandidateTable, AnOperandStreamedThroughL2IsReadAgainByEachLaterRoundOfTilesThatNeedsIt) {
  // gemm_tma, FP32 2047 x 1999 x 3001 nn with 128 x 128 tiles: B's TF32 parts streamed (L2_STREAM = 1) are
  // read by 16 tile rows, A's (L2_STREAM = 2) by 16 tile columns; the 256 tiles run in two rounds over the
  // 132 SMs, so the streamed operand comes from device memory twice.
  const KernelTemplate& tma = TemplateLibrary::instance().get("gemm_tma");
  Config plain = tma.manifest.normalize(tma.manifest.seeds()[9]);  // FP32: 128 x 128, FOLD 1
  ASSERT_EQ(plain.at("FOLD"), 1);
  Config streamed_b = plain;
  streamed_b.set("L2_STREAM", 1);
  Config streamed_a = plain;
  streamed_a.set("L2_STREAM", 2);
  const KernelProblem p = test_support::typed_problem(2047, 1999, 3001, "nn", "f32");  // aligned 1/1/1
  const model::FootprintReader reader(tma.manifest, kH100, p);
  const Footprint none = reader.read(plain);
  const Footprint b = reader.read(streamed_b);
  const Footprint a = reader.read(streamed_a);
  EXPECT_EQ(none.streamed_bytes, 0);
  EXPECT_EQ(b.streamed_readers, 16);
  EXPECT_EQ(b.streamed_bytes, int64_t{3001} * 1999 * 4 * 2);  // two TF32 parts of 4 bytes
  EXPECT_EQ(a.streamed_readers, 16);
  EXPECT_EQ(a.streamed_bytes, int64_t{3001} * 2047 * 4 * 2);
  const Estimate plain_e = estimate(kH100, p, none, none.est_regs);
  ASSERT_EQ(std::ceil(plain_e.waves.waves), 2);
  EXPECT_NEAR(estimate(kH100, p, b, b.est_regs).dram_ms - plain_e.dram_ms,
              b.streamed_bytes / model::dram_bytes_per_ms(kH100), 1e-12);

  // At 16 x 4096 x 4096 BF16 one tile row reads B, once.
  const KernelProblem skinny = test_support::typed_problem(16, 4096, 4096, "nn", "bf16");
  Config small = tma.manifest.normalize(tma.manifest.seeds()[7]);  // 64 x 128, one consumer
  Config small_streamed = small;
  small_streamed.set("L2_STREAM", 1);
  ASSERT_TRUE(tma.manifest.violations(small_streamed, &kH100, &skinny).empty());
  const model::FootprintReader skinny_reader(tma.manifest, kH100, skinny);
  const Footprint once = skinny_reader.read(small_streamed);
  EXPECT_EQ(once.streamed_readers, 1);
  EXPECT_DOUBLE_EQ(estimate(kH100, skinny, once, once.est_regs).dram_ms,
                   estimate(kH100, skinny, skinny_reader.read(small), once.est_regs).dram_ms);
}

TEST(CandidateTable, ProbesTileExtentsOfEveryTemplate) {
  // Whatever a template calls its tile sizes, its tiles must cover C: ceil(m / tile_m) x ceil(n / tile_n).
  // Two heights, since a template for few rows prunes the taller problem away.
  for (const KernelTemplate* kernel_template : TemplateLibrary::instance().all()) {
    size_t probed = 0;
    for (const KernelProblem& p : {testing::problem(40, 1000, 4096), testing::problem(24, 1000, 4096)}) {
      const SearchSpace space({Space::build(*kernel_template, kH100, p)}, kH100, p);
      if (space.empty()) continue;
      const CandidateTable table(space);
      for (size_t c = 0; c < space.size(); c += 1 + space.size() / 200, ++probed) {
        const Footprint& f = table.footprint(c);
        EXPECT_EQ(f.tiles, (p.m + f.tile_m - 1) / f.tile_m * ((p.n + f.tile_n - 1) / f.tile_n))
            << p.to_string() << " " << space.config(c).key();
      }
    }
    EXPECT_GT(probed, 0u) << kernel_template->manifest.name();
  }
}

}  // namespace
}  // namespace gemmforge::tuner
