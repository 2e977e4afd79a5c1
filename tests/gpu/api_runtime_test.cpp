// The C++ API on a GPU: row- and column-major calls match cuBLAS, query() tells the level that serves a
// problem (and the geometry it launches with), cuBLAS serves while a kernel compiles and where it was
// measured faster, bad arguments throw before anything is launched, untuned problems are recorded as
// misses once, and after its first call a problem is served without allocating, compiling or querying.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "api_test_support.hpp"
#include "gemm_harness.hpp"
#include "gemmforge/gemmforge.hpp"
#include "gpu_fixture.hpp"

// Counts this thread's heap allocations, to show that the hot path makes none.
namespace {
thread_local long allocations = 0;
}  // namespace

void* operator new(std::size_t bytes) {
  ++allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t bytes) {
  ++allocations;
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}

namespace gemmforge::testing {
namespace {

constexpr double kBound = 1e-5;

class ApiRuntime : public GpuTest {
 protected:
  // Generated kernels only, unless a test is about cuBLAS serving.
  std::unique_ptr<Runtime> open_runtime(bool vendor = false) {
    RuntimeOptions options;
    options.database_path = database_.path();
    options.use_shipped_results = false;  // levels here come from this test's database alone
    options.use_vendor = vendor;
    return std::make_unique<Runtime>(options);
  }
  static GemmHarness& harness() {
    static GemmHarness h;
    return h;
  }
  // Runs a case through Runtime::gemm; empty when it matches cuBLAS.
  std::string check(Runtime& runtime, const GemmCase& c) {
    const CaseResult r = harness().run(c, [&](const GemmCall& call, cudaStream_t stream) {
      runtime.gemm(call.op_a, call.op_b, call.m, call.n, call.k, call.alpha,
                   static_cast<const float*>(call.a), call.lda, static_cast<const float*>(call.b), call.ldb,
                   call.beta, static_cast<float*>(call.c), call.ldc, call.order, stream);
    });
    return r.passes(kBound) ? "" : c.describe() + ": " + r.describe();
  }

  TempDatabase database_;
};

TEST_F(ApiRuntime, RowAndColumnMajorCallsMatchCublas) {
  auto runtime = open_runtime();
  for (Order order : {Order::kRowMajor, Order::kColMajor}) {
    for (Op op_a : {Op::kN, Op::kT}) {
      GemmCase c;
      c.order = order, c.op_a = op_a, c.op_b = Op::kT, c.m = 300, c.n = 200, c.k = 100, c.beta = 0.25f,
      c.pad = 1;
      EXPECT_EQ(check(*runtime, c), "");
    }
  }
}

TEST_F(ApiRuntime, QueryTellsWhichLevelServes) {
  GemmCase c;
  c.order = Order::kRowMajor, c.m = 512, c.n = 512, c.k = 512;
  const KernelProblem tuned = GemmHarness::problem(c);
  record_tuned(database_.path(), tuned, seed_of("sgemm_simt", 2, {{"SPLIT_K", 2}}), 0.05);
  auto runtime = open_runtime();
  GemmShape shape;
  shape.order = Order::kRowMajor, shape.m = 512, shape.n = 512, shape.k = 512;
  PlanInfo plan = runtime->query(shape);
  EXPECT_EQ(plan.level, PlanLevel::kExact);
  EXPECT_EQ(plan.config, seed_of("sgemm_simt", 2, {{"SPLIT_K", 2}}).key());
  EXPECT_EQ(plan.split_k, 2);
  ASSERT_TRUE(plan.time_ms);
  EXPECT_DOUBLE_EQ(*plan.time_ms, 0.05);
  shape.m = 500;
  plan = runtime->query(shape);
  EXPECT_EQ(plan.level, PlanLevel::kModel);
  EXPECT_TRUE(plan.time_predicted);
  shape.op_a = Op::kT;
  EXPECT_EQ(runtime->query(shape).level, PlanLevel::kModel);
  EXPECT_EQ(check(*runtime, c), "") << "the tuned split-K config computes the right result";
  EXPECT_THROW(runtime->query(GemmShape{}), InvalidArgumentError);
}

TEST_F(ApiRuntime, CuBlasServesWhileTheKernelCompilesThenTheKernelTakesOver) {
  auto runtime = open_runtime(true);
  GemmCase c;
  c.order = Order::kRowMajor, c.m = 333, c.n = 222, c.k = 111, c.beta = 0.5f;
  GemmShape shape;
  shape.order = Order::kRowMajor, shape.m = c.m, shape.n = c.n, shape.k = c.k;
  const PlanInfo chosen = runtime->query(shape);
  ASSERT_NE(chosen.level, PlanLevel::kExact);
  EXPECT_EQ(check(*runtime, c), "");
  if (chosen.level == PlanLevel::kVendor) GTEST_SKIP() << "cuBLAS is predicted faster here: " << chosen.basis;
  const RuntimeStats first = runtime->stats();
  EXPECT_EQ(first.nvrtc_compiles, 0u) << "the first call waited for NVRTC";
  runtime->wait_for_compiles();
  const RuntimeStats later = runtime->stats();
  EXPECT_EQ(later.vendor_plans, 0u);
  EXPECT_EQ(later.compiles_pending, 0u);
  EXPECT_EQ(later.nvrtc_compiles, 1u);
  EXPECT_EQ(runtime->query(shape).level, PlanLevel::kModel);
  EXPECT_EQ(check(*runtime, c), "") << "the generated kernel, once compiled";
}

TEST_F(ApiRuntime, CuBlasServesWhereItWasMeasuredFaster) {
  GemmCase c;
  c.order = Order::kColMajor, c.m = 640, c.n = 320, c.k = 160, c.beta = 1.0f, c.pad = 3;
  record_tuned(database_.path(), GemmHarness::problem(c), seed_of("sgemm_simt", 4), 0.5, 0.1);
  auto runtime = open_runtime(true);
  GemmShape shape;
  shape.order = c.order, shape.m = c.m, shape.n = c.n, shape.k = c.k;
  shape.lda = c.m + c.pad, shape.ldb = c.k + c.pad, shape.ldc = c.m + c.pad;
  const PlanInfo plan = runtime->query(shape);
  EXPECT_EQ(plan.level, PlanLevel::kVendor) << plan.basis;
  EXPECT_EQ(plan.config, seed_of("sgemm_simt", 4).key()) << "the tuned kernel cuBLAS beat is reported";
  EXPECT_EQ(check(*runtime, c), "");
  EXPECT_EQ(runtime->stats().vendor_plans, 1u);
  EXPECT_EQ(runtime->stats().kernels, 0u) << "a problem cuBLAS serves loads no kernel";
  EXPECT_EQ(open_runtime(false)->query(shape).level, PlanLevel::kExact) << "unless cuBLAS is turned off";
}

TEST_F(ApiRuntime, ConfigsSharingACubinLaunchWithTheirOwnGeometry) {
  // Two tuned problems whose configs differ only in SPLIT_K, a launch parameter: one cubin serves both,
  // and each problem still launches with its own config's geometry, whichever was served first.
  GemmCase whole, split;
  whole.order = split.order = Order::kRowMajor;
  whole.m = 256, whole.n = 256, whole.k = 512;
  split.m = 128, split.n = 512, split.k = 4096, split.beta = 0.5f;
  const Config one_slice = seed_of("sgemm_tf32x3", 0, {{"SPLIT_K", 1}});
  const Config two_slices = seed_of("sgemm_tf32x3", 0, {{"SPLIT_K", 2}});
  record_tuned(database_.path(), GemmHarness::problem(whole), one_slice);
  record_tuned(database_.path(), GemmHarness::problem(split), two_slices);
  auto runtime = open_runtime();
  EXPECT_EQ(check(*runtime, whole), "");
  EXPECT_EQ(check(*runtime, split), "");
  EXPECT_EQ(runtime->stats().plans, 2u);
  EXPECT_EQ(runtime->stats().kernels, 1u) << "configs that compile alike share one kernel";
  GemmShape shape;
  shape.order = Order::kRowMajor, shape.m = split.m, shape.n = split.n, shape.k = split.k;
  const PlanInfo served = runtime->query(shape);
  EXPECT_EQ(served.config, two_slices.key());
  EXPECT_EQ(served.split_k, 2) << "the plan launches with the geometry of the config it serves";
  shape.m = whole.m, shape.n = whole.n, shape.k = whole.k;
  EXPECT_EQ(runtime->query(shape).split_k, 1);
}

// A kernel whose workspace the device cannot hold (gemm_tma's FP32 splits the operands into TF32 parts,
// twice their size) does not fail the call: cuBLAS serves it, and the result is right.
TEST_F(ApiRuntime, AWorkspaceTheDeviceCannotHoldLeavesTheCallToCublas) {
  int ordinal = 0;
  ASSERT_EQ(cudaGetDevice(&ordinal), cudaSuccess);
  if (cuda::query_device(ordinal).cc() != 90) GTEST_SKIP() << "gemm_tma is written for sm_90a (Hopper)";
  GemmCase c;
  c.order = Order::kRowMajor, c.m = 2048, c.n = 2048, c.k = 2048;  // 64 MiB of TF32 parts
  Config fp32;
  for (const Config& seed : TemplateLibrary::instance().get("gemm_tma").manifest.seeds())
    if (seed.at("FOLD") > 0) fp32 = seed;
  ASSERT_FALSE(fp32.values().empty());
  record_tuned(database_.path(), GemmHarness::problem(c), fp32, 0.25, 0.35);
  auto runtime = open_runtime(/*vendor=*/true);
  GemmShape shape;
  shape.order = Order::kRowMajor, shape.m = c.m, shape.n = c.n, shape.k = c.k;
  const PlanInfo plan = runtime->query(shape);
  ASSERT_EQ(plan.level, PlanLevel::kExact) << plan.basis;
  ASSERT_EQ(plan.template_name, "gemm_tma");
  EXPECT_EQ(check(*runtime, c), "");  // the kernel compiles meanwhile, cuBLAS serving
  runtime->wait_for_compiles();
  const CaseResult r = harness().run(c, [&](const GemmCall& call, cudaStream_t) {
    // A stream of its own, whose workspace the runtime has not allocated yet, and everything but 40 MiB of
    // the device's memory taken, for this call only.
    cudaStream_t fresh = nullptr;
    ASSERT_EQ(cudaStreamCreate(&fresh), cudaSuccess);
    size_t free = 0, total = 0;
    ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    void* ballast = nullptr;
    ASSERT_EQ(cudaMalloc(&ballast, free - (size_t{40} << 20)), cudaSuccess);
    runtime->gemm(call.op_a, call.op_b, call.m, call.n, call.k, call.alpha, static_cast<const float*>(call.a),
                  call.lda, static_cast<const float*>(call.b), call.ldb, call.beta,
                  static_cast<float*>(call.c), call.ldc, call.order, fresh);
    EXPECT_EQ(cudaStreamSynchronize(fresh), cudaSuccess);
    EXPECT_EQ(cudaFree(ballast), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(fresh), cudaSuccess);
  });
  EXPECT_TRUE(r.passes(kBound)) << r.describe();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(ApiRuntime, BadArgumentsThrowAndLaunchNothing) {
  auto runtime = open_runtime();
  float* c = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c), 64 * sizeof(float)), cudaSuccess);
  EXPECT_THROW(runtime->gemm(Op::kN, Op::kN, 8, 8, 8, 1.0f, c, 7, c, 8, 0.0f, c, 8), InvalidArgumentError);
  EXPECT_THROW(runtime->gemm(Op::kN, Op::kN, 8, 8, 8, 1.0f, nullptr, 8, c, 8, 0.0f, c, 8),
               InvalidArgumentError);
  EXPECT_THROW(runtime->gemm(Op::kN, Op::kN, 8, -1, 8, 1.0f, c, 8, c, 8, 0.0f, c, 8), InvalidArgumentError);
  EXPECT_EQ(runtime->stats().plans, 0u);
  cudaFree(c);
}

TEST_F(ApiRuntime, UntunedProblemsAreRecordedAsMissesOncePerProcess) {
  GemmCase tuned_case;
  tuned_case.order = Order::kRowMajor, tuned_case.m = 256, tuned_case.n = 256, tuned_case.k = 256;
  record_tuned(database_.path(), GemmHarness::problem(tuned_case), seed_of("sgemm_simt", 2));
  GemmCase untuned = tuned_case;
  untuned.m = 200;
  {
    auto runtime = open_runtime();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(check(*runtime, untuned), "");
    EXPECT_EQ(check(*runtime, tuned_case), "");
    EXPECT_EQ(runtime->stats().misses_recorded, 1u);
  }
  auto again = open_runtime();  // another runtime of the same process: the miss is not counted twice
  EXPECT_EQ(check(*again, untuned), "");
  EXPECT_EQ(again->stats().misses_recorded, 0u);

  db::Database database = db::Database::open(database_.path());
  const std::vector<db::MissRecord> misses = database.misses(database.devices().front().id);
  ASSERT_EQ(misses.size(), 1u);
  EXPECT_EQ(misses.front().problem, GemmHarness::problem(untuned));
  EXPECT_EQ(misses.front().count, 1);
}

TEST_F(ApiRuntime, TheHotPathNeitherAllocatesNorCompiles) {
  auto runtime = open_runtime();
  GemmCase c;
  c.order = Order::kColMajor, c.m = 96, c.n = 80, c.k = 64, c.beta = 0.5f;
  EXPECT_EQ(check(*runtime, c), "");  // first call: plan, kernel, scratch
  const RuntimeStats before = runtime->stats();
  const GemmCall call = harness().call(c);
  const long allocated_before = allocations;
  for (int i = 0; i < 100; ++i) {
    runtime->gemm(call.op_a, call.op_b, call.m, call.n, call.k, call.alpha, static_cast<const float*>(call.a),
                  call.lda, static_cast<const float*>(call.b), call.ldb, call.beta,
                  static_cast<float*>(call.c), call.ldc, call.order, harness().stream());
  }
  const long allocated = allocations - allocated_before;
  ASSERT_EQ(cudaStreamSynchronize(harness().stream()), cudaSuccess);
  EXPECT_EQ(allocated, 0)
      << "heap allocations in 100 calls of a known problem (a database query or a compile "
         "would allocate)";
  const RuntimeStats after = runtime->stats();
  EXPECT_EQ(after.nvrtc_compiles, before.nvrtc_compiles);
  EXPECT_EQ(after.plans, before.plans);
  EXPECT_EQ(after.kernels, before.kernels);
}

}  // namespace
}  // namespace gemmforge::testing
