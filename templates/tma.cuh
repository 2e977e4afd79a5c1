// Hopper's asynchronous copy machinery for warp-specialized templates (sm_90a, NVRTC only): transaction
// mbarriers, 2-D TMA loads into shared memory (multicast to the blocks of a cluster) and stores from it,
// cluster barriers, and the register reallocation between producer and consumer warpgroups.
//
// A pipeline stage has two barriers. `full` completes when the producer has armed it with the stage's byte
// count and the TMA engine has delivered that many bytes; `empty` completes when every consumer warp has
// arrived, done reading the stage. Each completes once per use of the stage, so a waiter names the phase
// it waits for by its parity: the use count of the stage, modulo 2.
#ifndef GEMMFORGE_TMA_CUH
#define GEMMFORGE_TMA_CUH

#include "tensor_maps.cuh"

namespace gf {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbarrier_init(unsigned long long* barrier, unsigned arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)), "r"(arrivals)
               : "memory");
}

// Makes initialized barriers visible to the other threads and to the async proxy (TMA).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// The producer's arrival: the phase completes once `bytes` more have landed.
__device__ __forceinline__ void mbarrier_arrive_expect(unsigned long long* barrier, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

// Raises the phase's expected byte count without arriving: for a producer whose threads arrive once they
// have also written the rest of the stage themselves.
__device__ __forceinline__ void mbarrier_expect(unsigned long long* barrier, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(barrier)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(unsigned long long* barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(barrier)) : "memory");
}

// Waits until the phase of parity `parity` has completed. A barrier fresh from init counts its phase of
// parity 1 as completed, so a producer's first wait on an empty stage returns at once.
__device__ __forceinline__ void mbarrier_wait(unsigned long long* barrier, unsigned parity) {
  const unsigned address = shared_address(barrier);
  unsigned done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(address), "r"(parity)
        : "memory");
  } while (!done);
}

// Fetches a tensor map (a kernel argument) into the descriptor cache ahead of its first use.
__device__ __forceinline__ void prefetch_tensor_map(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// An L2 policy for data read once: its lines are the first evicted, before lines others still need or have
// written (a streamed operand then leaves the rest of L2 in place, dirty lines included, which would
// otherwise go back to device memory while the kernel reads).
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

#define GF_TMA_LOAD "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"

// Copies the box at element coordinates (inner, outer) of `map`'s tensor into shared memory at `dst`, the
// bytes delivered counting towards `barrier`'s transaction count; elements outside the tensor arrive as
// zeros. With a nonzero `mask` (bit r: rank r of the cluster) every block in it receives the box at the
// same offset, counted by its barrier at `barrier`'s offset. kEvictFirst reads the box's lines under
// l2_evict_first_policy().
template <bool kEvictFirst = false>
__device__ __forceinline__ void tma_load(void* dst, const TensorMap* map, int inner, int outer,
                                         unsigned long long* barrier, unsigned short mask = 0) {
  const unsigned to = shared_address(dst);
  const unsigned long long from = reinterpret_cast<unsigned long long>(map);
  const unsigned done = shared_address(barrier);
  if constexpr (kEvictFirst) {
    const unsigned long long policy = l2_evict_first_policy();
    if (mask != 0) {
      asm volatile(GF_TMA_LOAD
                   ".multicast::cluster.L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5, %6;\n" ::"r"(to),
                   "l"(from), "r"(inner), "r"(outer), "r"(done), "h"(mask), "l"(policy)
                   : "memory");
    } else {
      asm volatile(GF_TMA_LOAD ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(to), "l"(from),
                   "r"(inner), "r"(outer), "r"(done), "l"(policy)
                   : "memory");
    }
  } else if (mask != 0) {
    asm volatile(GF_TMA_LOAD ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(to), "l"(from),
                 "r"(inner), "r"(outer), "r"(done), "h"(mask)
                 : "memory");
  } else {
    asm volatile(GF_TMA_LOAD " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(to), "l"(from), "r"(inner), "r"(outer),
                 "r"(done)
                 : "memory");
  }
}

#undef GF_TMA_LOAD

// Has the TMA engine store the box at element coordinates (inner, outer) of `map`'s tensor from shared memory
// at `src` (laid out as the map's swizzle reads it); elements outside the tensor are not written. The
// store joins this thread's open bulk group: bulk_commit() closes it.
__device__ __forceinline__ void tma_store(const TensorMap* map, const void* src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<unsigned long long>(map)),
               "r"(inner), "r"(outer), "r"(shared_address(src))
               : "memory");
}

__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

// Waits until at most kPending of this thread's committed bulk groups still read their shared memory.
template <int kPending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}

// Waits until every bulk group this thread committed has completed, its writes made.
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// Thread block clusters. The block's rank in its cluster.
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// Every thread of every block of the cluster meets here; shared-memory writes and barrier inits made before
// are visible to the cluster after.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::
                   : "memory");
}

// Arrives on the barrier at the same shared-memory offset as `barrier` in block `rank` of the cluster. The
// arrival orders only the block's own accesses (release at CTA scope): it tells a producer that wgmma has
// finished reading a stage, and a cluster-scope release would put a GPU-wide memory fence before every
// arrival.
__device__ __forceinline__ void mbarrier_arrive_cluster(unsigned long long* barrier, unsigned rank) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(shared_address(barrier)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// Register reallocation between warpgroups: the producer gives registers back, the consumers take them.
template <int kRegisters>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}
template <int kRegisters>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

}  // namespace gf

#endif  // GEMMFORGE_TMA_CUH
