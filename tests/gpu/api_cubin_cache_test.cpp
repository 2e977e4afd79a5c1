// A tuned problem served a second time, by a second Runtime or a second process, loads its kernel from
// the cubin stored in the database: no NVRTC compile, and a first call far cheaper than compiling.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>

#include "api_test_support.hpp"
#include "gemm_harness.hpp"
#include "gemmforge/gemmforge.hpp"
#include "gpu_fixture.hpp"
#include "support/run_in_child.hpp"

namespace gemmforge::testing {
namespace {

// The child process finds its database here; the test it runs skips unless the variable is set.
constexpr const char* kChildDatabase = "GEMMFORGE_TEST_CHILD_DATABASE";

GemmCase tuned_case() {
  GemmCase c;
  c.order = Order::kColMajor, c.op_a = Op::kT, c.m = 256, c.n = 256, c.k = 256, c.beta = 0.0f;
  return c;
}

Config tuned_config() {
  return seed_of("sgemm_simt", 2, {{"RASTER", 1}});
}

// Runs the tuned case through `runtime`; returns the wall time of the call in milliseconds.
double run_case(Runtime& runtime, GemmHarness& harness, bool& correct) {
  double ms = 0;
  const CaseResult r = harness.run(tuned_case(), [&](const GemmCall& call, cudaStream_t stream) {
    const auto start = std::chrono::steady_clock::now();
    runtime.gemm(call.op_a, call.op_b, call.m, call.n, call.k, call.alpha, static_cast<const float*>(call.a),
                 call.lda, static_cast<const float*>(call.b), call.ldb, call.beta,
                 static_cast<float*>(call.c), call.ldc, call.order, stream);
    ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  });
  correct = r.passes(1e-5);
  return ms;
}

// Generated kernels only, from the database only: cuBLAS serving while they compile, or a shipped cubin of
// the same kernel (the sm_90 bundle holds seeds that won shipped problems), would hide what this test counts.
RuntimeOptions options_for(const std::string& path) {
  RuntimeOptions options;
  options.database_path = path;
  options.use_vendor = false;
  options.use_shipped_results = false;
  return options;
}

class ApiCubinCache : public GpuTest {};

TEST_F(ApiCubinCache, ASecondRuntimeAndAClearedCacheLoadTheStoredCubin) {
  TempDatabase database;
  record_tuned(database.path(), GemmHarness::problem(tuned_case()), tuned_config());
  GemmHarness harness;
  bool correct = false;
  Runtime first(options_for(database.path()));
  run_case(first, harness, correct);
  EXPECT_TRUE(correct);
  EXPECT_EQ(first.stats().nvrtc_compiles, 1u);
  EXPECT_EQ(first.query(GemmShape{Op::kT, Op::kN, 256, 256, 256}).level, PlanLevel::kExact);

  Runtime second(options_for(database.path()));
  run_case(second, harness, correct);
  EXPECT_TRUE(correct);
  EXPECT_EQ(second.stats().nvrtc_compiles, 0u);
  EXPECT_EQ(second.stats().cubins_from_database, 1u);

  first.clear_cache();
  EXPECT_EQ(first.stats().plans, 0u);
  run_case(first, harness, correct);
  EXPECT_TRUE(correct);
  EXPECT_EQ(first.stats().nvrtc_compiles, 1u) << "no second compile after clearing the cache";
  EXPECT_EQ(first.stats().cubins_from_database, 1u);
}

TEST_F(ApiCubinCache, ASecondProcessServesTheTunedProblemWithoutCompiling) {
  TempDatabase database;
  record_tuned(database.path(), GemmHarness::problem(tuned_case()), tuned_config());
  {
    GemmHarness harness;
    bool correct = false;
    Runtime warm(options_for(database.path()));
    run_case(warm, harness, correct);
    ASSERT_TRUE(correct);
    ASSERT_EQ(warm.stats().nvrtc_compiles, 1u);
  }
  test_support::run_test_in_child(kChildDatabase, database.path(), "ApiCubinCache.ChildProcessPart",
                                  "first call");
}

// Runs only inside the child process of the test above.
TEST_F(ApiCubinCache, ChildProcessPart) {
  const char* path = std::getenv(kChildDatabase);
  if (path == nullptr)
    GTEST_SKIP() << "runs as the second process of ASecondProcessServesTheTunedProblemWithoutCompiling";
  GemmHarness harness;  // compiles its own utility kernels first, so they are not part of the timing
  bool correct = false;
  Runtime runtime(options_for(path));
  const double first_ms = run_case(runtime, harness, correct);
  EXPECT_TRUE(correct);
  EXPECT_EQ(runtime.stats().nvrtc_compiles, 0u);
  EXPECT_EQ(runtime.stats().cubins_from_database, 1u);
  std::printf("first call in a fresh process with the cubin in the database: %.2f ms\n", first_ms);
  RecordProperty("first_call_ms", std::to_string(first_ms));
  EXPECT_LT(first_ms, 500.0) << "far below an NVRTC compile";
}

}  // namespace
}  // namespace gemmforge::testing
