// GEMM on Hopper's warpgroup tensor cores fed by TMA (sm_90a): BF16, FP16 (C of their type or FP32), TF32,
// and FP32 at FP32 accuracy from three TF32 products; 16-bit and FP32 operands of any alignment.
//
// Warp-specialized. Warpgroup 0 is the producer: one of its threads walks the block's work and, for each
// K stage, waits until the consumers have left a shared stage, arms its `full` barrier with the stage's
// byte count and has the TMA engine copy the A and B boxes into it (128-byte swizzled; elements outside
// the matrices arrive as zeros, so edges need no code). Warpgroups 1 to WGM x WGN are consumers, each
// owning a 64 x WN tile of C: they wait on `full`, issue the stage's wgmmas, and hand the previous stage
// back once its wgmmas have retired, so the tensor cores always have the next stage queued. The producer
// gives its registers to the consumers (setmaxnreg).
//
// An operand TMA cannot address (its start or rows not 16-byte aligned, which an odd leading dimension
// makes them) is either copied first into the workspace with aligned rows by gf_realign_operands
// (operand_passes.cu; the manifest's COPY_A / COPY_B, chosen by REALIGN), which TMA then reads like any
// operand, or
// (TMA_A / TMA_B = 0) copied by the producer warpgroups instead (PRODUCERS: one or two), by realigned
// 16-byte loads through registers into the same swizzled layout; the producers keep more registers for
// them. With two, each fills one operand
// where both need it, or both share the one. The stage's `full` barrier then waits for every producer
// thread's arrival as well as TMA's bytes. With SECTOR_COPY (a launch parameter: the kernel is the same) an
// operand whose rows are 16-byte aligned but do not start on 32-byte sectors (a leading dimension of 8
// modulo 16 16-bit elements) is copied the same way: TMA reads such rows at about half its speed once most
// SMs read them (BF16 2048x2048x8200 nt on an H100: 0.163 ms against 0.089 at K = 8192; on 32 SMs,
// 1024x1024x8200, 6% slower).
//
// Operands lie in shared memory as they lie in global memory: K-major when K-contiguous, otherwise M- or
// N-major in boxes of 128 bytes, which 16-bit wgmma reads transposed (wgmma_major.cuh). wgmma reads TF32
// from shared memory K-major only, but takes its first operand from registers: an M-major TF32 tile
// (RS_A) is read into each warp's fragments a K step at a time, a step ahead of the wgmma that uses it. With
// a row-major B (TF32 nn, SWAP), the block computes C^T = B^T A^T: B plays the first operand and A the
// second, the tiles walk N by M, and the epilogue writes each accumulator transposed through the staging
// buffers.
//
// Work: without a K split, a persistent block (PERSISTENT, one per SM) walks the output tiles in raster
// order, its producer already loading the next tile while the consumers store the last one. With stream-K
// the blocks compute the whole tiles, one each or persistent, and then share the last tiles' K iterations
// (segment_walk.cuh). Without SPLIT_PAR, stream-K segments and serial split-K slices take turns by
// gemm_common.cuh's semaphores, every thread of the block taking part in their barriers, each adding its sum
// into C. With SPLIT_PAR (needed for a 16-bit C) nothing takes turns: a stream-K segment short of its
// tile's K end leaves its partial tile in its stream block's slot of the FP32 workspace, and the segment
// ending the tile's K waits for them and adds them; parallel split-K slices leave theirs for the tile's
// last slice to sum. The consumers meet at a named barrier of their own, and the producer goes on loading.
//
// Clusters (CLUSTER = 2, without a K split): the two blocks of a cluster compute vertically adjacent tiles,
// which read the same B, or with CLUSTER_N horizontally adjacent ones, which read the same A. Each block's
// producer loads half of every stage of the shared operand and multicasts it to both blocks, so it crosses
// from L2 once per cluster; a stage is refilled only once the consumers of both blocks have left it (they
// arrive on the `empty` barriers of both).
//
// Ping-pong (PINGPONG = 1, without a K split): two teams of WGM x WGN consumer warpgroups take the block's
// tiles in turn, team 0 the first, third, ... and team 1 the second, fourth, ... . The producer fills the
// stages in tile order, so one team's main loop runs while the other stores its last tile: the epilogue
// leaves the tensor cores busy. A stage is left by the one team that read it. A team starts waiting on its
// tile's stages only once the other team has waited on all of the previous tile's (a named barrier per
// team): a stage barrier's parity tells its last phase from the one before, not from phases further back.
//
// The epilogue stores C from the accumulators' fragments in pairs, or (STAGE_C = 1) passes each warp's rows
// through a buffer of its own so that lanes write consecutive columns in 16-byte vectors: where C's rows
// are not 16-byte aligned (an odd ldc), from each row's first 16-byte boundary on. With
// STAGE_C = 2 (C's rows 16-byte aligned) each consumer warpgroup writes its tile into swizzled slices of
// shared memory that the TMA engine stores (tma_store.cuh), and goes back to its tensor cores while they
// drain; a tile that must read C (beta != 0, or a K range adding to an earlier one) is staged as with 1.
//
// FP32 (ELEM = 0, PRODUCTS = 3): gf_split_operands (operand_passes.cu) first writes each operand as two TF32
// parts, big and small, K-major into the workspace: A's big rows over its small rows, then B's. The main
// kernel runs the TF32 kernel on them, each stage holding both parts of A's and of B's tiles (kParts), the
// small parts' boxes at rows offset by M or N. The consumers sum three products per stage, small(A) big(B),
// big(A) small(B) and big(A) big(B), so each part crosses from L2 once per K stage. Rows past M or N of a
// tile read the next part's rows instead of zeros; they only reach rows and columns of C that are not
// stored. The tensor cores round their accumulation toward zero, which over a long K adds up
// to a bias well above FP32's own error (2.9e-5 relative at K = 4096, against 4e-7 for cuBLAS SGEMM): every
// FOLD stages (three products each) are summed into fresh accumulators that FP32 adds, rounding to nearest,
// into the tile's sums.
//
// Parameters come from gemm_tma.json.
#include "grid_dependence.cuh"
#include "segment_walk.cuh"
#include "staged_store.cuh"
#include "swizzled_fill.cuh"
#include "tma.cuh"
#include "tma_store.cuh"
#include "wgmma_major.cuh"

#if !defined(WGM) || !defined(WGN) || !defined(WN) || !defined(STAGES) || !defined(A_MN) ||                 \
    !defined(B_MN) || !defined(ELEM) || !defined(C_F32) || !defined(VEC_C) || !defined(CONSUMER_REGS) ||    \
    !defined(CLUSTER) || !defined(PINGPONG) || !defined(TMA_A) || !defined(TMA_B) || !defined(PRODUCERS) || \
    !defined(PRODUCER_REGS) || !defined(STAGE_C) || !defined(SWAP) || !defined(RS_A) ||                     \
    !defined(PRODUCTS) || !defined(FOLD) || !defined(SPLIT_PAR) || !defined(C_BUFFERS) ||                   \
    !defined(L2_STREAM) || !defined(HOLD_C) || !defined(CLUSTER_N)
#error "gemm_tma.cu needs every parameter of gemm_tma.json as a -D definition"
#endif

namespace {

// ELEM is the problem's dtype: 0 FP32 (as TF32 parts), 1 TF32, 2 FP16, 3 BF16.
using Out = gf::SelectOutput<ELEM <= 1 || C_F32, gf::Half16<ELEM == 3>>::Type;
using Storage = gf::OutputAccess<Out>::Storage;
constexpr int kBytes = ELEM <= 1 ? 4 : 2;
constexpr int kBK = 128 / kBytes;  // K per stage: one swizzled 128-byte row (or box width) per operand row
constexpr int kKSteps = 4;         // wgmma K steps per stage (32 bytes of K each)
constexpr int kOperands = ELEM <= 1 ? gf::kWgmmaTf32 : (ELEM == 2 ? gf::kWgmmaF16 : gf::kWgmmaBf16);
constexpr int kBM = 64 * WGM;
constexpr int kBN = WN * WGN;
constexpr int kConsumers = WGM * WGN;  // consumer warpgroups of a team, which computes one tile
constexpr int kTeams = PINGPONG ? 2 : 1;
constexpr int kConsumerGroups = kConsumers * kTeams;
constexpr int kProducerThreads = 128 * PRODUCERS;
constexpr int kThreads = kProducerThreads + 128 * kConsumerGroups;
constexpr int kTilesN = WN / 8;       // m16n8 accumulator tiles of a warp, along N
constexpr int kBoxElems = kBK;        // M or N elements of an MN-major box: 128 bytes
constexpr int kBoxBytes = kBK * 128;  // an MN-major box: 128 bytes of M or N by kBK rows of K
constexpr int kATileBytes = kBM * 128;
constexpr int kBTileBytes = kBN * 128;
constexpr int kParts = PRODUCTS == 3 ? 2 : 1;  // tiles of each operand a stage holds: its parts, or itself
constexpr int kPartBytes = kATileBytes + kBTileBytes;
constexpr int kStageBytes = kParts * kPartBytes;  // [A big][B big][A small][B small], or [A][B]
// With STAGE_C = 1, a buffer per consumer warp through which it stores C; with 2, C_BUFFERS slice buffers
// per consumer warpgroup (a slice: 64 rows of 128 bytes), which its warps' buffers share where a tile is
// staged instead.
constexpr bool kTmaStoreC = STAGE_C == 2;
constexpr int kWarpStagingBytes = 4 * gf::kStagedWarpFloats * 4;  // a consumer warpgroup's warp buffers
constexpr int kSliceStagingBytes = C_BUFFERS * gf::kTmaStoreSliceBytes;
constexpr int kGroupStagingBytes =
    kTmaStoreC ? (kSliceStagingBytes > kWarpStagingBytes ? kSliceStagingBytes : kWarpStagingBytes)
               : (STAGE_C ? kWarpStagingBytes : 0);
constexpr int kStagingBytes = kConsumerGroups * kGroupStagingBytes;
constexpr unsigned kSmemBytes =
    STAGES * kStageBytes + kStagingBytes + 1024 + 2 * STAGES * 8;  // tiles, staging, alignment, barriers
constexpr bool kAllTma = TMA_A && TMA_B;
// A tile's staged store of a 16-bit C with rows off 16-byte boundaries keeps its last pass in the warp's
// buffer and writes it out under the next work's first stage (store_tile; the main loop of a first operand
// read into registers, or folded, has no place for it). Not in ping-pong: there the other team's main loop
// already runs under the store, and a pass written after the team's first stage left its tensor cores
// idle (BF16 1024x50257x768 nt on an H100: 0.1470 ms against 0.1350 without the kept pass).
constexpr bool kKeepLastPass =
    Out::kBytes == 2 && kAllTma && STAGE_C == 1 && VEC_C * 2 < 16 && !SWAP && !RS_A && FOLD == 0 && !PINGPONG;
constexpr unsigned kTmaBytes = kParts * ((TMA_A ? kATileBytes : 0) + (TMA_B ? kBTileBytes : 0));
constexpr int kFillBatch = 8;  // 16-byte chunks a producer thread has in flight while filling a stage
// The register split (setmaxnreg): the producer keeps PRODUCER_REGS and gives the rest of its share to the
// consumers, who may take no more than the block was given at launch (kThreads times the registers ptxas
// allots a thread, the most __launch_bounds__ allows when setmaxnreg is used). With 24, the producer's tile
// walk and box coordinates spilled to local memory for K-major B; filling stages through registers takes
// kFillBatch chunks of 16 bytes in flight, and the two words each is realigned from.
constexpr int kProducerRegs = PRODUCER_REGS;
constexpr int kLaunchRegs = 65536 / kThreads / 8 * 8;
static_assert(kProducerRegs <= kLaunchRegs, "setmaxnreg.dec cannot raise the producer's registers");
static_assert(!(kConsumerGroups > 1) ||
                  kProducerThreads * kProducerRegs + 128 * kConsumerGroups * CONSUMER_REGS <=
                      kThreads * kLaunchRegs,
              "the consumers' registers must come out of the block's own allocation");
static_assert(ELEM >= 0 && ELEM <= 3, "TMA feeds FP32 (as TF32 parts), TF32, FP16 and BF16 operands");
static_assert(ELEM > 1 || kAllTma, "TF32 operands come by TMA only");
static_assert((PRODUCTS == 3) == (ELEM == 0),
              "FP32 operands are summed as three TF32 products, others as one");
static_assert(PRODUCTS == 1 || (!A_MN && !B_MN && !SWAP), "split operands are K-major");
static_assert((FOLD > 0) == (PRODUCTS == 3), "FP32 sums fold the tensor cores' partial sums");
static_assert(CLUSTER == 1 || kAllTma, "clusters multicast B by TMA");
static_assert(L2_STREAM >= 0 && L2_STREAM <= 2, "no operand, B or A streamed through L2");
static_assert(!HOLD_C || (kTmaStoreC && !PINGPONG && Out::kBytes == 2),
              "a tile is held packed in 16 bits for TMA's stores, by the one team of consumers");
static_assert(PRODUCERS == 1 || PRODUCERS == 2, "one or two producer warpgroups");
static_assert(ELEM > 1 || (!B_MN && (!A_MN || RS_A)), "TF32 tiles in shared memory must be K-major");
static_assert(WN == 64 || WN == 128 || WN == 192 || WN == 256,
              "a warpgroup's tile is 64, 128, 192 or 256 columns wide");
static_assert(kBM <= 256, "a box spans at most 256 rows");
static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of one or two blocks");
static_assert(PINGPONG == 0 || PINGPONG == 1, "one team of consumers, or two taking turns");
static_assert(STAGE_C >= 0 && STAGE_C <= 2, "C stored from the fragments, staged per warp, or by TMA");
static_assert(!kTmaStoreC || (!SWAP && VEC_C * Out::kBytes >= 16),
              "TMA stores C's tiles untransposed, into rows 16-byte aligned");
static_assert(kTmaStoreC == (C_BUFFERS > 0), "slice buffers for C stored by TMA, and only then");
static_assert(!SWAP || (ELEM == 1 && RS_A && STAGE_C && CLUSTER == 1),
              "a transposed TF32 product reads B into registers, stores C staged and runs without clusters");
static_assert(!RS_A || (ELEM == 1 && A_MN), "only an M-major TF32 first operand comes from registers");
static_assert(CLUSTER == 1 || CLUSTER_N || (B_MN ? kBK / CLUSTER : WN / CLUSTER) % 8 == 0,
              "B's boxes must share out over the cluster in whole 8-row swizzle atoms");
static_assert(CLUSTER == 1 || !CLUSTER_N || (A_MN ? kBK / CLUSTER : kBM / CLUSTER) % 8 == 0,
              "A's boxes must share out over the cluster in whole 8-row swizzle atoms");

// A piece of the block's work: a K range of one output tile, and the tile's origin.
struct Work {
  gf::Segment segment;
  int m0;
  int n0;
};

__device__ __forceinline__ Work tile_work(const GemmArgs& args, const gf::Segment& segment) {
  int tile_m, tile_n;
  gf::tile_coordinates(segment.tile, (args.m + kBM - 1) / kBM, (args.n + kBN - 1) / kBN, args.raster_group,
                       tile_m, tile_n);
  return Work{segment, tile_m * kBM, tile_n * kBN};
}

// A cluster's work units: CLUSTER vertically adjacent tiles (sharing B) or, with CLUSTER_N, horizontally
// adjacent ones (sharing A). Their rows and columns.
__device__ __forceinline__ int unit_rows(const GemmArgs& args) {
  const int tiles_m = (args.m + kBM - 1) / kBM;
  return CLUSTER_N ? tiles_m : (tiles_m + CLUSTER - 1) / CLUSTER;
}
__device__ __forceinline__ int unit_cols(const GemmArgs& args) {
  const int tiles_n = (args.n + kBN - 1) / kBN;
  return CLUSTER_N ? (tiles_n + CLUSTER - 1) / CLUSTER : tiles_n;
}

// Runs body(work) over the block's work, from one call site: split-K / stream-K segments, or else the output
// tiles blockIdx.x, blockIdx.x + gridDim.x, ... (one tile unless the launch is persistent). A cluster walks
// its units, its block of rank r taking the unit's r-th tile (past the matrix when the tiles do not divide
// evenly: that block still loads its share of the shared operand).
template <typename Body>
__device__ __forceinline__ void for_each_work(const GemmArgs& args, Body&& body) {
  if constexpr (CLUSTER > 1) {
    const int rank = static_cast<int>(gf::cluster_rank());
    const int rows = unit_rows(args), cols = unit_cols(args);
    const int clusters = static_cast<int>(gridDim.x) / CLUSTER;
    for (int unit = static_cast<int>(blockIdx.x) / CLUSTER; unit < rows * cols; unit += clusters) {
      int unit_m, unit_n;
      gf::tile_coordinates(unit, rows, cols, args.raster_group, unit_m, unit_n);
      const int tile_m = CLUSTER_N ? unit_m : unit_m * CLUSTER + rank;
      const int tile_n = CLUSTER_N ? unit_n * CLUSTER + rank : unit_n;
      body(Work{gf::Segment{unit, 0, args.k}, tile_m * kBM, tile_n * kBN});
    }
  } else {
    gf::SegmentWalk<kBK> walk(args);
    for (gf::Segment segment; walk.next(segment);) body(tile_work(args, segment));
  }
}

// The pieces of work for_each_work gives this block, for whole tiles (no K split).
__device__ __forceinline__ int block_works(const GemmArgs& args) {
  int first = static_cast<int>(blockIdx.x), stride = static_cast<int>(gridDim.x), total = args.tiles;
  if constexpr (CLUSTER > 1) {
    first /= CLUSTER, stride /= CLUSTER;
    total = unit_rows(args) * unit_cols(args);
  }
  return first < total ? (total - 1 - first) / stride + 1 : 0;
}

// Ping-pong turns: team t waits at named barrier 1 + t until the other team has passed its stage waits.
constexpr int kTeamThreads = 128 * kConsumers;
__device__ __forceinline__ void await_turn(int team) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(1 + team), "n"(2 * kTeamThreads) : "memory");
}
__device__ __forceinline__ void pass_turn(int team) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(2 - team), "n"(2 * kTeamThreads) : "memory");
}

// Lane 0's `value`, in every lane. ptxas keeps a value in uniform registers, worked by the warp's scalar
// datapath, only where it can tell that every lane holds the same, and only in code every lane runs
// together: it cannot tell so of the warpgroup's index (a quotient of threadIdx), of counts carried through
// the tile walk, or of a team vote, but it can of what one lane gave; and a loop whose trip count differs
// between lanes anywhere in the tile walk (the epilogues' loops run a fixed count, their lanes predicated)
// makes it give up on all of it. The main loop, from the warpgroup's index and the tile's first ring
// position taken so, then keeps its stage and phase, barrier addresses and wgmma descriptors there: at BF16
// 128 x 256 tiles its 82 SASS instructions a stage, the 4 HGMMA among them, became 54, 7 of them vector ALU.
__device__ __forceinline__ int warp_uniform(int value) {
  return __shfl_sync(0xffffffffu, value, 0);
}

// Parallel split-K: the team's consumers (the producer takes no part) meet at named barrier 3, and learn
// whether any of them saw `value`.
constexpr int kSliceBarrier = 3;
__device__ __forceinline__ void team_sync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kSliceBarrier), "n"(kTeamThreads) : "memory");
}
__device__ __forceinline__ bool team_any(bool value) {
  unsigned any;
  asm volatile(
      "{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\tbar.red.or.pred p, %2, %3, p;\n\tselp.u32 %0, 1, 0, "
      "p;\n}\n"
      : "=r"(any)
      : "r"(static_cast<unsigned>(value)), "n"(kSliceBarrier), "n"(kTeamThreads)
      : "memory");
  return any != 0;
}

// The block is one slice of a parallel split-K launch (each block then has one segment).
__device__ __forceinline__ bool sums_in_workspace(const GemmArgs& args) {
  return SPLIT_PAR && args.split_k > 1 && args.stream_blocks == 0;
}

// Stream-K segments sum a streamed tile through the FP32 workspace (SPLIT_PAR), the segment ending the
// tile's K adding the others' partial tiles and storing it, rather than adding into C in turn (which a
// 16-bit C cannot).
__device__ __forceinline__ bool streams_through_workspace(const GemmArgs& args) {
  return SPLIT_PAR && args.stream_blocks > 0;
}

// Segments that add into C in turn (serial split-K slices, stream-K without SPLIT_PAR): every thread of the
// block takes part in their turns' barriers.
__device__ __forceinline__ bool takes_turns(const GemmArgs& args) {
  return !sums_in_workspace(args) && !streams_through_workspace(args);
}

__device__ __forceinline__ int stage_count(const gf::Segment& segment) {
  return segment.k_end > segment.k_begin ? (segment.k_end - segment.k_begin + kBK - 1) / kBK : 0;
}

// The tensor maps of the first and the second operand: A's and B's, or B's and A's for C^T = B^T A^T.
__device__ __forceinline__ const TensorMap* first_map(const TensorMaps& maps) {
  return SWAP ? &maps.b : &maps.a;
}
__device__ __forceinline__ const TensorMap* second_map(const TensorMaps& maps) {
  return SWAP ? &maps.a : &maps.b;
}

// L2_STREAM: the operand whose boxes are read with an evict-first L2 policy (1: B, 2: A; 0: neither), for
// problems that stream it once from device memory (few rows of C against a large B): its lines give way
// first, and the lines already in L2 stay, dirty ones unwritten (H100, BF16, `measure`, one config each:
// 128x4096x4096 nn 0.0229 ms against 0.0254, 16x4096x4096 nn 0.0230 against 0.0248; 4096^3 unchanged).
// The first operand of the frame (A, or B with SWAP) and the second.
constexpr bool kStreamFirst = L2_STREAM == (SWAP ? 1 : 2);
constexpr bool kStreamSecond = L2_STREAM == (SWAP ? 2 : 1);

// The boxes of one operand's tile that TMA copies, from row (column) mn0 of M (N) at K k0, into `tile`:
// K-major, kBoxRows rows of M or N a box (A: one box of kBM rows; B: one box of WN rows per consumer column);
// M- or N-major, a box per 64 columns of M or N. Shared in a cluster, the block of rank r loads the r-th of
// every CLUSTER pieces into every block of the cluster: of each box's rows (K-major), or of each box's K rows
// (M- or N-major, so that a tile of one box still shares out). kStream reads under the evict-first policy.
constexpr unsigned short kEveryBlock = (1u << CLUSTER) - 1;
template <bool kStream, bool kMn, bool kShared, int kRows, int kBoxRows>
__device__ __forceinline__ void load_operand(char* tile, const TensorMap* map, int mn0, int k0,
                                             unsigned long long* full) {
  constexpr int kSharers = kShared ? CLUSTER : 1;
  const int rank = kShared ? static_cast<int>(gf::cluster_rank()) : 0;
  const auto load = [&](char* to, int inner, int outer) {
    gf::tma_load<kStream>(to, map, inner, outer, full, kShared ? kEveryBlock : 0);
  };
  if constexpr (kMn) {
    constexpr int kShare = kBK / kSharers;
#pragma unroll
    for (int box = 0; box < kRows / kBoxElems; ++box)
      load(tile + box * kBoxBytes + rank * kShare * 128, mn0 + kBoxElems * box, k0 + rank * kShare);
  } else {
    constexpr int kShare = kBoxRows / kSharers;
#pragma unroll
    for (int box = 0; box < kRows / kBoxRows; ++box) {
      const int row = box * kBoxRows + rank * kShare;
      load(tile + row * 128, k0, mn0 + row);
    }
  }
}

// The boxes of one part of a stage that TMA copies, from row m0 of A and n0 of B at K k0, into `stage`: the
// first operand's tile (A, or B with SWAP), then the second's. Clusters along N share A, along M B.
constexpr bool kSharesA = CLUSTER > 1 && CLUSTER_N;
constexpr bool kSharesB = CLUSTER > 1 && !CLUSTER_N;
__device__ __forceinline__ void load_part(const TensorMaps& maps, char* stage, int m0, int n0, int k0,
                                          unsigned long long* full) {
  if constexpr (TMA_A) {
    load_operand<kStreamFirst, A_MN != 0, kSharesA, kBM, kBM>(stage, first_map(maps), m0, k0, full);
  }
  if constexpr (TMA_B) {
    load_operand<kStreamSecond, B_MN != 0, kSharesB, kBN, WN>(stage + kATileBytes, second_map(maps), n0, k0,
                                                              full);
  }
}

// A stage's boxes, completing kTmaBytes of `full`: its one part, or with PRODUCTS = 3 the big parts' boxes
// and then the small parts', which lie M rows below in A's parts and N rows below in B's.
__device__ __forceinline__ void load_stage(const GemmArgs& args, const TensorMaps& maps, char* stage, int m0,
                                           int n0, int k0, unsigned long long* full) {
#pragma unroll
  for (int part = 0; part < kParts; ++part)
    load_part(maps, stage + part * kPartBytes, m0 + part * args.m, n0 + part * args.n, k0, full);
}

// Fills the tile of an operand TMA does not copy (kRows of M or N by kBK of K) from `p`, through the
// producer's registers, laid out as TMA would have: K-major, a line per row of M or N; M- or N-major, boxes
// of 64 columns of M or N, a line per row of K.
// kThreads producer threads share it, `thread` being the caller's index among them.
template <int kRows, bool kMn, int kThreads>
__device__ __forceinline__ void fill_operand(char* tile, const unsigned short* p, long long ld, int mn0,
                                             int extent, int k0, int k, int thread) {
  if constexpr (kMn) {
    gf::fill_swizzled_tile<kRows / 64 * kBK, kBK, kThreads, kFillBatch>(tile, p + k0 * ld + mn0, ld, k - k0,
                                                                        extent - mn0, p, thread);
  } else {
    gf::fill_swizzled_tile<kRows, kRows, kThreads, kFillBatch>(tile, p + mn0 * ld + k0, ld, extent - mn0,
                                                               k - k0, p, thread);
  }
}

template <int kThreads>
__device__ __forceinline__ void fill_a(const GemmArgs& args, char* stage, int m0, int k0, int thread) {
  fill_operand<kBM, A_MN != 0, kThreads>(stage, static_cast<const unsigned short*>(args.a), args.lda, m0,
                                         args.m, k0, args.k, thread);
}

template <int kThreads>
__device__ __forceinline__ void fill_b(const GemmArgs& args, char* stage, int n0, int k0, int thread) {
  fill_operand<kBN, B_MN != 0, kThreads>(stage + kATileBytes, static_cast<const unsigned short*>(args.b),
                                         args.ldb, n0, args.n, k0, args.k, thread);
}

// The stage's operands TMA does not copy: with two producer warpgroups and both operands to fill, the first
// fills A and the second B, so their loads are in flight together; otherwise all producer threads share
// each operand in turn.
__device__ __forceinline__ void fill_stage(const GemmArgs& args, char* stage, int m0, int n0, int k0) {
  const int thread = static_cast<int>(threadIdx.x);
  if constexpr (PRODUCERS == 2 && !TMA_A && !TMA_B) {
    if (thread < 128) {
      fill_a<128>(args, stage, m0, k0, thread);
    } else {
      fill_b<128>(args, stage, n0, k0, thread - 128);
    }
  } else {
    if constexpr (!TMA_A) fill_a<kProducerThreads>(args, stage, m0, k0, thread);
    if constexpr (!TMA_B) fill_b<kProducerThreads>(args, stage, n0, k0, thread);
  }
}

// A consumer warp is done with a stage: its arrival on the stage's `empty` barrier, in every block of the
// cluster whose producer wrote into it.
__device__ __forceinline__ void leave_stage(unsigned long long* empty) {
  if constexpr (CLUSTER > 1) {
#pragma unroll
    for (unsigned rank = 0; rank < CLUSTER; ++rank) gf::mbarrier_arrive_cluster(empty, rank);
  } else {
    gf::mbarrier_arrive(empty);
  }
}

// The producer keeps the stages filled: thread 0 by TMA alone, or the whole warpgroup where an operand
// goes through registers. The whole warpgroup takes part in the block's barriers.
__device__ __forceinline__ void produce(const GemmArgs& args, const TensorMaps& maps, char* smem,
                                        unsigned long long* full, unsigned long long* empty) {
  int use = 0;  // stages filled so far, across segments
  for_each_work(args, [&](const Work& work) {
    const gf::Segment& segment = work.segment;
    if (!kAllTma || threadIdx.x == 0) {
      const int stages = stage_count(segment);
      for (int kt = 0; kt < stages; ++kt, ++use) {
        const int stage = use % STAGES;
        char* tiles = smem + stage * kStageBytes;
        const int k0 = segment.k_begin + kt * kBK;
        gf::mbarrier_wait(empty + stage, ((use / STAGES) & 1) ^ 1);
        if constexpr (kAllTma) {
          gf::mbarrier_arrive_expect(full + stage, kTmaBytes);
          load_stage(args, maps, tiles, work.m0, work.n0, k0, full + stage);
        } else {
          if (kTmaBytes > 0 && threadIdx.x == 0) {
            gf::mbarrier_expect(full + stage, kTmaBytes);
            load_stage(args, maps, tiles, work.m0, work.n0, k0, full + stage);
          }
          fill_stage(args, tiles, work.m0, work.n0, k0);
          gf::fence_async_shared();  // the fills, before wgmma reads them
          gf::mbarrier_arrive(full + stage);
        }
      }
    }
    if (takes_turns(args)) {
      gf::segment_acquire(args, segment);
      gf::segment_release(args, segment);
    }
  });
}

// A wgmma descriptor's start field holds its tile's shared-memory address / 16 in the low 14 bits, and
// shared memory ends below 256 KB: the tile `bytes` further on (a multiple of 16) has the descriptor plus
// bytes / 16, no carry leaving the field. The main loop steps its descriptors so from one built before it,
// rather than building each of a stage's eight anew (about a third of a consumer's main-loop instructions).
__device__ __forceinline__ unsigned long long advance(unsigned long long descriptor, unsigned bytes) {
  const unsigned start = static_cast<unsigned>(descriptor) + (bytes >> 4);  // the low word alone: no carry
  return (descriptor & ~0xffffffffull) | start;
}

// The descriptors of a consumer warpgroup's parts of A's and B's tiles in stage 0 (the big parts' with
// PRODUCTS = 3).
struct Descriptors {
  unsigned long long a;
  unsigned long long b;
};

__device__ __forceinline__ Descriptors stage_zero_descriptors(const char* smem, int wg_m, int wg_n) {
  const char* a = smem + wg_m * (A_MN ? 64 / kBoxElems * kBoxBytes : 64 * 128);
  const char* b = smem + kATileBytes + wg_n * (B_MN ? WN / kBoxElems * kBoxBytes : WN * 128);
  return Descriptors{A_MN ? gf::smem_descriptor_mn(a, kBoxBytes) : gf::smem_descriptor(a),
                     B_MN ? gf::smem_descriptor_mn(b, kBoxBytes) : gf::smem_descriptor(b)};
}

// A consumer's wgmmas of one product over a stage's four K steps, both operands from shared memory, A's
// and B's parts described by `a` and `b`. The first step starts the accumulators afresh if `fresh`. (With
// RS_A this compiles to nothing.)
__device__ __forceinline__ void issue_product(unsigned long long a, unsigned long long b, bool fresh,
                                              float (&d)[kTilesN][4]) {
  if constexpr (!RS_A) {
    // Bytes per K step: 16 rows of K (MN-major), or 32 bytes along each row (K-major).
    constexpr unsigned kAStep = A_MN ? 16 * 128 : 32;
    constexpr unsigned kBStep = B_MN ? 16 * 128 : 32;
#pragma unroll
    for (int step = 0; step < kKSteps; ++step) {
      gf::wgmma_major<WN, kOperands, A_MN != 0, B_MN != 0>(
          d, advance(a, kAStep * step), advance(b, kBStep * step), fresh && step == 0 ? 0 : 1);
    }
  }
}

// A consumer's wgmmas over stage `stage` as one commit group: its product, or with PRODUCTS = 3 small(A)
// big(B), big(A) small(B) and big(A) big(B), the small terms first. (With RS_A the consumers run
// issue_stage_rs, and this compiles to nothing.)
__device__ __forceinline__ void issue_stage(const Descriptors& stage_zero, int stage, bool fresh,
                                            float (&d)[kTilesN][4]) {
  if constexpr (!RS_A) {
    const unsigned long long a = advance(stage_zero.a, stage * kStageBytes);
    const unsigned long long b = advance(stage_zero.b, stage * kStageBytes);
    gf::fence_accumulators(d);
    gf::wgmma_fence();
    if constexpr (PRODUCTS == 3) {
      issue_product(advance(a, kPartBytes), b, fresh, d);
      issue_product(a, advance(b, kPartBytes), false, d);
      issue_product(a, b, false, d);
    } else {
      issue_product(a, b, fresh, d);
    }
    gf::wgmma_commit();
    gf::fence_accumulators(d);
  }
}

// The same with the first operand from registers (RS_A): each K step reads its fragment from the M-major
// tile, issues its wgmma as a commit group of its own, and waits for the step before to retire, whose
// fragment's registers the next step fills (two sets alternate; the tensor cores meanwhile run the step
// just issued). Once the first step's wait returns, the stage before has retired: previous_stage_retired()
// runs there, or in clusters after the second step's (an arrival on the other block's barrier after the
// first has ptxas serialize every wgmma of the kernel, C7513).
template <typename Retired>
__device__ __forceinline__ void issue_stage_rs(const char* smem, const Descriptors& stage_zero, int stage,
                                               int wg_m, const unsigned (&fragment_offsets)[4], bool fresh,
                                               float (&d)[kTilesN][4], unsigned (&frags)[2][4],
                                               Retired&& previous_stage_retired) {
  const char* a = smem + stage * kStageBytes + wg_m * (64 / kBoxElems * kBoxBytes);
  const char* const elements[4] = {a + fragment_offsets[0], a + fragment_offsets[1], a + fragment_offsets[2],
                                   a + fragment_offsets[3]};
  const unsigned long long b = advance(stage_zero.b, stage * kStageBytes);
  static_assert(kKSteps % 2 == 0, "a stage's steps alternate between the two fragment sets");
  constexpr int kHandBackStep = CLUSTER > 1 ? 1 : 0;
  gf::fence_accumulators(d);
#pragma unroll
  for (int step = 0; step < kKSteps; ++step) {
    unsigned(&fragment)[4] = frags[step % 2];
    gf::load_tf32_fragment_mn(elements, step, fragment);
    gf::wgmma_fence();
    gf::wgmma_tf32_rs<WN>(d, fragment, advance(b, 32 * step), fresh && step == 0 ? 0 : 1);
    gf::wgmma_commit();
    gf::wgmma_wait<1>();
    gf::fence_fragment(frags[(step + 1) % 2]);
    if (step == kHandBackStep) previous_stage_retired();
  }
  gf::fence_accumulators(d);
}

// A consumer warpgroup's staging and the named barrier its threads meet at (0 to 3 are taken).
struct Staging {
  char* buffers;  // kGroupStagingBytes of the warpgroup's own
  int barrier;
};

// Stores a consumer's 64 x WN tile of C at (m0, n0): from the fragments, in pairs at most (STAGE_C = 0),
// through each warp's staging buffer in the widest vectors C allows (STAGE_C = 1, staged_store.cuh), or by
// TMA where `by_tma` (STAGE_C = 2: C is not read, and the tile's sums are whole; tma_store.cuh).
// With `keep` a 16-bit C whose rows are not 16-byte aligned, not read, leaves the last pass of its staged
// store in the warp's buffer, and store_tile returns true: the caller writes it out (write_kept) under the
// next work's first stage.
__device__ __forceinline__ bool store_tile(const GemmArgs& args, const TensorMap* map_c, int m0, int n0,
                                           const gf::EpilogueMode& mode, bool by_tma,
                                           const float (&acc)[kTilesN][4], const Staging& staging,
                                           bool keep = false) {
  Storage* C = static_cast<Storage*>(args.c);
  const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
  float* buffer = reinterpret_cast<float*>(staging.buffers) + warp * gf::kStagedWarpFloats;
  if constexpr (kTmaStoreC) {
    if (by_tma) {
      gf::store_by_tma<Out, kTilesN, C_BUFFERS>(map_c, m0, n0, mode.alpha, acc, staging.buffers,
                                                staging.barrier);
      return false;
    }
    // The warps' buffers share the slice buffers: the last slice stored must have been read.
    if (threadIdx.x % 128 == 0) gf::bulk_wait_read<0>();
    gf::warpgroup_sync(staging.barrier);
  }
  if constexpr (SWAP) {
    // The accumulator holds C^T: its rows are columns m0 + 16 warp .. of C, its columns rows n0 .. of C.
    gf::store_staged_transposed<Out, VEC_C, kTilesN>(C, args.ldc, n0, m0 + 16 * warp, args.n, args.m, mode,
                                                     acc, buffer);
  } else if constexpr (STAGE_C != 0 && VEC_C * Out::kBytes < 16) {
    // A 16-bit C not read is staged as it is stored, where the producer leaves the consumers registers.
    if constexpr (Out::kBytes == 2 && kAllTma) {
      if (!mode.reads_c()) {
        gf::store_packed_realigned<Out, kTilesN>(reinterpret_cast<unsigned short*>(C), args.ldc,
                                                 m0 + 16 * warp, n0, args.m, args.n, mode.alpha, acc, buffer,
                                                 keep);
        return keep;
      }
    }
    gf::store_staged_realigned<Out, kTilesN>(C, args.ldc, m0 + 16 * warp, n0, args.m, args.n, mode, acc,
                                             buffer);
  } else if constexpr (STAGE_C != 0) {
    gf::store_staged<Out, VEC_C, kTilesN>(C, args.ldc, m0 + 16 * warp, n0, args.m, args.n, mode, acc, buffer);
  } else {
    const int lane = static_cast<int>(threadIdx.x) % 32;
    const int g = lane / 4;
    const int t = lane % 4;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = m0 + warp * 16 + g + 8 * half;
      if (row >= args.m) continue;
      Storage* c_row = C + row * args.ldc;
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) {
        gf::write_pair<Out, (VEC_C >= 2)>(c_row, n0 + 8 * j + 2 * t, args.n, mode, acc[j][2 * half],
                                          acc[j][2 * half + 1]);
      }
    }
  }
  return false;
}

// Partial tiles in the FP32 workspace: slot `slot` holds the team's kTilesN x 4 floats per thread,
// fragment j of every thread side by side, so that its stores and loads coalesce.
__device__ __forceinline__ float4* partial(const GemmArgs& args, long long slot, int j) {
  const int thread = static_cast<int>(threadIdx.x) - kProducerThreads;
  return reinterpret_cast<float4*>(args.workspace) + (slot * kTilesN + j) * kTeamThreads + thread;
}

__device__ __forceinline__ void keep_partial(const GemmArgs& args, long long slot,
                                             const float (&result)[kTilesN][4]) {
#pragma unroll
  for (int j = 0; j < kTilesN; ++j)
    __stcg(partial(args, slot, j), make_float4(result[j][0], result[j][1], result[j][2], result[j][3]));
}

// Adds the partial tiles in slots first, first + 1, ..., first + count - 1, in that order, to result where
// `add`, else sums them into it: a chunk of the fragments at a time, so that the loads in flight fit beside
// a 256-column tile's registers.
__device__ __forceinline__ void take_partials(const GemmArgs& args, long long first, int count, bool add,
                                              float (&result)[kTilesN][4]) {
  constexpr int kChunk = kTilesN < 8 ? kTilesN : 8;
#pragma unroll
  for (int j0 = 0; j0 < kTilesN; j0 += kChunk) {
    for (int s = 0; s < count; ++s) {
      const bool fresh = !add && s == 0;
#pragma unroll
      for (int j = j0; j < j0 + kChunk; ++j) {
        const float4 part = __ldcg(partial(args, first + s, j));
        result[j][0] = fresh ? part.x : result[j][0] + part.x;
        result[j][1] = fresh ? part.y : result[j][1] + part.y;
        result[j][2] = fresh ? part.z : result[j][2] + part.z;
        result[j][3] = fresh ? part.w : result[j][3] + part.w;
      }
    }
  }
}

// Stream-K through the workspace: a segment short of its tile's K end keeps the team's result in its stream
// block's slot and counts itself on the tile's semaphore; it is the first piece of work its block is
// handed after the whole tiles, so it never waits. The segment ending the tile's K, the last its block is
// handed, waits until the tile's other segments have all counted, and adds their partial tiles in slot
// order, so the result does not depend on which finished first. Neither holds up the producer, which goes
// on loading the block's next segment. Returns false where the segment keeps a partial tile.
__device__ __forceinline__ bool sum_stream_segments(const GemmArgs& args, const gf::Segment& segment,
                                                    float (&result)[kTilesN][4]) {
  using Walk = gf::SegmentWalk<kBK>;
  int* semaphore = args.semaphores + segment.tile;
  if (segment.k_end < args.k) {
    keep_partial(args, Walk::stream_block(args), result);
    __threadfence();
    team_sync();
    if (threadIdx.x == kProducerThreads) atomicAdd(semaphore, 1);
    return false;
  }
  const auto sharers = Walk::tile_sharers(args, segment);
  if (threadIdx.x == kProducerThreads) {
    int seen;
    do {
      asm volatile("ld.global.acquire.gpu.b32 %0, [%1];\n" : "=r"(seen) : "l"(semaphore) : "memory");
    } while (seen != sharers.count);
    *semaphore = 0;  // ready for the next launch
  }
  team_sync();
  __threadfence();
  take_partials(args, sharers.first, sharers.count, true, result);
  return true;
}

// Parallel split-K: slice `slice` of a tile keeps the team's result in the tile's slot of the workspace;
// the last slice of the tile to finish sums every slice's in slice order, so the result does not depend on
// which finished last. That block reads its own slice back too: the sum then needs no registers beyond the
// result's and the loads in flight. Returns false in every block but that last one. (epilogue.cuh's
// sum_slices does this for templates whose whole block computes, with __syncthreads.)
__device__ __forceinline__ bool sum_slices_in_team(const GemmArgs& args, int tile, int slice,
                                                   float (&result)[kTilesN][4]) {
  const long long first = static_cast<long long>(tile) * args.split_k;
  keep_partial(args, first + slice, result);
  __threadfence();
  team_sync();
  bool last = false;
  if (threadIdx.x == kProducerThreads) last = atomicAdd(args.semaphores + tile, 1) == args.split_k - 1;
  if (!warp_uniform(team_any(last))) return false;
  __threadfence();
  take_partials(args, first, args.split_k, false, result);
  if (threadIdx.x == kProducerThreads) args.semaphores[tile] = 0;  // ready for the next launch
  return true;
}

// sums = acc (first) or sums + acc, added in FP32, rounding to nearest.
__device__ __forceinline__ void fold(float (&sums)[kTilesN][4], const float (&acc)[kTilesN][4], bool first) {
#pragma unroll
  for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
    for (int r = 0; r < 4; ++r) sums[j][r] = first ? acc[j][r] : sums[j][r] + acc[j][r];
  }
}

// A position in the ring of stages: its stage and the parity of the phase that fills it.
struct RingPosition {
  int stage;
  unsigned phase;

  __device__ __forceinline__ explicit RingPosition(int use)
      : stage(use % STAGES), phase((use / STAGES) & 1) {}
  __device__ __forceinline__ void advance() {
    if (++stage == STAGES) stage = 0, phase ^= 1;
  }
};

__device__ __forceinline__ void consume(const GemmArgs& args, const TensorMaps& maps, const char* smem,
                                        unsigned long long* full, unsigned long long* empty, char* staging) {
  const int consumer = warp_uniform(static_cast<int>(threadIdx.x) / 128) - PRODUCERS;
  const Staging own{staging + consumer * kGroupStagingBytes, 4 + consumer};
  const int team = consumer / kConsumers;
  const int wg_m = consumer % kConsumers % WGM;
  const int wg_n = consumer % kConsumers / WGM;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const Descriptors stage_zero = stage_zero_descriptors(smem, wg_m, wg_n);
  float acc[kTilesN][4];
  float sums[kTilesN][4];        // with FOLD: the FP32 sums of the folded accumulators
  unsigned frags[2][4];          // with RS_A: the first operand's fragments of two K steps
  unsigned fragment_offsets[4];  // with RS_A: where this thread's fragment elements lie in a stage's tile
  if constexpr (RS_A) gf::tf32_fragment_offsets_mn(kBoxBytes, fragment_offsets);
  // HOLD_C: of the last tile that TMA stores, the first round of slices goes at once; the rest stays in the
  // accumulators through the walk to the next work, is packed as that work starts (packed no earlier, its
  // registers are not live beside the accumulators' through the tile walk), and goes a round a stage after
  // the work's first stages are issued (after its main loop where it has too few, or after the last work).
  using Held = gf::HeldSlices<kTilesN, HOLD_C ? C_BUFFERS : 1>;
  Held held;
  bool holding = false;
  int held_row = 0, held_col = 0;
  // Stores the held rounds that due(round) picks, each round a copy of its own, so that the packed registers
  // are indexed by constants.
  const auto store_held = [&](auto due) {
    if constexpr (HOLD_C) {
#pragma unroll
      for (int round = 1; round < Held::kRounds; ++round) {
        if (due(round)) held.store(&maps.c, held_row, held_col, round, own.buffers, own.barrier);
      }
    }
  };
  // A tile's last staged pass of an unaligned 16-bit C, kept in the warp's buffer (store_tile) and written
  // out under the next work's first stage, or after the last work.
  int kept_m0 = -1, kept_n0 = 0;  // the kept pass's tile (its consumer's 64 rows), kept_m0 < 0: none
  const auto write_kept = [&] {
    if constexpr (kKeepLastPass) {
      if (warp_uniform(kept_m0) >= 0) {
        const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
        const gf::PackedRows rows = gf::packed_rows<kTilesN>(static_cast<unsigned short*>(args.c), args.ldc,
                                                             kept_m0 + 16 * warp, kept_n0, args.m, args.n);
        gf::write_packed_pass(kTilesN / gf::PackedRealigned::kTilesPerPass - 1, rows, args.ldc,
                              reinterpret_cast<float*>(own.buffers) + warp * gf::kStagedWarpFloats);
        kept_m0 = -1;
      }
    }
  };
  int use = 0;    // stages consumed so far (by either team), across segments
  int works = 0;  // pieces of work walked so far
  const int total_works = PINGPONG ? block_works(args) : 0;
  for_each_work(args, [&](const Work& work) {
    const gf::Segment& segment = work.segment;
    const int m0 = work.m0;
    const int n0 = work.n0;
    const int stages = stage_count(segment);
    const int index = works++;
    if (index % kTeams != team) {  // the other team's tile: its stages are not ours to read
      use += stages;
      return;
    }
    if (PINGPONG && index > 0) await_turn(team);
    RingPosition position(warp_uniform(use));
    int previous = 0;  // the stage before this one
    const int count = warp_uniform(stages);
    const bool storing_held = HOLD_C && warp_uniform(holding);
    if constexpr (HOLD_C) {
      if (storing_held) held.template pack<Out>(args.alpha, acc);
    }
    for (int kt = 0; kt < count; ++kt, previous = position.stage, position.advance()) {
      const int stage = position.stage;
      gf::mbarrier_wait(full + stage, position.phase);
      if constexpr (RS_A) {
        issue_stage_rs(smem, stage_zero, stage, wg_m, fragment_offsets, kt == 0, acc, frags, [&] {
          if (kt > 0 && lane == 0) leave_stage(empty + previous);
        });
      } else {
        issue_stage(stage_zero, stage, FOLD ? kt % FOLD == 0 : kt == 0, acc);
        // The previous stage's wgmmas have retired once at most this one's are pending: hand it back.
        gf::wgmma_wait<1>();
        if (kt > 0 && lane == 0) leave_stage(empty + previous);
        // A round of the held slices while the tensor cores run this stage.
        store_held([&](int round) { return storing_held && kt == round - 1; });
        if (kt == 0) write_kept();
      }
      if constexpr (FOLD > 0) {
        if ((kt + 1) % FOLD == 0 || kt + 1 == stages) {
          gf::wgmma_wait<0>();
          gf::fence_accumulators(acc);
          fold(sums, acc, kt < FOLD);
        }
      }
    }
    use += stages;
    store_held([&](int round) { return storing_held && round - 1 >= count; });  // a main loop too short
    holding = false;
    write_kept();  // a work without stages
    if (PINGPONG && index + 1 < total_works) pass_turn(team);
    gf::wgmma_wait<0>();
    if constexpr (RS_A) gf::fence_fragment(frags[0]), gf::fence_fragment(frags[1]);
    gf::fence_accumulators(acc);
    if (stages > 0 && lane == 0) leave_stage(empty + previous);
    float(&result)[kTilesN][4] = FOLD ? sums : acc;
    if (stages == 0) {
#pragma unroll
      for (int j = 0; j < kTilesN; ++j) result[j][0] = result[j][1] = result[j][2] = result[j][3] = 0.0f;
    }

    const bool parallel = sums_in_workspace(args);
    if (parallel && !sum_slices_in_team(args, segment.tile, static_cast<int>(blockIdx.z), result)) return;
    // A segment's turn to add into C, where earlier K of its tile is; or with stream-K through the
    // workspace, the sum of its tile's segments.
    bool earlier_in_c = false;
    if (!parallel) {
      if (streams_through_workspace(args) && (segment.k_begin > 0 || segment.k_end < args.k)) {
        if (!sum_stream_segments(args, segment, result)) return;
      } else {
        earlier_in_c = gf::segment_acquire(args, segment);
      }
    }
    const gf::EpilogueMode mode{args.alpha, args.beta, earlier_in_c};
    // A K range of a tile that others add to must be in C before it is released: TMA stores whole sums.
    // And TMA writes a row's last 16 bytes whole: a tile reaching into them stores them by TMA only where
    // they end the row.
    const bool whole = !earlier_in_c && (parallel || segment.k_end >= args.k);
    const bool clean_edge = args.n % (16 / Out::kBytes) == 0 || n0 + (wg_n + 1) * WN <= args.n;
    const bool by_tma = whole && clean_edge && !mode.reads_c();
    if (HOLD_C && by_tma) {
      // The first round now, the rest under the next work's first stages (no segment turns wait on them: a
      // 16-bit C takes none).
      held_row = m0 + wg_m * 64, held_col = n0 + wg_n * WN;
      const int warp = (static_cast<int>(threadIdx.x) % 128) / 32;
      gf::store_round<C_BUFFERS, Held::kSliceCols>(
          &maps.c, held_row, held_col, 0, own.buffers, own.barrier, [&](unsigned buffer, int slice) {
            gf::write_slice<Out, kTilesN>(buffer, slice, warp, mode.alpha, result);
          });
      holding = true;
      return;
    }
    // A tile whose K others wait on is released whole; a whole tile's release waits on nothing.
    const bool waited_on = takes_turns(args) && segment.k_end < args.k;
    if (store_tile(args, &maps.c, m0 + wg_m * 64, n0 + wg_n * WN, mode, by_tma, result, own,
                   kKeepLastPass && !waited_on)) {
      kept_m0 = m0 + wg_m * 64, kept_n0 = n0 + wg_n * WN;
    }
    if (takes_turns(args)) gf::segment_release(args, segment);
  });
  write_kept();
  if constexpr (HOLD_C) {
    if (warp_uniform(holding)) {
      held.template pack<Out>(args.alpha, acc);
      store_held([](int) { return true; });
    }
  }
  if (kTmaStoreC && threadIdx.x % 128 == 0) gf::bulk_wait_all();  // the slice buffers outlive the stores
}

// Runs body(frame) on the problem the block computes: the call's; with SWAP its transpose C^T = B^T A^T
// (A and B, their leading dimensions, M and N exchanged; C stays the call's and is stored transposed).
template <typename Body>
__device__ __forceinline__ void in_frame(const GemmArgs& args, Body&& body) {
  if constexpr (SWAP) {
    GemmArgs transposed = args;
    transposed.a = args.b, transposed.b = args.a;
    transposed.lda = args.ldb, transposed.ldb = args.lda;
    transposed.m = args.n, transposed.n = args.m;
    body(static_cast<const GemmArgs&>(transposed));
  } else {
    body(args);
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(kThreads, 1)
    gemm_tma(const __grid_constant__ GemmArgs args, const __grid_constant__ TensorMaps maps) {
  extern __shared__ uint4 smem_vec[];
  // The 128-byte swizzle is a function of the address: the tiles start on a 1024-byte boundary.
  const unsigned shared = gf::shared_address(smem_vec);
  char* smem = reinterpret_cast<char*>(smem_vec) + ((1024 - (shared & 1023)) & 1023);
  char* staging = smem + STAGES * kStageBytes;  // 1024-byte aligned, as the swizzled slices need
  unsigned long long* full = reinterpret_cast<unsigned long long*>(staging + kStagingBytes);
  unsigned long long* empty = full + STAGES;
  if (threadIdx.x == 0) {
    if (blockIdx.x == 0 && blockIdx.z == 0) gf::require_dynamic_smem(kSmemBytes);
    if (TMA_A) gf::prefetch_tensor_map(&maps.a);
    if (TMA_B) gf::prefetch_tensor_map(&maps.b);
    if (kTmaStoreC) gf::prefetch_tensor_map(&maps.c);
    for (int s = 0; s < STAGES; ++s) {
      gf::mbarrier_init(full + s, kAllTma ? 1 : kProducerThreads);  // the producers' arrivals, TMA's bytes
      gf::mbarrier_init(empty + s, 4 * kConsumers * CLUSTER);       // the reading team's warps, cluster-wide
    }
    gf::mbarrier_init_fence();
  }
  // The barriers must be initialized before any block of the cluster arrives on them or copies into them.
  if constexpr (CLUSTER > 1) {
    gf::cluster_sync();
  } else {
    __syncthreads();
  }
  // Launched to overlap the end of the pass splitting its operands (GemmKernel::launch), the kernel sets
  // up its barriers meanwhile and reads nothing before the pass is done.
  gf::wait_for_previous_grid();
  in_frame(args, [&](const GemmArgs& frame) {
    if (threadIdx.x < kProducerThreads) {
      if constexpr (kConsumerGroups > 1) gf::release_registers<kProducerRegs>();
      produce(frame, maps, smem, full, empty);
    } else {
      if constexpr (kConsumerGroups > 1) gf::claim_registers<CONSUMER_REGS>();
      consume(frame, maps, smem, full, empty, staging);
    }
  });
  // A block's shared memory and barriers must outlive the other blocks' copies and arrivals into them.
  if constexpr (CLUSTER > 1) gf::cluster_sync();
}
