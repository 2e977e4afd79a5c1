// A block's work as a walk that hands out its segments (gemm_common.cuh's Segment) one at a time, for
// kernels whose blocks may be persistent: the loop over them is the one call site of its body, which is
// then inlined once. (A loop per kind of launch, each inlining the body, doubled gemm_tma's code and more
// than doubled its compile time.) Where K is split the segment is the block's slice; otherwise the whole
// tiles blockIdx.x, blockIdx.x + gridDim.x, ... (one unless the launch is persistent). With stream-K the
// whole tiles come first, then the stream blocks' shares of the other tiles' K iterations, handed out as
// gemm_common.cuh's for_each_segment does, from the last segment to the first. The launch is one block per
// whole tile and then the stream blocks, or (persistent, fewer blocks than that) a wave of blocks walking
// the whole tiles in turn, a whole number of waves, before the first stream_blocks of them take their
// shares.
#ifndef GEMMFORGE_SEGMENT_WALK_CUH
#define GEMMFORGE_SEGMENT_WALK_CUH

#include "gemm_common.cuh"

namespace gf {

template <int kGranule>
class SegmentWalk {
 public:
  __device__ __forceinline__ explicit SegmentWalk(const GemmArgs& args)
      : k_(args.k), whole_tiles_(args.whole_tiles) {
    const int block = static_cast<int>(blockIdx.x);
    const bool stream = args.stream_blocks > 0;
    tile_ = block;
    stride_ = args.split_k > 1 || stream ? args.tiles : static_cast<int>(gridDim.x);  // one piece a block
    tiles_end_ = stream ? args.whole_tiles : args.tiles;
    const Segment slice = stream ? Segment{block, 0, args.k} : slice_segment(args);
    k_begin_ = slice.k_begin;
    k_end_ = slice.k_end;
    if (!stream) return;
    const bool persistent = static_cast<int>(gridDim.x) < args.whole_tiles + args.stream_blocks;
    if (persistent) stride_ = static_cast<int>(gridDim.x);
    const int stream_block = persistent ? block : block - args.whole_tiles;
    if (stream_block < 0 || stream_block >= args.stream_blocks) return;
    // The stream block's share of the streamed tiles' iterations, kGranule of K each.
    streaming_ = true;
    iterations_ = (args.k + kGranule - 1) / kGranule;
    const long long total = static_cast<long long>(args.tiles - args.whole_tiles) * iterations_;
    const long long per_block = (total + args.stream_blocks - 1) / args.stream_blocks;
    first_ = stream_block * per_block;
    end_ = first_ + per_block < total ? first_ + per_block : total;
  }

  // This block's index among the stream blocks (out of [0, stream_blocks) where it streams nothing).
  __device__ __forceinline__ static int stream_block(const GemmArgs& args) {
    const int block = static_cast<int>(blockIdx.x);
    return persistent_launch(args) ? block : block - args.whole_tiles;
  }

  // The stream blocks holding the earlier K iterations of the streamed tile whose last ones `tail` holds (a
  // segment of this block ending its tile's K but not starting it): the `count` blocks just before this
  // one, in K order, each holding a whole share of the tile but the first. The tail is the last segment its
  // block is handed, and each of them holds one segment short of a tile's K end at most (the first it is
  // handed), so a stream block's index names a partial tile's slot.
  struct Sharers {
    int first;
    int count;
  };
  __device__ __forceinline__ static Sharers tile_sharers(const GemmArgs& args, const Segment& tail) {
    const long long per_block = share_iterations(args);
    const int before = tail.k_begin / kGranule;  // the tile's iterations in earlier shares
    const int count =
        per_block >= before ? 1 : (before + static_cast<int>(per_block) - 1) / static_cast<int>(per_block);
    return Sharers{stream_block(args) - count, count};
  }

  // The next segment into `segment`; false once the block's work is done.
  __device__ __forceinline__ bool next(Segment& segment) {
    if (tile_ < tiles_end_) {
      segment = Segment{tile_, k_begin_, k_end_};
      tile_ += stride_;
      return true;
    }
    if (!streaming_ || end_ <= first_) return false;
    const int local_tile = static_cast<int>((end_ - 1) / iterations_);
    const long long tile_start = static_cast<long long>(local_tile) * iterations_;
    const long long begin = first_ > tile_start ? first_ : tile_start;
    segment = Segment{whole_tiles_ + local_tile, static_cast<int>(begin - tile_start) * kGranule,
                      imin(k_, static_cast<int>(end_ - tile_start) * kGranule)};
    end_ = begin;
    return true;
  }

 private:
  // One wave of blocks walking the whole tiles, rather than a block per whole tile and then the stream
  // blocks. (The constructor spells these out again: through the helpers, ptxas spilled registers of
  // 256-column consumers.)
  __device__ __forceinline__ static bool persistent_launch(const GemmArgs& args) {
    return static_cast<int>(gridDim.x) < args.whole_tiles + args.stream_blocks;
  }
  // K iterations of the streamed tiles per stream block (the last may hold fewer), as the constructor
  // shares them out.
  __device__ __forceinline__ static long long share_iterations(const GemmArgs& args) {
    const long long total =
        static_cast<long long>(args.tiles - args.whole_tiles) * ((args.k + kGranule - 1) / kGranule);
    return (total + args.stream_blocks - 1) / args.stream_blocks;
  }

  int k_;
  int whole_tiles_;
  int tile_;       // the next whole tile or slice
  int stride_;     // from one to the next
  int tiles_end_;  // past the last
  int k_begin_;    // their K range
  int k_end_;
  bool streaming_ = false;
  int iterations_ = 0;   // per streamed tile
  long long first_ = 0;  // the stream block's iterations not yet handed out: [first_, end_)
  long long end_ = 0;
};

}  // namespace gf

#endif  // GEMMFORGE_SEGMENT_WALK_CUH
