// The epilogue of a wgmma warpgroup through shared memory (sm_90a templates, NVRTC only): each warp passes
// its 16 rows of accumulators through a small FP32 buffer of its own, 32 columns at a time, and writes them
// out row by row, its lanes on consecutive columns. A row of C is then written in the widest vectors its
// alignment allows (16 bytes where C's rows are 16-byte aligned); store_staged_realigned writes rows that
// are not (an odd ldc of a 16-bit C) in 16-byte vectors too, from each row's first 16-byte boundary on,
// instead of one element per lane; where the tile does not read C, a 16-bit C is staged already rounded to
// its type, each row shifted to C's 16-byte boundaries, 64 columns a pass (store_packed_realigned).
//
// Only a warp's own lanes share its buffer, so __syncwarp is the only synchronization.
#ifndef GEMMFORGE_STAGED_STORE_CUH
#define GEMMFORGE_STAGED_STORE_CUH

#include "alignment.cuh"
#include "epilogue.cuh"

namespace gf {

constexpr int kStagedRows = 16;  // a warp's rows of a wgmma accumulator
constexpr int kStagedCols = 32;  // columns passed through the buffer at a time
// Floats per buffer row: 8 past the 32 columns put the eight rows a fragment store touches at once on
// distinct banks, and keep rows 16-byte aligned for the vector reads.
constexpr int kStagedPitch = kStagedCols + 8;
constexpr int kStagedWarpFloats = kStagedRows * kStagedPitch;  // one warp's buffer

// kVec elements of C as words: one C element per word for FP32, two per word for a 16-bit C.
template <typename Out, int kVec>
struct StagedVector {
  static constexpr int kWords = kVec * Out::kBytes / 4;
  static_assert(kWords == 1 || kWords == 2 || kWords == 4, "a vector of 4, 8 or 16 bytes");

  template <typename Storage>
  __device__ __forceinline__ static void load(const Storage* p, bool bypass_l1, float (&out)[kVec]) {
    unsigned words[kWords];
    if constexpr (kWords == 4) {
      const uint4* v = reinterpret_cast<const uint4*>(p);
      const uint4 w = bypass_l1 ? __ldcg(v) : *v;
      words[0] = w.x, words[1] = w.y, words[2] = w.z, words[3] = w.w;
    } else if constexpr (kWords == 2) {
      const uint2* v = reinterpret_cast<const uint2*>(p);
      const uint2 w = bypass_l1 ? __ldcg(v) : *v;
      words[0] = w.x, words[1] = w.y;
    } else {
      const unsigned* v = reinterpret_cast<const unsigned*>(p);
      words[0] = bypass_l1 ? __ldcg(v) : *v;
    }
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      if constexpr (Out::kBytes == 4) {
        out[w] = __uint_as_float(words[w]);
      } else {
        out[2 * w] = Out::to_float(static_cast<unsigned short>(words[w] & 0xffffu));
        out[2 * w + 1] = Out::to_float(static_cast<unsigned short>(words[w] >> 16));
      }
    }
  }

  template <typename Storage>
  __device__ __forceinline__ static void store(Storage* p, const float (&values)[kVec]) {
    unsigned words[kWords];
#pragma unroll
    for (int w = 0; w < kWords; ++w) {
      if constexpr (Out::kBytes == 4) {
        words[w] = __float_as_uint(values[w]);
      } else {
        words[w] = Out::pack(values[2 * w], values[2 * w + 1]);
      }
    }
    if constexpr (kWords == 4) {
      *reinterpret_cast<uint4*>(p) = make_uint4(words[0], words[1], words[2], words[3]);
    } else if constexpr (kWords == 2) {
      *reinterpret_cast<uint2*>(p) = make_uint2(words[0], words[1]);
    } else {
      *reinterpret_cast<unsigned*>(p) = words[0];
    }
  }
};

// kVec consecutive floats of a warp's staging buffer, in 16-byte (or 8-byte) shared loads where kVec allows.
template <int kVec>
__device__ __forceinline__ void read_staged(const float* src, float (&values)[kVec]) {
#pragma unroll
  for (int i = 0; i < kVec; i += (kVec >= 4 ? 4 : kVec)) {
    if constexpr (kVec >= 4) {
      const float4 v = *reinterpret_cast<const float4*>(src + i);
      values[i] = v.x, values[i + 1] = v.y, values[i + 2] = v.z, values[i + 3] = v.w;
    } else if constexpr (kVec == 2) {
      const float2 v = *reinterpret_cast<const float2*>(src);
      values[0] = v.x, values[1] = v.y;
    } else {
      values[0] = src[0];
    }
  }
}

// Writes columns n .. n + kVec - 1 of a row of C (n_valid columns in the matrix): alpha * acc + beta * C, or
// alpha * acc + C when an earlier K range of the tile is already in C. beta == 0 never reads C. One access
// for the whole vector where it lies inside the matrix and kVec elements make 4 bytes or more (C's rows are
// then aligned to them); one per element otherwise.
template <typename Out, int kVec>
__device__ __forceinline__ void write_vector(typename OutputAccess<Out>::Storage* row, int n, int n_valid,
                                             const EpilogueMode& mode, const float (&acc)[kVec]) {
  using Access = OutputAccess<Out>;
  const bool reads = mode.reads_c();
  const float scale = mode.accumulate ? 1.0f : mode.beta;
  float out[kVec];
#pragma unroll
  for (int i = 0; i < kVec; ++i) out[i] = mode.alpha * acc[i];
  if constexpr (kVec * Out::kBytes >= 4) {
    if (n + kVec <= n_valid) {
      if (reads) {
        float old[kVec];
        StagedVector<Out, kVec>::load(row + n, mode.accumulate, old);
#pragma unroll
        for (int i = 0; i < kVec; ++i) out[i] += scale * old[i];
      }
      StagedVector<Out, kVec>::store(row + n, out);
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) {
    if (n + i < n_valid) {
      if (reads) out[i] += scale * Access::load(row + n + i, mode.accumulate);
      Access::store(row + n + i, out[i]);
    }
  }
}

// Puts accumulator tiles first .. first + count - 1 (8 columns each) of a warp's m16n8 fragments into its
// buffer as 16 rows by 8 count columns: lane 4 g + t holds columns 8 j + 2 t and 8 j + 2 t + 1 of rows g
// (acc[j][0..1]) and g + 8 (acc[j][2..3]).
template <int kTilesN>
__device__ __forceinline__ void stage_fragments(const float (&acc)[kTilesN][4], int first, int count,
                                                float* buffer) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;
  const int t = lane % 4;
#pragma unroll
  for (int j = 0; j < count; ++j) {
    const float(&tile)[4] = acc[first + j];
    *reinterpret_cast<float2*>(buffer + g * kStagedPitch + 8 * j + 2 * t) = make_float2(tile[0], tile[1]);
    *reinterpret_cast<float2*>(buffer + (g + 8) * kStagedPitch + 8 * j + 2 * t) =
        make_float2(tile[2], tile[3]);
  }
}

// Stores a warp's share of a wgmma accumulator, rows row0 .. row0 + 15 and columns col0 .. col0 + 8 kTilesN
// - 1 of C (m x n, rows ldc apart), through `buffer` (kStagedWarpFloats, 16-byte aligned, this warp's own).
// The accumulator is in the m16n8 fragment layout (stage_fragments). kVec: elements per access of C, which
// C's alignment allows.
template <typename Out, int kVec, int kTilesN>
__device__ __forceinline__ void store_staged(typename OutputAccess<Out>::Storage* C, long long ldc, int row0,
                                             int col0, int m, int n, const EpilogueMode& mode,
                                             const float (&acc)[kTilesN][4], float* buffer) {
  constexpr int kTilesPerPass = kStagedCols / 8;
  static_assert(kTilesN % kTilesPerPass == 0, "a warp's columns come in passes of 32");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4 || kVec == 8, "1, 2, 4 or 8 elements per access");
  constexpr int kLanesPerRow = kStagedCols / kVec;
  constexpr int kRowsPerStep = 32 / kLanesPerRow;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int lane_row = lane / kLanesPerRow;
  const int lane_col = lane % kLanesPerRow * kVec;
#pragma unroll
  for (int pass = 0; pass < kTilesN / kTilesPerPass; ++pass) {
    __syncwarp();  // the lanes are done reading the previous pass
    stage_fragments(acc, pass * kTilesPerPass, kTilesPerPass, buffer);
    __syncwarp();
    const int col = col0 + pass * kStagedCols + lane_col;
#pragma unroll 4
    for (int step = 0; step < kStagedRows / kRowsPerStep; ++step) {
      const int r = step * kRowsPerStep + lane_row;
      if (row0 + r >= m) break;
      float values[kVec];
      read_staged<kVec>(buffer + r * kStagedPitch + lane_col, values);
      write_vector<Out, kVec>(C + static_cast<long long>(row0 + r) * ldc, col, n, mode, values);
    }
  }
}

// Stores the low 16 bits of `word` at shared-memory address `address`, from the 32-bit register as it is.
__device__ __forceinline__ void store_shared_u16(unsigned address, unsigned word) {
  asm volatile("st.shared.u16 [%0], %1;\n" ::"r"(address), "r"(word) : "memory");
}

// A 16-byte store of `value` to global memory at `p` (16-byte aligned), in one instruction: from a uint4 held
// in registers the compiler may store four words instead.
__device__ __forceinline__ void store_global_16(void* p, const uint4& value) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "r"(value.x), "r"(value.y),
               "r"(value.z), "r"(value.w)
               : "memory");
}

// The passes of store_packed_realigned: 64 columns of a warp's 16 rows each, staged shifted, read in vectors.
struct PackedRealigned {
  static constexpr int kPassCols = 64;
  static constexpr int kTilesPerPass = kPassCols / 8;
  static constexpr int kChunk = 8;                         // elements of a 16-byte vector
  static constexpr int kPitch = 2 * kStagedPitch;          // elements per buffer row: a 16-byte multiple
  static constexpr int kLanesPerRow = kPassCols / kChunk;  // a pass's vectors of a row
  static constexpr int kRowsPerStep = 32 / kLanesPerRow;
  static constexpr int kSteps = kStagedRows / kRowsPerStep;
  static_assert(kPassCols + 2 * kChunk <= kPitch, "a pass, the next one's first 8 and a shift fit a row");
};

// What a lane needs to write a staged pass out: its row of step 0 (at the warp's first column; a step adds
// kRowsPerStep rows), that row's shift, its rows inside the matrix, and the warp's columns inside it.
struct PackedRows {
  unsigned short* first_row;
  unsigned first_shift;
  int rows_left;
  int width;
};

// A lane's PackedRows for the warp's tile at rows row0 .. row0 + 15, columns col0 .. col0 + 8 kTilesN - 1.
template <int kTilesN>
__device__ __forceinline__ PackedRows packed_rows(unsigned short* C, long long ldc, int row0, int col0, int m,
                                                  int n) {
  using P = PackedRealigned;
  const int lane_row = static_cast<int>(threadIdx.x) % 32 / P::kLanesPerRow;
  PackedRows rows;
  rows.first_row = C + static_cast<long long>(row0 + lane_row) * ldc + col0;
  rows.first_shift = static_cast<unsigned>(elements_past_16_bytes(rows.first_row));
  rows.rows_left = m - row0 - lane_row;     // the lane's rows inside the matrix, kRowsPerStep apart
  rows.width = min(8 * kTilesN, n - col0);  // columns of the warp's tile inside the matrix
  return rows;
}

// Writes pass `pass` of a warp's tile, staged in `buffer`, out to C (rows ldc apart): a lane one 16-byte
// vector of a row per step, from the row's first 16-byte boundary on. A lane reads all of its steps' vectors
// (and, in the first pass, the elements before its rows' first boundaries) from the buffer before it
// stores any: C's pointer may alias the buffer as far as the compiler knows, so a read after a store could
// not issue before it, and each store would wait for its own read.
__device__ __forceinline__ void write_packed_pass(int pass, const PackedRows& rows, long long ldc,
                                                  const float* buffer) {
  using P = PackedRealigned;
  const unsigned short* staged = reinterpret_cast<const unsigned short*>(buffer);
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int lane_row = lane / P::kLanesPerRow;
  const int vector = lane % P::kLanesPerRow;
  const long long step_elements = P::kRowsPerStep * ldc;  // ldc > 0
  const unsigned step_shift = static_cast<unsigned>(step_elements % P::kChunk);
  // Step s's row, its elements before its first boundary (lead), and where the lane's data lie in the
  // buffer: buffer element e of a row holds the pass's column e - (kChunk - lead).
  const auto lead_of = [&](int step) {
    return P::kChunk - static_cast<int>((rows.first_shift + step * step_shift) % P::kChunk);
  };
  const auto staged_row = [&](int step) { return staged + (step * P::kRowsPerStep + lane_row) * P::kPitch; };
  uint4 values[P::kSteps];
  unsigned short heads[P::kSteps];
#pragma unroll
  for (int step = 0; step < P::kSteps; ++step) {
    values[step] = *reinterpret_cast<const uint4*>(staged_row(step) + P::kChunk + P::kChunk * vector);
    if (pass == 0) heads[step] = staged_row(step)[P::kChunk - lead_of(step) + vector];
  }
#pragma unroll
  for (int step = 0; step < P::kSteps; ++step) {
    if (step * P::kRowsPerStep >= rows.rows_left) break;
    unsigned short* row = rows.first_row + step * step_elements;
    const int lead = lead_of(step);
    // Elements 0 .. lead - 1 of the row precede its first boundary: one a lane.
    if (pass == 0 && vector < lead && vector < rows.width) row[vector] = heads[step];
    const int col = pass * P::kPassCols + lead + P::kChunk * vector;  // the lane's vector
    if (col + P::kChunk <= rows.width) {
      store_global_16(row + col, values[step]);
    } else {
      const unsigned short* v = staged_row(step) + P::kChunk + P::kChunk * vector;
#pragma unroll
      for (int i = 0; i < P::kChunk; ++i) {
        if (col + i < rows.width) row[col + i] = v[i];
      }
    }
  }
}

// store_staged_realigned for a 16-bit C where the tile does not read C (beta = 0, whole sums), in few
// instructions: a tile's epilogue runs while the tensor cores wait, and storing the unaligned C of
// 4103x4105x4104 BF16 nn element-wise from the buffer took about 1,240 instructions per warp and tile. The
// lanes scale the accumulators and round them to C's type as they stage them, and put each row into the
// buffer shifted by that row's own offset from a 16-byte boundary of C: a lane then takes each 16-byte vector
// of C from the buffer by one aligned load. A pass stages 64 columns and the next pass's first 8, a row at
// most 7 elements into its 80. A lane's rows are kRowsPerStep rows of C apart: their addresses and boundaries
// follow from its first row's by adding the step. The row's elements before its first 16-byte boundary, and
// those of a vector reaching past the warp's or the matrix's last column, go one by one. With `keep_last`
// the last pass is staged and left in the buffer: the caller writes it out later (write_packed_pass), once
// the tensor cores have the next work.
template <typename Out, int kTilesN>
__device__ __forceinline__ void store_packed_realigned(unsigned short* C, long long ldc, int row0, int col0,
                                                       int m, int n, float alpha,
                                                       const float (&acc)[kTilesN][4], float* buffer,
                                                       bool keep_last) {
  using P = PackedRealigned;
  constexpr int kPasses = kTilesN / P::kTilesPerPass;
  static_assert(Out::kBytes == 2, "16-bit values");
  static_assert(kTilesN % P::kTilesPerPass == 0, "a warp's columns come in passes of 64");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const auto row_of = [&](int r) { return C + static_cast<long long>(row0 + r) * ldc + col0; };
  // Where the lane stages its columns 2 t and 2 t + 1 of rows g and g + 8, each at its row's shift (shared
  // addresses, in bytes).
  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(buffer));
  const unsigned upper = base + 2 * (g * P::kPitch + 2 * t + elements_past_16_bytes(row_of(g)));
  const unsigned lower = base + 2 * ((g + 8) * P::kPitch + 2 * t + elements_past_16_bytes(row_of(g + 8)));
  const PackedRows rows = packed_rows<kTilesN>(C, ldc, row0, col0, m, n);
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    __syncwarp();  // the lanes are done reading the previous pass
#pragma unroll
    for (int j = 0; j < P::kTilesPerPass + (pass + 1 < kPasses ? 1 : 0); ++j) {
      const float(&tile)[4] = acc[pass * P::kTilesPerPass + j];
      const unsigned top = Out::pack(alpha * tile[0], alpha * tile[1]);
      const unsigned bottom = Out::pack(alpha * tile[2], alpha * tile[3]);
      store_shared_u16(upper + 16 * j, top);
      store_shared_u16(upper + 16 * j + 2, top >> 16);
      store_shared_u16(lower + 16 * j, bottom);
      store_shared_u16(lower + 16 * j + 2, bottom >> 16);
    }
    __syncwarp();
    if (pass + 1 == kPasses && keep_last) break;
    write_packed_pass(pass, rows, ldc, buffer);
  }
}

// The same for a C whose rows are not 16-byte aligned (an odd ldc of a 16-bit C, say), where store_staged
// would write single elements: each row goes out in 16-byte vectors from the first 16-byte boundary its
// address reaches, read from the buffer at that row's own offset, and only the elements before that
// boundary (in the first pass) and those of a vector reaching past the warp's or the matrix's last column
// in single accesses. A vector may straddle two passes: each pass also puts the next one's first 8
// columns into the buffer's 8 spare columns. Where ldc is odd the rows a load instruction reads start at
// distinct offsets within their 16 bytes, which spreads its lanes over the banks.
template <typename Out, int kTilesN>
__device__ __forceinline__ void store_staged_realigned(typename OutputAccess<Out>::Storage* C, long long ldc,
                                                       int row0, int col0, int m, int n,
                                                       const EpilogueMode& mode,
                                                       const float (&acc)[kTilesN][4], float* buffer) {
  using Storage = typename OutputAccess<Out>::Storage;
  constexpr int kChunk = 16 / Out::kBytes;  // elements of a 16-byte vector
  constexpr int kTilesPerPass = kStagedCols / 8;
  constexpr int kPasses = kTilesN / kTilesPerPass;
  constexpr int kLanesPerRow = kStagedCols / kChunk;  // a pass's vectors of a row
  constexpr int kRowsPerStep = 32 / kLanesPerRow;
  constexpr int kSteps = kStagedRows / kRowsPerStep;
  // A 16-bit C's two steps a pass unrolled; an FP32 C's four, unrolled, spill where the consumers have 128
  // registers.
  constexpr int kUnrolledSteps = Out::kBytes == 2 ? kSteps : 1;
  static_assert(kTilesN % kTilesPerPass == 0, "a warp's columns come in passes of 32");
  static_assert(kStagedPitch - kStagedCols >= 8 && kChunk <= 8, "spare columns for the next pass's first 8");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int lane_row = lane / kLanesPerRow;
  const int lane_vector = lane % kLanesPerRow;
  const int width = min(8 * kTilesN, n - col0);  // columns of the warp's tile inside the matrix
#pragma unroll
  for (int pass = 0; pass < kPasses; ++pass) {
    __syncwarp();  // the lanes are done reading the previous pass
    // The pass's tiles and the next pass's first, in the spare columns.
    stage_fragments(acc, pass * kTilesPerPass, kTilesPerPass + (pass + 1 < kPasses ? 1 : 0), buffer);
    __syncwarp();
#pragma unroll kUnrolledSteps
    for (int step = 0; step < kSteps; ++step) {
      const int r = step * kRowsPerStep + lane_row;
      if (row0 + r >= m) continue;
      Storage* row = C + static_cast<long long>(row0 + r) * ldc + col0;
      const float* staged = buffer + r * kStagedPitch;
      // The row's elements before its first 16-byte boundary.
      const int past = elements_past_16_bytes(row);
      const int lead = past == 0 ? 0 : kChunk - past;
      if (pass == 0) {
#pragma unroll
        for (int i = lane_vector; i < kChunk; i += kLanesPerRow) {
          const float value[1] = {staged[i]};
          if (i < lead) write_vector<Out, 1>(row, i, width, mode, value);
        }
      }
      const int first = lead + kChunk * lane_vector;  // the lane's vector, from the pass's first column
      float values[kChunk];
#pragma unroll
      for (int i = 0; i < kChunk; ++i) values[i] = staged[first + i];
      write_vector<Out, kChunk>(row, pass * kStagedCols + first, width, mode, values);
    }
  }
}

// The same for an accumulator computed transposed (C^T = B^T A^T): its rows are C's columns col0 ..
// col0 + 15 and its columns C's rows row0 .. row0 + 8 kTilesN - 1. Each pass puts 32 accumulator columns
// into the buffer as 32 rows of C by 16 columns (rows of 20 floats: the fragment's scattered stores then
// fall on distinct banks), and the lanes write them out along C's rows.
template <typename Out, int kVec, int kTilesN>
__device__ __forceinline__ void store_staged_transposed(typename OutputAccess<Out>::Storage* C, long long ldc,
                                                        int row0, int col0, int m, int n,
                                                        const EpilogueMode& mode,
                                                        const float (&acc)[kTilesN][4], float* buffer) {
  constexpr int kRows = 32;   // C rows per pass: accumulator columns
  constexpr int kCols = 16;   // C columns: the warp's accumulator rows
  constexpr int kPitch = 20;  // floats per buffer row
  constexpr int kTilesPerPass = kRows / 8;
  static_assert(kRows * kPitch <= kStagedWarpFloats, "a pass fits the warp's buffer");
  static_assert(kTilesN % kTilesPerPass == 0, "a warp's columns come in passes of 32");
  static_assert(kVec == 1 || kVec == 2 || kVec == 4, "1, 2 or 4 elements per access");
  constexpr int kLanesPerRow = kCols / kVec;
  constexpr int kRowsPerStep = 32 / kLanesPerRow;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int lane_row = lane / kLanesPerRow;
  const int lane_col = lane % kLanesPerRow * kVec;
#pragma unroll
  for (int pass = 0; pass < kTilesN / kTilesPerPass; ++pass) {
    __syncwarp();
#pragma unroll
    for (int j = 0; j < kTilesPerPass; ++j) {
      const float(&tile)[4] = acc[pass * kTilesPerPass + j];
      float* column = buffer + (8 * j + 2 * t) * kPitch + g;
      column[0] = tile[0];
      column[kPitch] = tile[1];
      column[8] = tile[2];
      column[kPitch + 8] = tile[3];
    }
    __syncwarp();
#pragma unroll 4
    for (int step = 0; step < kRows / kRowsPerStep; ++step) {
      const int r = step * kRowsPerStep + lane_row;
      const int row = row0 + pass * kRows + r;
      if (row >= m) break;
      float values[kVec];
      read_staged<kVec>(buffer + r * kPitch + lane_col, values);
      write_vector<Out, kVec>(C + static_cast<long long>(row) * ldc, col0 + lane_col, n, mode, values);
    }
  }
}

}  // namespace gf

#endif  // GEMMFORGE_STAGED_STORE_CUH
