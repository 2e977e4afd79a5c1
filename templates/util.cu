// Utility kernels for verification, benchmarking and quick returns: random fills, poisoning, error
// norms against a reference, checks that padding was left alone, and C = beta * C.
#include "gemm_args.cuh"
#include "row_loads.cuh"

namespace {

// A counter-based generator (splitmix64): element i of a fill depends only on (seed, i), so fills are
// reproducible whatever the launch shape.
__device__ __forceinline__ unsigned long long mix(unsigned long long x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

// Fills a rows x cols matrix (row stride ld) with uniform values in [lo, hi).
extern "C" __global__ void gf_fill_uniform(float* data, long long rows, long long cols, long long ld,
                                           unsigned long long seed, float lo, float hi) {
  const long long count = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / cols;
    const long long c = i % cols;
    const float unit = (mix(seed ^ mix(i)) >> 40) * (1.0f / 16777216.0f);
    data[r * ld + c] = lo + (hi - lo) * unit;
  }
}

// Writes one bit pattern (e.g. a NaN) over `count` consecutive floats.
extern "C" __global__ void gf_fill_bits(unsigned* data, long long count, unsigned bits) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    data[i] = bits;
  }
}

// Accumulates sum((c - ref)^2), sum(ref^2) and the number of non-finite c over a rows x cols matrix.
// sums[0], sums[1] are doubles, counts[0] an unsigned long long; all must start at zero.
extern "C" __global__ void gf_compare(const float* c, long long ldc, const float* ref, long long ldr,
                                      long long rows, long long cols, double* sums,
                                      unsigned long long* counts) {
  double diff2 = 0.0;
  double ref2 = 0.0;
  unsigned long long bad = 0;
  const long long count = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / cols;
    const long long col = i % cols;
    const float x = c[r * ldc + col];
    const float y = ref[r * ldr + col];
    if (!isfinite(x)) ++bad;
    const double d = (double)x - (double)y;
    diff2 += d * d;
    ref2 += (double)y * (double)y;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    diff2 += __shfl_down_sync(0xffffffffu, diff2, offset);
    ref2 += __shfl_down_sync(0xffffffffu, ref2, offset);
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], diff2);
    atomicAdd(&sums[1], ref2);
    atomicAdd(&counts[0], bad);
  }
}

// Counts elements of the padding columns [cols, ld) of a rows x ld buffer that no longer hold `bits`.
extern "C" __global__ void gf_count_changed_padding(const unsigned* data, long long rows, long long cols,
                                                    long long ld, unsigned bits,
                                                    unsigned long long* changed) {
  const long long pad = ld - cols;
  const long long count = rows * pad;
  unsigned long long local = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / pad;
    const long long col = cols + i % pad;
    if (data[r * ld + col] != bits) ++local;
  }
  if (local != 0) atomicAdd(changed, local);
}

// C = beta * C over a rows x cols matrix; beta == 0 writes zeros without reading C (NaN-safe).
extern "C" __global__ void gf_scale(float* c, long long rows, long long cols, long long ldc, float beta) {
  const long long count = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    float* p = c + (i / cols) * ldc + i % cols;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Typed variants for 16-bit and mixed GEMMs. `type` is gemmforge's Dtype: 0 f32, 1 tf32 (FP32 storage),
// 2 f16, 3 bf16.
namespace {

__device__ __forceinline__ float load_as_float(const void* data, long long i, int type) {
  if (type == 2) {
    float out;
    asm("cvt.f32.f16 %0, %1;\n" : "=f"(out) : "h"(static_cast<const unsigned short*>(data)[i]));
    return out;
  }
  if (type == 3)
    return __uint_as_float(static_cast<unsigned>(static_cast<const unsigned short*>(data)[i]) << 16);
  return static_cast<const float*>(data)[i];
}

}  // namespace

// Converts `count` consecutive floats into `type` (rounding to nearest even), `dst` holding count elements.
extern "C" __global__ void gf_convert_floats(const float* src, void* dst, long long count, int type) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const float x = src[i];
    unsigned short bits;
    if (type == 2) {
      asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(bits) : "f"(x));
      static_cast<unsigned short*>(dst)[i] = bits;
    } else if (type == 3) {
      asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(x));
      static_cast<unsigned short*>(dst)[i] = bits;
    } else {
      static_cast<float*>(dst)[i] = x;
    }
  }
}

// Writes one 16-bit pattern over `count` consecutive 16-bit elements.
extern "C" __global__ void gf_fill_bits16(unsigned short* data, long long count, unsigned bits) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    data[i] = static_cast<unsigned short>(bits);
  }
}

// gf_compare for C and the reference of any type (read as floats).
extern "C" __global__ void gf_compare_typed(const void* c, long long ldc, const void* ref, long long ldr,
                                            long long rows, long long cols, int type, double* sums,
                                            unsigned long long* counts) {
  double diff2 = 0.0;
  double ref2 = 0.0;
  unsigned long long bad = 0;
  const long long count = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    const long long r = i / cols;
    const long long col = i % cols;
    const float x = load_as_float(c, r * ldc + col, type);
    const float y = load_as_float(ref, r * ldr + col, type);
    if (!isfinite(x)) ++bad;
    const double d = (double)x - (double)y;
    diff2 += d * d;
    ref2 += (double)y * (double)y;
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    diff2 += __shfl_down_sync(0xffffffffu, diff2, offset);
    ref2 += __shfl_down_sync(0xffffffffu, ref2, offset);
    bad += __shfl_down_sync(0xffffffffu, bad, offset);
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&sums[0], diff2);
    atomicAdd(&sums[1], ref2);
    atomicAdd(&counts[0], bad);
  }
}

// gf_count_changed_padding for 16-bit elements.
extern "C" __global__ void gf_count_changed_padding16(const unsigned short* data, long long rows,
                                                      long long cols, long long ld, unsigned bits,
                                                      unsigned long long* changed) {
  const long long pad = ld - cols;
  const long long count = rows * pad;
  unsigned long long local = 0;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    if (data[(i / pad) * ld + cols + i % pad] != static_cast<unsigned short>(bits)) ++local;
  }
  if (local != 0) atomicAdd(changed, local);
}

// gf_scale for a 16-bit C: C = beta * C, rounded to nearest even; beta == 0 writes zeros without reading C.
extern "C" __global__ void gf_scale16(unsigned short* c, long long rows, long long cols, long long ldc,
                                      float beta, int type) {
  const long long count = rows * cols;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned short* p = c + (i / cols) * ldc + i % cols;
    const float x = beta == 0.0f ? 0.0f : beta * load_as_float(p, 0, type);
    unsigned short bits;
    if (type == 3) {
      asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(bits) : "f"(x));
    } else {
      asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(bits) : "f"(x));
    }
    *p = bits;
  }
}

// Streaming reads for gf_stream_floor.
namespace {

constexpr int kFloorLoads = 8;

// Loads the 16-byte vector at `at` as row_loads.cuh streams a run: past L1, L2 fetching the 256 bytes
// around it from device memory.
__device__ __forceinline__ void load_streamed(gf::Run& run, const uint4* at) {
  gf::load_run<8, true>(run, reinterpret_cast<const unsigned short*>(at), 8);
}

__device__ __forceinline__ unsigned stream_in(const uint4* p, long long count) {
  const long long stride = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  unsigned x = 0;
  for (; i + (kFloorLoads - 1) * stride < count; i += kFloorLoads * stride) {
    gf::Run v[kFloorLoads];
#pragma unroll
    for (int u = 0; u < kFloorLoads; ++u) load_streamed(v[u], p + i + u * stride);
#pragma unroll
    for (int u = 0; u < kFloorLoads; ++u) x ^= v[u][0] ^ v[u][1] ^ v[u][2] ^ v[u][3];
  }
  for (; i < count; i += stride) {
    gf::Run v;
    load_streamed(v, p + i);
    x ^= v[0] ^ v[1] ^ v[2] ^ v[3];
  }
  return x;
}

}  // namespace

// The least device-memory traffic of a GEMM, timed as its floor by `gemmforge bench`: reads `a_vectors` and
// `b_vectors` 16-byte vectors at a and b once and writes `c_vectors` at c. Each thread keeps 8 loads in
// flight, read past L1 and asking L2 for the 256 bytes around each (a stream of 117 MB after the timing's
// L2 flush, on an H200: 0.0346 ms, against 0.0379 with plain 16-byte loads). `sink` is written only if the
// loads' XOR equals `never`, which keeps them from being dropped.
extern "C" __global__ void gf_stream_floor(const uint4* a, long long a_vectors, const uint4* b,
                                           long long b_vectors, uint4* c, long long c_vectors, unsigned never,
                                           unsigned* sink) {
  const unsigned x = stream_in(a, a_vectors) ^ stream_in(b, b_vectors);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < c_vectors;
       i += (long long)gridDim.x * blockDim.x) {
    c[i] = make_uint4(0, 0, 0, 0);
  }
  if (x == never) *sink = x;
}
