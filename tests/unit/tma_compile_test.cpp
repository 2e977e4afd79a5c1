// The TMA template without a GPU: which problems it serves (16-bit types of any alignment, K-major TF32,
// sm_90 only), its launch geometry (persistent blocks, clusters, tensor map boxes for the operands TMA
// copies, the workspace's partial tiles, split parts and aligned copies), the tensor map keys and the checks
// made before the driver is asked, and NVRTC compiles of every seed for each type, layout and operand
// alignment on unserialized HGMMA fed by UTMALDG (multicast in clusters), by the producer's realigned loads
// or from aligned copies, with the register split between producer and consumers, one copy of the main
// loop, and C stored in 16-byte vectors by the staged epilogue; and the operand passes' own module (SASS
// where cuobjdump is installed).
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <tuple>

#include "core/config_repair.hpp"
#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/operand_passes.hpp"
#include "rtc/tensor_maps.hpp"
#include "support/compiled_sass.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::rtc {
namespace {

const KernelTemplate& tma() {
  return TemplateLibrary::instance().get("gemm_tma");
}

using test_support::typed_problem;

// Whether a template runs on a device at all, whatever the problem: gemm_tma is written for sm_90a only,
// sgemm_simt for any device gemmforge supports. A tuning worker compiles the operand passes ahead where
// a template that runs them runs on its device.
TEST(TmaTemplate, RunsOnHopperOnlyWhateverTheProblem) {
  EXPECT_TRUE(runs_on(tma(), 90));
  EXPECT_NE(device_ineligibility(tma(), 80).find("compute capability 90 or newer"), std::string::npos);
  EXPECT_NE(device_ineligibility(tma(), 100).find("written for sm_90a only"), std::string::npos);
  EXPECT_TRUE(tma().manifest.prepares_operands());
  const KernelTemplate& simt = TemplateLibrary::instance().get("sgemm_simt");
  for (int cc : {80, 86, 89, 90}) EXPECT_TRUE(runs_on(simt, cc)) << cc;
}

TEST(TmaTemplate, ServesSixteenBitAndFp32OfAnyAlignmentAndAlignedTf32OnHopperOnly) {
  for (const char* type : {"bf16", "f16", "bf16>f32", "f16>f32"}) {
    for (const char* layout : {"nn", "nt", "tn", "tt"}) {
      EXPECT_TRUE(can_serve(tma(), typed_problem(1024, 1024, 1024, layout, type), 90)) << type << layout;
    }
    const KernelProblem p = typed_problem(256, 256, 256, "nt", type);
    EXPECT_NE(ineligibility(tma(), p, 80).find("compute capability 90 or newer"), std::string::npos);
    // Rows TMA cannot address (1001 elements are not 16 bytes) go through the producer's registers.
    EXPECT_TRUE(can_serve(tma(), typed_problem(1001, 1001, 1001, "nt", type), 90)) << type;
  }
  // TF32 with both operands K-contiguous (nt), an M-contiguous A read into registers (tt), and an
  // N-contiguous B computed as C^T = B^T A^T with B read into registers (nn).
  for (const char* layout : {"nt", "tt", "nn"})
    EXPECT_TRUE(can_serve(tma(), typed_problem(1024, 1024, 1024, layout, "tf32"), 90)) << layout;
  // FP32 reads its operands as split TF32 parts, K-major and aligned whatever the call's layout and rows.
  for (const char* layout : {"nn", "nt", "tn", "tt"}) {
    EXPECT_TRUE(can_serve(tma(), typed_problem(1024, 1024, 1024, layout, "f32"), 90)) << layout;
    EXPECT_TRUE(can_serve(tma(), typed_problem(1001, 1003, 1005, layout, "f32"), 90)) << layout;
  }
  // No config runs TF32 with both operands M- or N-contiguous (tn: wgmma takes only its first operand
  // from registers); the constraints say why.
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const auto reasons = [&](const Config& config, const KernelProblem& p) {
    std::string out;
    for (const Violation& v : tma().manifest.violations(config, &device, &p)) out += v.describe() + "; ";
    return out;
  };
  Config seed = tma().manifest.seeds().front();
  seed.set("REALIGN", 0);
  const KernelProblem tf32_tn = typed_problem(1024, 1024, 1024, "tn", "tf32");
  EXPECT_TRUE(Space::build(tma(), device, tf32_tn, {}, /*prune=*/false).empty());
  EXPECT_NE(reasons(seed, tf32_tn).find("K-major"), std::string::npos);
  // TF32 rows TMA cannot address (1001 elements are not 16-byte aligned) run only from aligned copies
  // (REALIGN), which every 16-bit problem may use as well.
  Config realigned = seed;
  realigned.set("REALIGN", 1);
  const KernelProblem tf32_odd = typed_problem(1001, 1001, 1001, "nt", "tf32");
  EXPECT_TRUE(can_serve(tma(), tf32_odd, 90));
  EXPECT_NE(reasons(seed, tf32_odd).find("or copied so first (REALIGN)"), std::string::npos);
  EXPECT_EQ(reasons(realigned, tf32_odd), "");
  // Clusters multicast an operand by TMA: a 16-bit problem with an operand TMA cannot address runs them on
  // copies.
  Config clustered = seed;
  clustered.set("CLUSTER", 2);
  const KernelProblem odd = typed_problem(1001, 1001, 1001, "nt", "bf16");
  EXPECT_NE(reasons(clustered, odd).find("clusters multicast an operand by TMA"), std::string::npos);
  clustered.set("REALIGN", 1);
  EXPECT_EQ(reasons(clustered, odd), "");
  // FP32's split parts are aligned already.
  EXPECT_NE(reasons(realigned, typed_problem(1001, 1001, 1001, "nt", "f32")).find("nothing to copy"),
            std::string::npos);
}

TEST(TmaTemplate, GeometryGivesPersistentBlocksAndTheOperandsBoxes) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Config seed = tma().manifest.seeds().front();  // 128 x 256 tiles, persistent
  ASSERT_EQ(seed.at("PERSISTENT"), 1);
  const KernelProblem nn = typed_problem(4096, 4096, 4096, "nn", "bf16");
  const LaunchGeometry g = tma().manifest.geometry(seed, nn, device);
  EXPECT_EQ(g.tiles, 32 * 16);
  EXPECT_EQ(g.grid_x(), device.sm_count);
  ASSERT_TRUE(g.uses_tensor_maps());
  EXPECT_EQ(g.tma_box_a, (std::array<int64_t, 2>{64, 128}));  // K-major A: 64 of K by the tile's 128 rows
  EXPECT_EQ(g.tma_box_b, (std::array<int64_t, 2>{64, 64}));   // N-major B: 64 of N by 64 of K
  const LaunchGeometry nt =
      tma().manifest.geometry(seed, typed_problem(4096, 4096, 4096, "nt", "bf16"), device);
  EXPECT_EQ(nt.tma_box_b, (std::array<int64_t, 2>{64, 256}));  // K-major B: a box per consumer column
  // A K split lays out its own blocks.
  Config split = seed;
  split.set("PERSISTENT", 0);
  split.set("SPLIT_K", 2);
  const LaunchGeometry s =
      tma().manifest.geometry(split, typed_problem(256, 256, 4096, "nn", "bf16>f32"), device);
  EXPECT_EQ(s.persistent_blocks, 0);
  EXPECT_EQ(s.grid_x(), s.tiles);
  // Clusters of two blocks share out pairs of vertically adjacent tiles, a cluster per two SMs at most, and
  // each block loads half of every K-major B box.
  Config clustered = seed;
  clustered.set("CLUSTER", 2);
  const LaunchGeometry c =
      tma().manifest.geometry(clustered, typed_problem(4096, 4096, 4096, "nt", "bf16"), device);
  EXPECT_EQ(c.cluster, 2);
  EXPECT_EQ(c.cluster_units, 16 * 16);
  EXPECT_EQ(c.grid_x(), device.sm_count / 2 * 2);
  EXPECT_EQ(c.tma_box_b, (std::array<int64_t, 2>{64, 128}));
  // Clusters along N (CLUSTER_N) share out pairs of horizontally adjacent tiles instead, and each block
  // loads half of every A box (K-major: half its rows; M-major: half its K rows) and all of B's.
  Config along_n = clustered;
  along_n.set("CLUSTER_N", 1);
  const KernelProblem ragged = typed_problem(4096, 4352, 4096, "nn", "bf16");  // 17 tile columns
  EXPECT_TRUE(tma().manifest.violations(along_n, &device, &ragged).empty());
  const LaunchGeometry an = tma().manifest.geometry(along_n, ragged, device);
  EXPECT_EQ(an.cluster, 2);
  EXPECT_EQ(an.cluster_shares, 2);
  EXPECT_EQ(c.cluster_shares, 1);
  EXPECT_EQ(an.cluster_units, 32 * 9);
  EXPECT_EQ(an.tma_box_a, (std::array<int64_t, 2>{64, 64}));
  EXPECT_EQ(an.tma_box_b, (std::array<int64_t, 2>{64, 64}));
  const LaunchGeometry an_tn =
      tma().manifest.geometry(along_n, typed_problem(4096, 4352, 4096, "tn", "bf16"), device);
  EXPECT_EQ(an_tn.tma_box_a, (std::array<int64_t, 2>{64, 32}));
  // Without clusters CLUSTER_N repeats 0, and a cluster along N needs two tile columns.
  Config aligned_n = along_n;
  aligned_n.set("REALIGN", 0);
  EXPECT_TRUE(tma().manifest.pruned_by(aligned_n, device, nn).empty());
  Config lone = aligned_n;
  lone.set("CLUSTER", 1);
  EXPECT_FALSE(tma().manifest.pruned_by(lone, device, nn).empty());
  EXPECT_FALSE(
      tma().manifest.pruned_by(aligned_n, device, typed_problem(4096, 200, 4096, "nn", "bf16")).empty());
  clustered.set("PERSISTENT", 0);
  EXPECT_EQ(tma().manifest.geometry(clustered, nn, device).grid_x(), 2 * 16 * 16);
  // Ping-pong: two teams of one consumer warpgroup, each taking whole 64 x 256 tiles in turn.
  Config pingpong = seed;
  pingpong.set("WGM", 1), pingpong.set("STAGES", 5), pingpong.set("PINGPONG", 1);
  EXPECT_TRUE(tma().manifest.violations(pingpong, &device, &nn).empty());
  const LaunchGeometry p = tma().manifest.geometry(pingpong, nn, device);
  EXPECT_EQ(p.threads, 3 * 128);
  EXPECT_EQ(p.tiles, 64 * 16);
  EXPECT_EQ(p.grid_x(), device.sm_count);
  EXPECT_EQ(p.tma_box_a, (std::array<int64_t, 2>{64, 64}));
  // The teams take whole tiles, so K is not split; a block of one tile would leave a team idle.
  Config split_pingpong = pingpong;
  split_pingpong.set("PERSISTENT", 0), split_pingpong.set("SPLIT_K", 2);
  const KernelProblem deep = typed_problem(256, 256, 4096, "nn", "bf16>f32");
  std::string broken;
  for (const Violation& v : tma().manifest.violations(split_pingpong, &device, &deep)) broken += v.describe();
  EXPECT_NE(broken.find("ping-pong teams take whole tiles"), std::string::npos) << broken;
  const Space space = Space::build(tma(), device, nn);
  for (size_t i = 0; i < space.size(); ++i) {
    const Config config = space.config(i);
    if (config.at("PINGPONG") == 1) ASSERT_EQ(config.at("PERSISTENT"), 1) << config.key();
  }
  // Filling through the producer's registers (REALIGN = 0), only the operands TMA can address get a box:
  // for nn with odd N, A (rows of K = 4104 elements) but not B.
  Config in_place = seed;
  in_place.set("REALIGN", 0);
  const LaunchGeometry mixed =
      tma().manifest.geometry(in_place, typed_problem(4103, 4105, 4104, "nn", "bf16"), device);
  EXPECT_TRUE(mixed.uses_tensor_maps());
  EXPECT_EQ(mixed.tma_box_a, (std::array<int64_t, 2>{64, 128}));
  EXPECT_EQ(mixed.tma_box_b[0], 0);
  const LaunchGeometry neither =
      tma().manifest.geometry(in_place, typed_problem(4097, 4097, 4097, "nn", "bf16"), device);
  EXPECT_FALSE(neither.uses_tensor_maps());
  // TF32 with an N-contiguous B is computed as C^T = B^T A^T: B's boxes of 32 columns (128 bytes) by 32 rows
  // of K make the first operand, A's boxes of a consumer column's 256 rows the second, and the tiles run
  // 128 columns by 256 rows of C.
  const LaunchGeometry transposed =
      tma().manifest.geometry(seed, typed_problem(1000, 3000, 512, "nn", "tf32"), device);
  EXPECT_EQ(transposed.tiles, 24 * 4);
  EXPECT_EQ(transposed.tma_box_a, (std::array<int64_t, 2>{32, 256}));
  EXPECT_EQ(transposed.tma_box_b, (std::array<int64_t, 2>{32, 32}));
  // Templates without TMA take no maps.
  const KernelTemplate& wgmma = TemplateLibrary::instance().get("gemm_wgmma");
  EXPECT_FALSE(wgmma.manifest.geometry(wgmma.manifest.seeds().front(), nn, device).uses_tensor_maps());
}

// Stream-K on gemm_tma: the streamed tiles' segments take turns adding into C (an FP32 C) or, with
// SPLIT_PAR, which a 16-bit C needs, leave FP32 partial tiles in the workspace, a slot per stream block, for
// the segment ending each tile; persistent blocks (a wave) walk the whole tiles before their shares.
TEST(TmaTemplate, StreamKSumsThroughTheWorkspaceAndWalksWholeTilesPersistently) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config seed = manifest.seeds().front();  // 128 x 256 tiles, persistent
  ASSERT_EQ(64 * seed.at("WGM"), 128);
  ASSERT_EQ(seed.at("WN") * seed.at("WGN"), 256);
  seed.set("STREAM_K", 1);
  const KernelProblem odd = typed_problem(4103, 4105, 4104, "nn", "bf16");  // 33 x 17 = 561 tiles
  const int64_t wave = device.sm_count;
  const int64_t tiles = 33 * 17;
  const int64_t streamed = tiles % wave;

  const auto broken = [&](const Config& config, const KernelProblem& problem) {
    std::string text;
    for (const Violation& v : manifest.violations(config, &device, &problem)) text += v.describe();
    return text;
  };
  // A 16-bit C streams K only through the workspace; an FP32 C either way.
  EXPECT_NE(broken(seed, odd).find("would round every partial sum"), std::string::npos) << broken(seed, odd);
  Config through = seed;
  through.set("SPLIT_PAR", 1);
  EXPECT_EQ(broken(through, odd), "");
  EXPECT_EQ(broken(seed, typed_problem(4103, 4105, 4104, "nn", "bf16>f32")), "");

  const LaunchGeometry g = manifest.geometry(through, odd, device);
  EXPECT_EQ(g.whole_tiles, tiles - streamed);
  EXPECT_EQ(g.semaphores, tiles);
  EXPECT_GT(g.stream_blocks, streamed);
  EXPECT_EQ(g.partial_bytes, g.stream_blocks * 128 * 256 * 4);  // a partial tile per stream block
  // Persistent: a wave of blocks walks the whole tiles (four waves of them), and then the first
  // stream_blocks of them take their shares.
  EXPECT_EQ(g.persistent_blocks, wave);
  EXPECT_EQ(g.grid_x(), wave);
  EXPECT_EQ(g.whole_tiles % wave, 0);
  EXPECT_LE(g.stream_blocks, wave);
  // B's rows (4105 elements) are odd: its aligned copy follows the partial tiles.
  EXPECT_GE(g.copy_offset_b, g.partial_bytes);
  EXPECT_EQ(g.copy_ld_b, 4160);  // rows of 128-byte multiples, which TMA reads at full speed
  EXPECT_EQ(g.workspace_bytes, g.copy_offset_b + 4104 * g.copy_ld_b * 2);
  // One block per whole tile, then the stream blocks.
  Config single = through;
  single.set("PERSISTENT", 0);
  const LaunchGeometry s = manifest.geometry(single, odd, device);
  EXPECT_EQ(s.persistent_blocks, 0);
  EXPECT_EQ(s.grid_x(), s.whole_tiles + s.stream_blocks);
  EXPECT_EQ(s.partial_bytes, g.partial_bytes);
  // Adding into C in turn keeps no partial tiles.
  EXPECT_EQ(manifest.geometry(seed, typed_problem(4103, 4105, 4104, "nn", "bf16>f32"), device).partial_bytes,
            0);
  // The tuner's space holds persistent stream-K through the workspace for the 16-bit problem.
  const Space space = Space::build(tma(), device, odd);
  bool found = false;
  for (size_t i = 0; i < space.size() && !found; ++i) {
    const Config config = space.config(i);
    found = config.at("STREAM_K") > 0 && config.at("PERSISTENT") == 1 && config.at("SPLIT_PAR") == 1;
  }
  EXPECT_TRUE(found);
}

// STAGE_C = 2: each consumer warpgroup stores its tile by TMA, through boxes of 128 bytes of C's columns by
// its 64 rows, of C's own type; only where C's start and rows are 16-byte aligned, and never for a transposed
// TF32 product.
TEST(TmaTemplate, StoringCByTmaTakesABoxOf128BytesBy64RowsOfAnAlignedC) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config by_tma = manifest.seeds().front();
  by_tma.set("STAGE_C", 2);
  const KernelProblem nn = typed_problem(4096, 4096, 4096, "nn", "bf16");
  ASSERT_TRUE(manifest.violations(by_tma, &device, &nn).empty());
  EXPECT_EQ(manifest.geometry(by_tma, nn, device).tma_box_c, (std::array<int64_t, 2>{64, 64}));
  const KernelProblem wide_c = typed_problem(4096, 4096, 4096, "nt", "bf16>f32");
  ASSERT_TRUE(manifest.violations(by_tma, &device, &wide_c).empty());
  EXPECT_EQ(manifest.geometry(by_tma, wide_c, device).tma_box_c, (std::array<int64_t, 2>{32, 64}));
  // Staged or from the fragments, C gets no map.
  EXPECT_EQ(manifest.geometry(manifest.seeds().front(), nn, device).tma_box_c,
            (std::array<int64_t, 2>{0, 0}));
  // Two 8 KB slices per consumer warpgroup, where staging per warp takes 10 KB per warpgroup.
  EXPECT_EQ(manifest.geometry(by_tma, nn, device).smem_bytes -
                manifest.geometry(manifest.seeds().front(), nn, device).smem_bytes,
            2 * (16384 - 10240));
  const auto reasons = [&](const Config& config, const KernelProblem& problem) {
    std::string text;
    for (const Violation& v : manifest.violations(config, &device, &problem)) text += v.describe();
    return text;
  };
  // An odd ldc (N = 4105 of a tight C) cannot be stored by TMA; the config is repaired to staging.
  const KernelProblem odd = typed_problem(4103, 4105, 4104, "nn", "bf16");
  EXPECT_NE(reasons(by_tma, odd).find("16-byte aligned"), std::string::npos);
  const std::optional<Config> repaired = repair_config(tma(), by_tma, device, odd);
  ASSERT_TRUE(repaired.has_value());
  EXPECT_EQ(repaired->at("STAGE_C"), 1);
  // TF32 with an N-contiguous B stores C^T's tiles transposed, through the warps' buffers.
  Config transposed = by_tma;
  transposed.set("CLUSTER", 1);
  EXPECT_NE(reasons(transposed, typed_problem(1000, 3000, 512, "nn", "tf32")).find("transposed"),
            std::string::npos);
}

// FP32: the operands are split into TF32 parts first, K-major in the workspace after nothing else (the K
// split is serial), rows of K rounded up to 128 bytes; each stage holds both parts of A and B, so K slices
// and stream-K share out the problem's K, and a stage takes twice the shared memory of a TF32 one.
TEST(TmaTemplate, Fp32GeometrySplitsTheOperandsIntoPartsEveryStageHolds) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config fp32;
  for (const Config& seed : manifest.seeds())
    if (seed.at("FOLD") > 0 && seed.at("CLUSTER") == 1) fp32 = seed;
  ASSERT_FALSE(fp32.values().empty()) << "gemm_tma needs an FP32 seed";
  const KernelProblem tn = typed_problem(1000, 3000, 1001, "tn", "f32");
  ASSERT_TRUE(manifest.violations(fp32, &device, &tn).empty());
  const LaunchGeometry g = manifest.geometry(fp32, tn, device);
  EXPECT_TRUE(g.splits_operands());
  EXPECT_EQ(g.k_products, 3);
  const int64_t stages = fp32.at("STAGES"), rows = 64 * fp32.at("WGM") + fp32.at("WN") * fp32.at("WGN");
  EXPECT_GE(g.smem_bytes, stages * 2 * rows * 128);  // big and small tiles of A and B, 128 bytes of K a row
  EXPECT_EQ(g.parts_ld, 1024);                       // K rounded up to 128 bytes
  EXPECT_EQ(g.parts_offset, 0);
  EXPECT_EQ(g.parts_b, 2 * 1000 * 1024);  // B's parts after A's big and small rows
  EXPECT_EQ(g.workspace_bytes, 2 * (1000 + 3000) * 1024 * 4);
  EXPECT_EQ(g.tma_box_a, (std::array<int64_t, 2>{32, 128}));  // K-major parts whatever the layout
  EXPECT_EQ(g.tma_box_b, (std::array<int64_t, 2>{32, 128}));
  Config split = fp32;
  split.set("PERSISTENT", 0), split.set("SPLIT_K", 3);
  const LaunchGeometry s = manifest.geometry(split, tn, device);
  EXPECT_EQ(s.split_k, 3);
  EXPECT_EQ(s.k_per_split, 352);  // a third of K, rounded up to whole stages of 32
  EXPECT_EQ(s.parts_offset, 0);   // serial slices add into C
  // Parallel slices leave their partial tiles (BM x BN floats each) first, the parts after them.
  split.set("SPLIT_PAR", 1);
  ASSERT_TRUE(manifest.violations(split, &device, &tn).empty());
  const LaunchGeometry p = manifest.geometry(split, tn, device);
  const int64_t partials = 3 * p.tiles * 128 * 128 * 4;
  EXPECT_EQ(p.parts_offset, (partials + 255) / 256 * 256);
  EXPECT_EQ(p.workspace_bytes, p.parts_offset + 2 * (1000 + 3000) * 1024 * 4);
  // The split parts' maps: A's 2 m rows and B's 2 n rows of the workspace, rows parts_ld apart.
  const float* parts = reinterpret_cast<const float*>(uintptr_t{1} << 20);
  const rtc::TensorMapKey a = rtc::parts_a_key(tn, parts, g);
  const rtc::TensorMapKey b = rtc::parts_b_key(tn, parts, g);
  EXPECT_EQ(a.base, parts);
  EXPECT_EQ(a.inner, 1001);
  EXPECT_EQ(a.rows, 2000);
  EXPECT_EQ(a.ld, 1024);
  EXPECT_EQ(b.base, parts + 2000 * 1024);
  EXPECT_EQ(b.rows, 6000);
  // Without FOLD the tensor cores' accumulation would round toward zero over all of K; 16-bit types never
  // fold. A 128 x 256 tile's accumulators and sums would not fit a consumer's registers.
  Config unfolded = fp32;
  unfolded.set("FOLD", 0);
  std::string broken;
  for (const Violation& v : manifest.violations(unfolded, &device, &tn)) broken += v.describe();
  EXPECT_NE(broken.find("FP32 accuracy needs partial sums folded"), std::string::npos) << broken;
  broken.clear();
  const KernelProblem bf16 = typed_problem(1024, 1024, 1024, "nt", "bf16");
  for (const Violation& v : manifest.violations(fp32, &device, &bf16)) broken += v.describe();
  EXPECT_NE(broken.find("folded partial sums are FP32's"), std::string::npos) << broken;
  Config wide = fp32;
  wide.set("WN", 256);
  EXPECT_FALSE(manifest.violations(wide, &device, &tn).empty());
}

// REALIGN copies the operands TMA cannot address in place into the workspace, as they lie but with rows
// rounded up to 128 bytes, after any partial tiles; the maps then point at the copies.
TEST(TmaTemplate, RealignGeometryCopiesOnlyTheUnalignedOperandsIntoTheWorkspace) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config config = manifest.seeds().front();
  config.set("REALIGN", 1);
  // nn: A (1024 x 1024, K-contiguous) is aligned; B is 1024 rows of K by 1023 columns.
  const KernelProblem nn = typed_problem(1024, 1023, 1024, "nn", "bf16");
  ASSERT_TRUE(manifest.violations(config, &device, &nn).empty());
  const LaunchGeometry g = manifest.geometry(config, nn, device);
  EXPECT_TRUE(g.copies_operands());
  EXPECT_EQ(g.copy_ld_a, 0);
  EXPECT_EQ(g.copy_ld_b, 1024);
  EXPECT_EQ(g.copy_offset_b, 0);
  EXPECT_EQ(g.copy_bytes, 1024 * 1024 * 2);
  EXPECT_EQ(g.workspace_bytes, 1024 * 1024 * 2);
  EXPECT_EQ(g.operand_pass_bytes(), 2 * g.copy_bytes);
  EXPECT_GT(g.tma_box_b[0], 0);  // B now comes by TMA
  for (const auto& [name, value] : manifest.defines(config, nn)) {
    if (name == "TMA_B") EXPECT_EQ(value, 1) << name;
    if (name == "PRODUCER_REGS") EXPECT_EQ(value, 32) << "no operand is filled through registers";
  }
  // Without REALIGN nothing is copied, and the pruned space does not repeat that config for aligned
  // problems.
  Config in_place = config;
  in_place.set("REALIGN", 0);
  EXPECT_FALSE(manifest.geometry(in_place, nn, device).copies_operands());
  EXPECT_FALSE(manifest.pruned_by(config, device, typed_problem(1024, 1024, 1024, "nn", "bf16")).empty());

  // tn: A is k x m (1027 x 1021), B k x n (1027 x 1023), both copied; parallel slices' partial tiles first.
  const KernelProblem tn = typed_problem(1021, 1023, 1027, "tn", "bf16");
  config.set("PERSISTENT", 0), config.set("SPLIT_PAR", 1), config.set("SPLIT_K", 2);
  ASSERT_TRUE(manifest.violations(config, &device, &tn).empty());
  const LaunchGeometry t = manifest.geometry(config, tn, device);
  EXPECT_EQ(t.partial_bytes, 2 * t.tiles * 128 * 256 * 4);
  EXPECT_EQ(t.copy_ld_a, 1024);
  EXPECT_EQ(t.copy_ld_b, 1024);
  EXPECT_EQ(t.copy_offset_a, (t.partial_bytes + 255) / 256 * 256);
  EXPECT_EQ(t.copy_offset_b, (t.copy_offset_a + 1027 * 1024 * 2 + 255) / 256 * 256);
  EXPECT_EQ(t.workspace_bytes, t.copy_offset_b + 1027 * 1024 * 2);
  const char* workspace = reinterpret_cast<const char*>(uintptr_t{1} << 20);
  const TensorMapKey a = copy_a_key(tn, workspace, t);
  EXPECT_EQ(a.base, workspace + t.copy_offset_a);
  EXPECT_EQ(a.inner, 1021);  // M-contiguous, as A lies
  EXPECT_EQ(a.rows, 1027);
  EXPECT_EQ(a.ld, 1024);
  const TensorMapKey b = copy_b_key(tn, workspace, t);
  EXPECT_EQ(b.base, workspace + t.copy_offset_b);
  EXPECT_EQ(b.inner, 1023);
  EXPECT_EQ(b.ld, 1024);

  // TF32: four-byte elements, rows rounded up to 128 bytes.
  Config tf32 = manifest.seeds().front();
  tf32.set("REALIGN", 1);
  const KernelProblem odd = typed_problem(1001, 1003, 1005, "nt", "tf32");
  ASSERT_TRUE(manifest.violations(tf32, &device, &odd).empty());
  const LaunchGeometry f = manifest.geometry(tf32, odd, device);
  EXPECT_EQ(f.copy_ld_a, 1024);
  EXPECT_EQ(f.copy_ld_b, 1024);
  EXPECT_EQ(f.copy_offset_b, (1001 * 1024 * 4 + 255) / 256 * 256);
  EXPECT_EQ(f.copy_bytes, (1001 + 1003) * 1024 * 4);
}

// SECTOR_COPY (a launch parameter) copies operands whose rows are 16-byte aligned but, stored tight, off
// 32-byte sectors, which TMA reads at half speed; where no operand's rows are, the pruned space does not
// repeat SECTOR_COPY = 0. The kernel is the same either way.
TEST(TmaTemplate, SectorCopyCopiesRowsOffThirtyTwoByteSectors) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config in_place = manifest.normalize(manifest.seeds().front());
  in_place.set("REALIGN", 0);
  Config copied = in_place;
  copied.set("SECTOR_COPY", 1);
  ASSERT_TRUE(manifest.find_parameter("SECTOR_COPY")->launch);
  const auto pruned_by_rule = [&](const Config& config, const KernelProblem& problem, const char* rule) {
    for (const Violation& v : manifest.pruned_by(config, device, problem)) {
      if (v.constraint->name == rule) return true;
    }
    return false;
  };

  // 4104^3 BF16 nn: both operands' rows are 8208 bytes apart, 16-byte aligned, off sectors.
  const KernelProblem off = typed_problem(4104, 4104, 4104, "nn", "bf16");
  ASSERT_EQ(off.align_a, 8);
  ASSERT_EQ(off.tight_lda() * 2, 8208);
  ASSERT_TRUE(manifest.violations(copied, &device, &off).empty());
  EXPECT_TRUE(manifest.pruned_by(copied, device, off).empty());
  EXPECT_EQ(manifest.defines(copied, off), manifest.defines(in_place, off));
  const LaunchGeometry g = manifest.geometry(copied, off, device);
  EXPECT_EQ(g.copy_ld_a, 4160);  // 8320 bytes: whole 128-byte rows
  EXPECT_EQ(g.copy_ld_b, 4160);
  EXPECT_EQ(g.copy_bytes, 2 * 4104 * 4160 * 2);
  EXPECT_FALSE(manifest.geometry(in_place, off, device).copies_operands());
  Config realigned = in_place;
  realigned.set("REALIGN", 1);
  EXPECT_TRUE(pruned_by_rule(realigned, off, "realign_when_unaligned")) << "nothing is unaligned here";

  // 4103 x 4105 x 4104 nn: REALIGN copies B (an odd ldb) alone, SECTOR_COPY A as well (rows of 8208 bytes).
  const KernelProblem odd = typed_problem(4103, 4105, 4104, "nn", "bf16");
  realigned = manifest.normalize(manifest.seeds().front());
  ASSERT_EQ(realigned.at("REALIGN"), 1);
  Config both = realigned;
  both.set("SECTOR_COPY", 1);
  for (const Config* config : {&realigned, &both}) {
    ASSERT_TRUE(manifest.violations(*config, &device, &odd).empty());
    EXPECT_TRUE(manifest.pruned_by(*config, device, odd).empty());
  }
  EXPECT_EQ(manifest.geometry(realigned, odd, device).copy_ld_a, 0);
  EXPECT_EQ(manifest.geometry(realigned, odd, device).copy_ld_b, 4160);
  EXPECT_EQ(manifest.geometry(both, odd, device).copy_ld_a, 4160);
  EXPECT_EQ(manifest.geometry(both, odd, device).copy_ld_b, 4160);

  // Rows on sectors (4096: 128 bytes apart; 4112: 32) are read in place, and SECTOR_COPY = 1 is pruned.
  EXPECT_FALSE(pruned_by_rule(copied, off, "sector_copy_when_off_sectors"));
  for (int64_t size : {4096, 4112}) {
    const KernelProblem on = typed_problem(size, size, size, "nt", "bf16");
    EXPECT_FALSE(manifest.geometry(copied, on, device).copies_operands()) << size;
    EXPECT_TRUE(pruned_by_rule(copied, on, "sector_copy_when_off_sectors")) << size;
  }

  // TF32 nt with K = 1004: rows of 4016 bytes, 16-byte aligned, off sectors. FP32 reads split parts.
  const KernelProblem tf32 = typed_problem(1024, 1024, 1004, "nt", "tf32");
  ASSERT_TRUE(manifest.violations(copied, &device, &tf32).empty());
  EXPECT_EQ(manifest.geometry(copied, tf32, device).copy_ld_a, 1024);
  EXPECT_EQ(manifest.geometry(copied, tf32, device).copy_ld_b, 1024);
  const KernelProblem fp32 = typed_problem(1024, 1024, 1004, "nt", "f32");
  EXPECT_FALSE(manifest.violations(copied, &device, &fp32).empty());
}

TEST(TmaTemplate, L2StreamingIsAKernelParameterOfOperandsReadByTma) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config plain = manifest.normalize(manifest.seeds().front());
  ASSERT_EQ(plain.at("L2_STREAM"), 0) << "absent from earlier configs: neither operand streamed";
  const auto pruned = [&](const Config& config, const KernelProblem& problem) {
    for (const Violation& v : manifest.pruned_by(config, device, problem)) {
      if (v.constraint->name == "l2_stream_by_tma") return true;
    }
    return false;
  };
  const auto defines_of = [&](int64_t streamed, const KernelProblem& problem) {
    Config config = plain;
    config.set("L2_STREAM", streamed);
    return manifest.defines(config, problem);
  };
  const KernelProblem aligned = typed_problem(128, 4096, 4096, "nn", "bf16");
  EXPECT_NE(defines_of(1, aligned), defines_of(0, aligned)) << "the policy is compiled in";
  EXPECT_NE(defines_of(2, aligned), defines_of(1, aligned));
  for (int64_t streamed : {1, 2}) {
    Config config = plain;
    config.set("L2_STREAM", streamed);
    EXPECT_TRUE(manifest.violations(config, &device, &aligned).empty()) << streamed;
    EXPECT_FALSE(pruned(config, aligned)) << streamed;
    // B's rows odd and filled through the producer's registers (REALIGN = 0): only A's boxes come by TMA.
    config.set("REALIGN", 0);
    EXPECT_EQ(pruned(config, typed_problem(1024, 1023, 1024, "nn", "bf16")), streamed == 1) << streamed;
  }
}

TEST(TensorMaps, KeysFollowTheOperandsLayoutAndBadTensorsAreRefusedBeforeTheDriver) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  KernelCall call;
  call.problem = typed_problem(300, 200, 100, "tn", "bf16");  // A is k x m (M-contiguous), B k x n
  call.a = reinterpret_cast<const void*>(uintptr_t{0x10000});
  call.b = reinterpret_cast<const void*>(uintptr_t{0x20000});
  call.lda = 304, call.ldb = 200;
  const LaunchGeometry g = tma().manifest.geometry(tma().manifest.seeds().front(), call.problem, device);
  const TensorMapKey a = operand_a_key(call, g);
  EXPECT_EQ(a.inner, 300);
  EXPECT_EQ(a.rows, 100);
  EXPECT_EQ(a.ld, 304);
  const TensorMapKey b = operand_b_key(call, g);
  EXPECT_EQ(b.inner, 200);
  EXPECT_EQ(b.rows, 100);

  TensorMapKey odd = a;
  odd.ld = 301;  // rows of 602 bytes
  EXPECT_THROW(encode_tensor_map(odd), InvalidArgumentError);
  TensorMapKey shifted = a;
  shifted.base = reinterpret_cast<const void*>(uintptr_t{0x10008});
  EXPECT_THROW(encode_tensor_map(shifted), InvalidArgumentError);
  TensorMapKey wide = a;
  wide.box = {128, 64};  // 256 bytes along the row: wider than the swizzle
  EXPECT_THROW(encode_tensor_map(wide), InvalidArgumentError);
}

// setmaxnreg.inc blocks until the block's own pool holds the registers asked for: consumers asking for more
// than the producer gave back would wait forever. For each number of consumer warpgroups, a producer that
// copies by TMA alone or also through its registers (odd leading dimensions), and either epilogue, the
// registers the consumers claim plus the producer's fit what the block was given at launch, and nothing
// spills.
TEST(TmaTemplate, ConsumersClaimNoMoreRegistersThanTheBlockHolds) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90a");
  std::vector<KernelSpec> specs;
  for (const KernelProblem& problem :
       {typed_problem(1024, 1024, 1024, "nn", "bf16"), typed_problem(1024, 1023, 1024, "nn", "bf16"),
        typed_problem(1023, 1023, 1023, "nn", "bf16")}) {
    for (const auto& [wgm, wgn, wn, pingpong] : std::vector<std::tuple<int, int, int, int>>{{2, 1, 256, 0},
                                                                                            {1, 2, 128, 0},
                                                                                            {3, 1, 128, 0},
                                                                                            {2, 2, 128, 0},
                                                                                            {1, 1, 256, 1},
                                                                                            {3, 1, 64, 0},
                                                                                            {2, 1, 128, 1},
                                                                                            {1, 2, 64, 1}}) {
      for (const int stage_c : {0, 1}) {
        Config config = tma().manifest.seeds().front();
        config.set("REALIGN", 0);  // operands TMA cannot address go through the producer's registers
        config.set("WGM", wgm), config.set("WGN", wgn), config.set("WN", wn), config.set("STAGES", 2);
        config.set("PINGPONG", pingpong), config.set("STAGE_C", stage_c);
        // With a producer on more registers, or an epilogue staged through shared memory, four consumer
        // warpgroups no longer fit theirs.
        const bool fits = tma().manifest.violations(config, &device, &problem).empty();
        if ((problem.align_b < 8 || stage_c == 1) && wgm * wgn * (1 + pingpong) > 3 && !fits) continue;
        ASSERT_TRUE(fits) << config.key() << " " << problem.to_string();
        specs.push_back(make_spec(tma(), config, problem, "sm_90a", &device));
        // Two producer warpgroups filling the unaligned operands, where the consumers' registers allow.
        config.set("PRODUCERS", 2);
        if (problem.align_b < 8 && tma().manifest.violations(config, &device, &problem).empty())
          specs.push_back(make_spec(tma(), config, problem, "sm_90a", &device));
      }
    }
  }
  ASSERT_GE(std::count_if(specs.begin(), specs.end(),
                          [](const KernelSpec& spec) { return spec.config.at("STAGE_C") == 1; }),
            12);
  ASSERT_GE(std::count_if(specs.begin(), specs.end(),
                          [](const KernelSpec& spec) { return spec.config.at("PRODUCERS") == 2; }),
            2);
  std::vector<CompileRequest> requests;
  for (const KernelSpec& spec : specs) requests.push_back(spec.request(TemplateLibrary::instance()));
  const std::vector<CompileResult> results = compile_all(requests);
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(results[i].ok) << specs[i].config.key() << ": " << results[i].error << "\n" << results[i].log;
    const int64_t consumers =
        specs[i].config.at("WGM") * specs[i].config.at("WGN") * (1 + specs[i].config.at("PINGPONG"));
    const int64_t producers = specs[i].config.at("PRODUCERS");
    const int64_t threads = 128 * (consumers + producers);
    int64_t claimed = 0, kept = 0;
    for (const auto& [name, value] : tma().manifest.defines(specs[i].config, specs[i].problem)) {
      if (name == "CONSUMER_REGS") claimed = value;
      if (name == "PRODUCER_REGS") kept = value;
    }
    ASSERT_GT(claimed, 0) << specs[i].config.key();
    ASSERT_GE(kept, 32) << specs[i].config.key();
    EXPECT_FALSE(results[i].usage.spills()) << specs[i].config.key() << " " << specs[i].problem.to_string();
    EXPECT_LE(128 * producers * kept + 128 * consumers * claimed, threads * results[i].usage.registers)
        << specs[i].config.key() << ": " << results[i].usage.registers << " registers at launch";
  }
}

TEST(TmaTemplate, HeldSlicesAreThoseOfASixteenBitCThatTmaStoresInRounds) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const Manifest& manifest = tma().manifest;
  Config held = manifest.normalize(manifest.seeds().front());
  ASSERT_EQ(held.at("HOLD_C"), 0) << "absent from earlier configs: every round stored at the tile's end";
  // 128 x 256 tiles: four slices a warpgroup, two buffers. (Aligned operands: nothing to copy first.)
  held.set("STAGE_C", 2), held.set("HOLD_C", 1), held.set("REALIGN", 0);
  const auto broken = [&](const Config& config, const KernelProblem& problem) {
    std::string names;
    for (const Violation& v : manifest.violations(config, &device, &problem))
      names += v.constraint->name + " ";
    for (const Violation& v : manifest.pruned_by(config, device, problem)) names += v.constraint->name + " ";
    return names;
  };
  const KernelProblem bf16 = typed_problem(4096, 4096, 4096, "nn", "bf16");
  EXPECT_EQ(broken(held, bf16), "");
  EXPECT_EQ(broken(held, typed_problem(4096, 4096, 4096, "tt", "f16")), "");
  Config stored = held;
  stored.set("HOLD_C", 0);
  EXPECT_NE(manifest.defines(held, bf16), manifest.defines(stored, bf16)) << "holding is compiled in";
  // An FP32 C is not packed; a staged C has no rounds; ping-pong teams store under each other's main loop.
  EXPECT_NE(broken(held, typed_problem(4096, 4096, 4096, "nn", "bf16>f32")).find("held_c_by_tma"),
            std::string::npos);
  Config staged = held;
  staged.set("STAGE_C", 1);
  EXPECT_NE(broken(staged, bf16).find("held_c_by_tma"), std::string::npos);
  Config teams = held;
  teams.set("WGM", 1), teams.set("PINGPONG", 1);
  EXPECT_NE(broken(teams, bf16).find("held_c_by_tma"), std::string::npos);
  // 128-column consumers find a buffer for each of their two slices: one round, nothing to hold.
  Config narrow = held;
  narrow.set("WN", 128);
  EXPECT_EQ(broken(narrow, bf16), "held_c_in_rounds ");
}

TEST(TmaTemplate, BalancedWaveIsTheFewestBlocksThatTakeTheTilesInAsManyRounds) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  ASSERT_EQ(device.sm_count, 132);
  const Manifest& manifest = tma().manifest;
  Config wave = manifest.normalize(manifest.seeds().front());  // 128 x 256 tiles, persistent
  ASSERT_EQ(wave.at("WAVE"), 0) << "absent from earlier configs: a block per SM";
  wave.set("WAVE", 1), wave.set("REALIGN", 0);
  const auto pruned = [&](const Config& config, const KernelProblem& problem) {
    std::string names;
    for (const Violation& v : manifest.pruned_by(config, device, problem)) names += v.constraint->name + " ";
    return names;
  };
  // 512 tiles take four rounds of 132 blocks or of 128, each then taking four.
  const KernelProblem square = typed_problem(4096, 4096, 4096, "nn", "bf16");
  EXPECT_EQ(pruned(wave, square), "");
  EXPECT_EQ(manifest.geometry(wave, square, device).grid_x(), 128);
  // 4100 x 1030: 33 x 5 tiles, two rounds of 83 blocks; in clusters of two, 17 x 5 pairs in 43 clusters.
  const KernelProblem ragged = typed_problem(4100, 1030, 256, "nn", "bf16");
  EXPECT_EQ(manifest.geometry(wave, ragged, device).grid_x(), 83);
  Config clustered = wave;
  clustered.set("CLUSTER", 2);
  const LaunchGeometry pairs = manifest.geometry(clustered, ragged, device);
  EXPECT_EQ(pairs.grid_x(), 86);
  EXPECT_EQ(pairs.grid_x() % 2, 0) << "whole clusters";
  // 264 tiles fill two rounds of 132 blocks: nothing to balance, the config repeats WAVE = 0. Nor with
  // stream-K, which shares the last round out instead, or one block per tile.
  EXPECT_EQ(pruned(wave, typed_problem(8448, 1024, 1024, "nn", "bf16")), "balanced_wave_when_uneven ");
  Config streamed = wave;
  streamed.set("STREAM_K", 1), streamed.set("SPLIT_PAR", 1);
  EXPECT_NE(pruned(streamed, square).find("balanced_wave_when_uneven"), std::string::npos);
  Config tiles = wave;
  tiles.set("PERSISTENT", 0);
  EXPECT_NE(pruned(tiles, square).find("balanced_wave_when_uneven"), std::string::npos);
  // A launch parameter: the kernel is the same.
  Config plain = wave;
  plain.set("WAVE", 0);
  EXPECT_EQ(manifest.defines(wave, square), manifest.defines(plain, square));
}

TEST(TmaTemplate, SeedsAndASampleCompileForSm90aOnHgmmaFedByTma) {
  const DeviceInfo device = DeviceInfo::nominal("sm_90a");
  test_support::KernelCases cases;
  const auto add = [&](const Config& config, const KernelProblem& problem, bool sampled) {
    cases.add(tma(), config, problem, "sm_90a", device, sampled);
  };
  const std::vector<Config>& seeds = tma().manifest.seeds();
  // FP32 seeds fold their sums (FOLD), which no 16-bit config does: each type compiles the seeds valid for
  // it.
  for (const char* type : {"f32", "tf32", "bf16", "f16", "bf16>f32", "f16>f32"}) {
    for (const char* layout : {"nn", "nt", "tn", "tt"}) {
      const KernelProblem problem = typed_problem(1024, 1024, 1024, layout, type);
      for (const Config& seed : seeds) add(seed, problem, false);
    }
  }
  // C stored by TMA (STAGE_C = 2), of each type's width, from every seed that may.
  for (const char* type : {"f32", "tf32", "bf16", "f16>f32"}) {
    const KernelProblem problem = typed_problem(1024, 1024, 1024, "nt", type);
    for (Config seed : seeds) {
      seed.set("STAGE_C", 2);
      if (tma().manifest.violations(seed, &device, &problem).empty()) add(seed, problem, false);
    }
  }
  // Parallel split-K, where the consumers sum the slices' partial tiles without the producer: FP32, TF32 and
  // a 16-bit C, which can split K no other way.
  for (const char* type : {"f32", "tf32", "bf16"}) {
    const KernelProblem problem = typed_problem(256, 256, 8192, "nt", type);
    for (Config seed : seeds) {
      seed.set("SPLIT_PAR", 1), seed.set("SPLIT_K", 4), seed.set("PERSISTENT", 0);
      if (tma().manifest.violations(seed, &device, &problem).empty()) {
        add(seed, problem, false);
        break;
      }
    }
  }
  // Operands TMA cannot address, alone (B in nn, A in tt) or both (tn), filled by one producer warpgroup or
  // (the seeds of 128-column consumers) by two.
  for (const char* type : {"bf16", "f16>f32"}) {
    for (const auto& [m, n, k, layout] : std::vector<std::tuple<int, int, int, const char*>>{
             {1024, 1023, 1024, "nn"}, {1023, 1024, 1024, "tt"}, {1021, 1023, 1027, "tn"}}) {
      const KernelProblem problem = typed_problem(m, n, k, layout, type);
      for (Config seed : seeds) {
        // Known: storing an FP32 C by TMA beside the producer's fills of an M-major A spills 56 bytes,
        // and the tuner skips such configs; that seed's register fills compile here for a 16-bit C.
        if (seed.at("STAGE_C") == 2 && std::string(type) != "bf16") continue;
        seed.set("REALIGN", 0);
        if (tma().manifest.violations(seed, &device, &problem).empty()) add(seed, problem, false);
        seed.set("PRODUCERS", 2);
        if (seed.at("WN") == 128 && tma().manifest.violations(seed, &device, &problem).empty())
          add(seed, problem, false);
      }
    }
  }
  // The same operands, and TF32 rows TMA cannot address, copied with aligned rows first (REALIGN), in
  // clusters where the seed has them (the first two seeds copy them).
  for (const auto& [m, n, k, layout, type] :
       std::vector<std::tuple<int, int, int, const char*, const char*>>{{1024, 1023, 1024, "nn", "bf16"},
                                                                        {1021, 1023, 1027, "tn", "f16>f32"},
                                                                        {1001, 1003, 1005, "nt", "tf32"}}) {
    const KernelProblem problem = typed_problem(m, n, k, layout, type);
    for (Config seed : seeds) {
      seed.set("REALIGN", 1);
      add(seed, problem, false);
    }
  }
  // Either operand read with an evict-first L2 policy (L2_STREAM): alone and multicast in clusters, and B
  // as the first operand of a transposed TF32 product.
  for (const auto& [layout, type] : std::vector<std::pair<const char*, const char*>>{
           {"nn", "bf16"}, {"tn", "f16>f32"}, {"nt", "f32"}, {"nn", "tf32"}}) {
    const KernelProblem problem = typed_problem(128, 4096, 4096, layout, type);
    for (int streamed : {1, 2}) {
      for (Config seed : seeds) {
        seed.set("L2_STREAM", streamed);
        if (tma().manifest.violations(seed, &device, &problem).empty()) {
          add(seed, problem, false);
          if (seed.at("CLUSTER") == 1) break;
        }
      }
    }
  }
  // Clusters along N multicasting A (CLUSTER_N): K-major A (nn), M-major A (tn, FP16 with an FP32 C), both
  // TF32 parts of a split FP32 A, and a K-major TF32 A.
  for (const auto& [layout, type] : std::vector<std::pair<const char*, const char*>>{
           {"nn", "bf16"}, {"tn", "f16>f32"}, {"nn", "f32"}, {"nt", "tf32"}}) {
    const KernelProblem problem = typed_problem(4096, 4096, 4096, layout, type);
    for (Config seed : seeds) {
      seed.set("CLUSTER", 2), seed.set("CLUSTER_N", 1);
      if (tma().manifest.violations(seed, &device, &problem).empty()) {
        add(seed, problem, false);
        break;
      }
    }
  }
  // A 16-bit C's slices held past their first round (HOLD_C) by the seeds that store C by TMA in rounds,
  // alone, in clusters and before stream-K segments.
  for (const auto& [layout, type] :
       std::vector<std::pair<const char*, const char*>>{{"nn", "bf16"}, {"tt", "f16"}}) {
    const KernelProblem problem = typed_problem(4096, 4096, 4096, layout, type);
    for (const auto& [cluster, stream] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {1, 2}}) {
      for (Config seed : seeds) {
        seed.set("STAGE_C", 2), seed.set("HOLD_C", 1), seed.set("CLUSTER", cluster);
        if (stream > 0) seed.set("STREAM_K", stream), seed.set("SPLIT_PAR", 1);
        if (tma().manifest.violations(seed, &device, &problem).empty()) {
          add(seed, problem, false);
          break;
        }
      }
    }
  }
  std::mt19937_64 rng(5);
  for (const KernelProblem& problem :
       {typed_problem(4096, 4096, 4096, "nn", "bf16"), typed_problem(512, 512, 8192, "nt", "f16>f32")}) {
    const Space space = Space::build(tma(), device, problem);
    ASSERT_FALSE(space.empty()) << problem.to_string();
    for (int i = 0; i < 3; ++i) add(space.config(rng() % space.size()), problem, true);
  }
  ASSERT_GE(cases.size(), 80u);

  size_t sampled_spills = 0;
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      cases.requests(), [&](size_t i, const CompileResult& r, const std::string& whole) {
        const std::string& what = cases[i].what;
        // The tuner skips configs that spill, so a seed must not (nor the producer on its few registers).
        ASSERT_TRUE(test_support::expect_compiled(cases[i], r, sampled_spills));
        EXPECT_EQ(r.log.find("serialized"), std::string::npos) << what << ": wgmma serialized\n" << r.log;
        if (whole.empty()) return;
        const KernelSpec& spec = cases[i].spec;
        int64_t tma_a = 0, tma_b = 0, swap = 0;
        for (const auto& [name, value] : tma().manifest.defines(spec.config, spec.problem)) {
          if (name == "TMA_A") tma_a = value;
          if (name == "TMA_B") tma_b = value;
          if (name == "SWAP") swap = value;
        }
        // The operand passes are a module of their own (OperandPasses): no config carries them.
        EXPECT_EQ(whole.find("gf_split_operands"), std::string::npos) << what;
        EXPECT_EQ(whole.find("gf_realign_operands"), std::string::npos) << what;
        const std::string sass = test_support::function_sass(whole, "gemm_tma");
        ASSERT_FALSE(sass.empty()) << what;
        const std::string hgmma = test_support::hgmma_opcode(spec.problem.dtype, spec.config.at("WN"));
        // Four K steps per stage, three products of them for FP32, in one copy of the main loop: every
        // kind of launch walks its work through one call site.
        const size_t products = test_support::count(sass, hgmma);
        EXPECT_EQ(products, spec.problem.dtype == Dtype::kF32 ? 12u : 4u) << what << ": " << hgmma;
        // TMA copies the operands whose rows it can address (or their aligned copies); the producer's
        // realigned 16-byte loads the others, fenced for wgmma's reads (as C's slices are for TMA's).
        EXPECT_EQ(test_support::count(sass, "UTMALDG.2D") > 0, tma_a || tma_b) << what;
        // A streamed operand's boxes carry their L2 policy (a descriptor operand), and no other box does.
        size_t hinted = 0;
        for (size_t at = sass.find("UTMALDG"); at != std::string::npos; at = sass.find("UTMALDG", at + 1)) {
          const std::string line = sass.substr(at, sass.find('\n', at) - at);
          if (line.find("desc[") != std::string::npos) ++hinted;
        }
        EXPECT_EQ(hinted > 0, spec.config.at("L2_STREAM") != 0) << what;
        // Held slices of C are stored inside the main loop, under the next tile's first stages; otherwise the
        // loop around the wgmmas stores nothing.
        const std::string main_loop = test_support::loop_around(sass, hgmma);
        ASSERT_FALSE(main_loop.empty()) << what << ": no loop around " << hgmma;
        EXPECT_EQ(test_support::count(main_loop, "STSM") > 0, spec.config.at("HOLD_C") == 1) << what;
        EXPECT_EQ(test_support::count(sass, "LDG.E.128.CONSTANT") > 0, !(tma_a && tma_b)) << what;
        const bool by_tma = spec.config.at("STAGE_C") == 2;
        EXPECT_EQ(test_support::count(sass, "FENCE.VIEW.ASYNC.S") > 1, !(tma_a && tma_b) || by_tma) << what;
        EXPECT_EQ(test_support::count(sass, "LDGSTS"), 0u) << what;
        // Launched to overlap its operand passes, the kernel waits for them before it reads anything.
        EXPECT_GT(test_support::count(sass, "ACQBULK"), 0u) << what;
        const bool split =
            spec.config.at("WGM") * spec.config.at("WGN") * (1 + spec.config.at("PINGPONG")) > 1;
        EXPECT_EQ(test_support::count(sass, "USETMAXREG") > 0, split) << what;
        // A staged epilogue stores C in 16-byte vectors (with TMA, the tiles that must read C): where C's
        // rows are not 16-byte aligned, from each row's first 16-byte boundary on, but for a transposed
        // TF32 tile, whose vectors follow C's alignment. From the fragments, C goes in pairs at most.
        const bool wide_c = spec.config.at("STAGE_C") != 0 &&
                            (!swap || spec.problem.align_c * element_bytes(spec.problem.c_dtype) >= 16);
        // By TMA, a 16-bit C enters the swizzled slices by stmatrix.
        EXPECT_EQ(test_support::count(sass, "UTMASTG") > 0, by_tma) << what;
        EXPECT_EQ(test_support::count(sass, "STSM") > 0, by_tma && element_bytes(spec.problem.c_dtype) == 2)
            << what;
        // Parallel K slices store their partial tiles in 16-byte vectors and learn at a reducing barrier
        // whether theirs is the tile's last.
        const bool parallel = spec.config.at("SPLIT_PAR") == 1;
        if (!parallel) EXPECT_EQ(test_support::count(sass, "STG.E.128") > 0, wide_c) << what;
        EXPECT_EQ(test_support::count(sass, "BAR.RED.OR") > 0, parallel) << what;
        // Clusters multicast B and meet at cluster barriers.
        const bool clustered = spec.config.at("CLUSTER") > 1;
        EXPECT_EQ(test_support::count(sass, "UTMALDG.2D.MULTICAST") > 0, clustered) << what;
        EXPECT_EQ(test_support::count(sass, "UCGABAR_WAIT") > 0, clustered) << what;
        // Ping-pong teams hand each other the turn at named barriers.
        EXPECT_EQ(test_support::count(sass, "BAR.ARV") > 0, spec.config.at("PINGPONG") == 1) << what;
        // A stage's release to the other block is not a GPU-wide fence: those come only with the cluster
        // barriers at the start and the end.
        if (clustered) EXPECT_EQ(test_support::count(sass, "MEMBAR.ALL.GPU"), 2u) << what;
      });
  GEMMFORGE_EXPECT_WALK_COMPLETE_OR_SKIP(cases, disassembly, sampled_spills);
}

// The passes over the operands (split into TF32 parts, copies with aligned rows) compile once per
// architecture into a module of their own, keyed apart from every template: for each architecture a
// template that runs them is served on, without spills, loading and storing 16-byte vectors.
TEST(OperandPasses, CompileOncePerArchitectureIntoAModuleOfTheirOwn) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  EXPECT_TRUE(tma().manifest.prepares_operands());
  EXPECT_EQ(OperandPasses::cubin_key(library, "sm_90a"), OperandPasses::cubin_key(library, "sm_90"));
  EXPECT_NE(OperandPasses::cubin_key(library, "sm_80"), OperandPasses::cubin_key(library, "sm_90"));
  EXPECT_EQ(OperandPasses::request(library, "sm_90a").arch, "sm_90");
  std::vector<CompileRequest> requests;
  for (const char* arch : {"sm_80", "sm_90"}) requests.push_back(OperandPasses::request(library, arch));
  const test_support::Disassembly disassembly = test_support::compile_and_disassemble(
      requests, [&](size_t i, const CompileResult& r, const std::string& whole) {
        ASSERT_TRUE(r.ok) << requests[i].arch << ": " << r.error << "\n" << r.log;
        EXPECT_FALSE(r.usage.spills()) << requests[i].arch;
        if (whole.empty()) return;
        const std::string split = test_support::function_sass(whole, "gf_split_operands");
        const std::string copy = test_support::function_sass(whole, "gf_realign_operands");
        ASSERT_FALSE(split.empty() || copy.empty()) << requests[i].arch;
        // The split stores each part of a run of four as one vector; the copy loads realigned 16-byte
        // words and stores whole 16-byte vectors.
        EXPECT_GT(test_support::count(split, "STG.E.128"), 0u) << requests[i].arch;
        EXPECT_GT(test_support::count(copy, "LDG.E.128.CONSTANT"), 0u) << requests[i].arch;
        EXPECT_GT(test_support::count(copy, "STG.E.128"), 0u) << requests[i].arch;
        // On Hopper the split lets the main kernel launch as it ends (griddepcontrol.launch_dependents);
        // the copy does not.
        const size_t releases = std::string(requests[i].arch) == "sm_90" ? 1u : 0u;
        EXPECT_EQ(test_support::count(split, "PREEXIT"), releases) << requests[i].arch;
        EXPECT_EQ(test_support::count(copy, "PREEXIT"), 0u) << requests[i].arch;
      });
  if (disassembly.cuobjdump) EXPECT_EQ(disassembly.cubins, requests.size());
}

// A main kernel is launched to overlap the end of its operand passes (GemmKernel::launch), so every
// template that runs them must wait for them itself, which only sm_90 and newer can.
TEST(OperandPasses, EveryTemplateThatRunsThemWaitsForThemOnHopper) {
  size_t preparing = 0;
  for (const KernelTemplate* t : TemplateLibrary::instance().all()) {
    if (!t->manifest.prepares_operands()) continue;
    ++preparing;
    EXPECT_NE(t->source.find("gf::wait_for_previous_grid();"), std::string::npos) << t->manifest.name();
    EXPECT_FALSE(runs_on(*t, 80)) << t->manifest.name();
  }
  EXPECT_GE(preparing, 1u);
}

}  // namespace
}  // namespace gemmforge::rtc
