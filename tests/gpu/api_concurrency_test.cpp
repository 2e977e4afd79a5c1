// Many threads calling one Runtime on their own streams at once, on problems served by split-K configs
// (serial with semaphores, and parallel with a workspace): every result matches cuBLAS, so no two
// concurrent launches shared their scratch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <thread>

#include "api_test_support.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "gemmforge/gemmforge.hpp"
#include "gpu_fixture.hpp"
#include "rtc/utility_kernels.hpp"

namespace gemmforge::testing {
namespace {

struct SharedProblem {
  GemmCall call;  // row-major; c is left null, each thread has its own
  cuda::DeviceBuffer a, b, reference;
};

class ApiConcurrency : public GpuTest {};

TEST_F(ApiConcurrency, ThreadsOnSeparateStreamsGetCorrectResults) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 25;
  rtc::UtilityKernels utilities;
  cuda::CublasHandle cublas;
  cuda::Stream setup;
  cublas.set_stream(setup.get());

  // Two problems with few tiles and deep K: the first split serially (semaphores), the second by the
  // skinny template's parallel reduction (workspace); a third is untuned and runs what the chain picks.
  std::vector<std::array<int64_t, 3>> shapes = {{256, 256, 4096}, {8, 2048, 4096}, {200, 300, 1000}};
  std::vector<SharedProblem> problems(shapes.size());
  TempDatabase database;
  for (size_t i = 0; i < shapes.size(); ++i) {
    SharedProblem& p = problems[i];
    const auto [m, n, k] = shapes[i];
    p.call.order = Order::kRowMajor;
    p.call.m = m, p.call.n = n, p.call.k = k;
    p.call.lda = k, p.call.ldb = n, p.call.ldc = n;
    p.call.alpha = 1.0f, p.call.beta = 0.0f;
    p.a = cuda::DeviceBuffer(m * k * sizeof(float));
    p.b = cuda::DeviceBuffer(k * n * sizeof(float));
    p.reference = cuda::DeviceBuffer(m * n * sizeof(float));
    utilities.fill_uniform(p.a.as<float>(), m, k, k, 11 + i, -1, 1, setup.get());
    utilities.fill_uniform(p.b.as<float>(), k, n, n, 23 + i, -1, 1, setup.get());
    p.call.a = p.a.data(), p.call.b = p.b.data();
    KernelCall reference = canonicalize([&] {
      GemmCall c = p.call;
      c.c = p.reference.data();
      return c;
    }());
    cublas.sgemm(reference);
    if (i == 0) record_tuned(database.path(), reference.problem, seed_of("sgemm_simt", 2, {{"SPLIT_K", 4}}));
    if (i == 1)
      record_tuned(database.path(), reference.problem,
                   seed_of("sgemm_skinny", 1, {{"MR", 8}, {"B_DIRECT", 0}, {"SPLIT_K", 16}}));
  }
  setup.synchronize();

  RuntimeOptions options;
  options.database_path = database.path();
  options.use_vendor = false;  // the generated kernels are what runs concurrently here
  Runtime runtime(options);
  GemmShape split;
  split.order = Order::kRowMajor, split.m = 256, split.n = 256, split.k = 4096;
  ASSERT_EQ(runtime.query(split).split_k, 4);
  split.m = 8, split.n = 2048;
  ASSERT_EQ(runtime.query(split).split_k, 16);

  std::vector<std::vector<cuda::DeviceBuffer>> results(kThreads);
  for (auto& per_thread : results) {
    for (const SharedProblem& p : problems) per_thread.emplace_back(p.call.m * p.call.n * sizeof(float));
  }
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        cuda::Stream stream;
        for (int i = 0; i < kIterations; ++i) {
          const size_t which = (t + i) % problems.size();
          const GemmCall& c = problems[which].call;
          runtime.gemm(Op::kN, Op::kN, c.m, c.n, c.k, c.alpha, static_cast<const float*>(c.a), c.lda,
                       static_cast<const float*>(c.b), c.ldb, c.beta, results[t][which].as<float>(), c.ldc,
                       Order::kRowMajor, stream.get());
        }
        stream.synchronize();
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  for (int t = 0; t < kThreads; ++t) {
    for (size_t i = 0; i < problems.size(); ++i) {
      const GemmCall& c = problems[i].call;
      const rtc::Comparison r = utilities.compare(
          results[t][i].as<float>(), c.ldc, problems[i].reference.as<float>(), c.ldc, c.m, c.n, setup.get());
      EXPECT_TRUE(r.passes(1e-5)) << fmt::format("thread {} problem {}: rel error {:.3g}, {} non-finite", t,
                                                 i, r.rel_error, r.nonfinite);
    }
  }
  EXPECT_EQ(runtime.stats().plans, problems.size());
}

}  // namespace
}  // namespace gemmforge::testing
