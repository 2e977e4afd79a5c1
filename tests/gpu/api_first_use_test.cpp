// Tuning at first use on a GPU: an unknown problem (FP32, or BF16) is served correctly at once while
// `gemmforge tune` tunes it in the background, and its later calls switch to the tuned kernel, still correct;
// clearing the cache or destroying the runtime ends a tune in flight.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "api_test_support.hpp"
#include "core/dtype.hpp"
#include "gemm_harness.hpp"
#include "gemmforge/gemmforge.hpp"
#include "gpu_fixture.hpp"
#include "support/scoped_env.hpp"

namespace gemmforge::testing {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class ApiFirstUse : public GpuTest {
 protected:
  std::unique_ptr<Runtime> open_runtime(bool tune, size_t evaluations) {
    RuntimeOptions options;
    options.database_path = database_.path();
    options.use_shipped_results = false;  // the problem is unknown: levels come from this database alone
    options.use_vendor = false;           // the tuned result serves as kExact even where cuBLAS is faster
    options.record_misses = false;
    options.tune_at_first_use = tune;
    options.first_use_evaluations = evaluations;
    return std::make_unique<Runtime>(options);
  }
  static GemmHarness& harness() {
    static GemmHarness h;
    return h;
  }
  // Runs the case (FP32, or BF16 operands and C) through Runtime::gemm; empty when it matches cuBLAS within
  // the types' verification tolerance.
  static std::string check(Runtime& runtime, const GemmCase& c, uint64_t seed = 1) {
    const CaseResult r = harness().run(
        c,
        [&](const GemmCall& call, cudaStream_t stream) {
          const auto run = [&](auto* element) {
            using T = std::remove_pointer_t<decltype(element)>;
            runtime.gemm(call.op_a, call.op_b, call.m, call.n, call.k, call.alpha,
                         static_cast<const T*>(call.a), call.lda, static_cast<const T*>(call.b), call.ldb,
                         call.beta, static_cast<T*>(call.c), call.ldc, call.order, stream);
          };
          if (c.dtype == Dtype::kBf16) {
            run(static_cast<__nv_bfloat16*>(nullptr));
          } else {
            run(static_cast<float*>(nullptr));
          }
        },
        seed);
    const double bound = verification_tolerance(c.dtype, c.c_dtype);
    return r.passes(bound) ? "" : c.describe() + ": " + r.describe();
  }
  static GemmShape shape_of(const GemmCase& c) {
    const GemmCall call = shape_call(c);
    GemmShape shape;
    shape.dtype = c.dtype, shape.c_dtype = c.c_dtype;
    shape.order = c.order, shape.op_a = c.op_a, shape.op_b = c.op_b;
    shape.m = c.m, shape.n = c.n, shape.k = c.k;
    shape.lda = call.lda, shape.ldb = call.ldb, shape.ldc = call.ldc;
    return shape;
  }

  void served_at_once_then_tuned(const GemmCase& c);

  // Unset while the test runs, so that its options decide.
  test_support::ScopedEnv on_{"GEMMFORGE_TUNE_AT_FIRST_USE", nullptr};
  test_support::ScopedEnv budget_{"GEMMFORGE_TUNE_BUDGET", nullptr};
  TempDatabase database_;
};

// The first call of an unknown problem is served at once; calls go on, each checked against cuBLAS, until the
// tune in the background ends and its result serves; a later runtime serves that result from the database.
void ApiFirstUse::served_at_once_then_tuned(const GemmCase& c) {
  auto runtime = open_runtime(true, 8);
  const KernelProblem problem = GemmHarness::problem(c);
  const GemmShape shape = shape_of(c);
  ASSERT_NE(runtime->query(shape).level, PlanLevel::kExact) << "the fresh database knows the problem";

  EXPECT_EQ(check(*runtime, c), "") << "the first call, served before any tuning";
  const PlanInfo untuned = runtime->query(shape);
  EXPECT_EQ(untuned.problem, problem.to_string());
  EXPECT_NE(untuned.level, PlanLevel::kExact);
  EXPECT_NE(untuned.basis.find("tuned in the background"), std::string::npos) << untuned.basis;

  const auto start = Clock::now();
  int calls = 0;
  while (runtime->query(shape).level != PlanLevel::kExact && runtime->stats().tunes_failed == 0 &&
         seconds_since(start) < 600) {
    const std::string wrong = check(*runtime, c, 2 + calls);
    ASSERT_EQ(wrong, "") << "call " << calls << " while tuning in the background";
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const RuntimeStats stats = runtime->stats();
  ASSERT_EQ(stats.tunes_failed, 0u) << "the tune failed; the runtime logged why";
  const PlanInfo tuned = runtime->query(shape);
  ASSERT_EQ(tuned.level, PlanLevel::kExact)
      << "not tuned after " << seconds_since(start) << " s: " << tuned.basis;
  EXPECT_EQ(tuned.tuned_problem, tuned.problem);
  EXPECT_EQ(tuned.basis.find("background"), std::string::npos) << tuned.basis;
  EXPECT_EQ(stats.tunes_finished, 1u);
  EXPECT_EQ(stats.tunes_queued, 0u);
  EXPECT_EQ(stats.tunes_running, 0u);
  for (uint64_t seed = 100; seed < 103; ++seed) EXPECT_EQ(check(*runtime, c, seed), "") << "the tuned kernel";

  auto later = open_runtime(false, 8);
  EXPECT_EQ(later->query(shape).level, PlanLevel::kExact);
  EXPECT_EQ(later->stats().tunes_finished, 0u);
}

TEST_F(ApiFirstUse, AnUnknownProblemIsServedAtOnceAndSwitchesToItsTunedKernel) {
  // Leading dimensions one above the tight ones give alignments 1/1/1, which the tuner reproduces only
  // because the runtime states them (gemmforge tune --align).
  GemmCase c;
  c.order = Order::kRowMajor, c.m = 300, c.n = 200, c.k = 100, c.pad = 1, c.beta = 0.5f;
  const KernelProblem problem = GemmHarness::problem(c);
  ASSERT_EQ(problem.align_a, 1);
  ASSERT_EQ(problem.align_c, 1);
  served_at_once_then_tuned(c);
}

// A 16-bit problem goes the same way: the tune states its types (gemmforge tune --dtype bf16).
TEST_F(ApiFirstUse, AnUnknownBf16ProblemIsTunedAtFirstUseToo) {
  GemmCase c;
  c.dtype = c.c_dtype = Dtype::kBf16;
  c.order = Order::kRowMajor, c.op_b = Op::kT, c.m = 384, c.n = 520, c.k = 264, c.beta = 0.5f;
  const KernelProblem problem = GemmHarness::problem(c);
  ASSERT_EQ(problem.dtype, Dtype::kBf16);
  ASSERT_EQ(problem.align_a, 8);
  served_at_once_then_tuned(c);
}

TEST_F(ApiFirstUse, ClearingTheCacheOrDestroyingTheRuntimeEndsATuneInFlight) {
  auto runtime = open_runtime(true, 400);  // a budget this size keeps the tune busy for a while
  GemmCase c;
  c.order = Order::kColMajor, c.m = 520, c.n = 260, c.k = 130;
  const GemmShape shape = shape_of(c);
  EXPECT_EQ(check(*runtime, c), "");
  auto start = Clock::now();
  while (runtime->stats().tunes_running == 0 && seconds_since(start) < 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(runtime->stats().tunes_running, 1u) << runtime->query(shape).basis;

  std::this_thread::sleep_for(std::chrono::seconds(1));  // the tuning process is under way
  start = Clock::now();
  runtime->clear_cache();
  EXPECT_LT(seconds_since(start), 30) << "clear_cache waited for the tune instead of ending it";
  RuntimeStats stats = runtime->stats();
  EXPECT_EQ(stats.tunes_running, 0u);
  EXPECT_EQ(stats.tunes_failed, 0u) << "a tune ended by clear_cache is no failure";
  EXPECT_EQ(stats.tunes_finished, 0u);

  // Planned again, the problem is queued again, and served correctly meanwhile.
  EXPECT_EQ(check(*runtime, c), "");
  const std::string basis = runtime->query(shape).basis;
  EXPECT_NE(basis.find("tuned in the background"), std::string::npos) << basis;
  std::this_thread::sleep_for(std::chrono::seconds(1));
  start = Clock::now();
  runtime.reset();
  EXPECT_LT(seconds_since(start), 30) << "the destructor waited for the tune instead of ending it";
}

}  // namespace
}  // namespace gemmforge::testing
