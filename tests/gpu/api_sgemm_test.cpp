// gemmforgeSgemm called exactly like cublasSgemm (column-major, every op, beta = 0 over NaN and beta != 0
// with padded leading dimensions) matches cuBLAS over the correctness matrix, and the quick paths of
// m, n or k = 0 and alpha = 0 behave as in cuBLAS.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "api_test_support.hpp"
#include "gemm_harness.hpp"
#include "gpu_fixture.hpp"

namespace gemmforge::testing {
namespace {

constexpr double kBound = 1e-5;

class ApiSgemm : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    // The generated kernels are what these tests check, so cuBLAS must not serve while they compile.
    const VendorOff vendor_off;
    ASSERT_EQ(gemmforgeCreateWithDatabase(&handle_, database_.path().c_str()), GEMMFORGE_STATUS_SUCCESS)
        << gemmforgeGetLastErrorMessage();
  }
  void TearDown() override {
    if (handle_ != nullptr) EXPECT_EQ(gemmforgeDestroy(handle_), GEMMFORGE_STATUS_SUCCESS);
  }

  static GemmHarness& harness() {
    static GemmHarness h;
    return h;
  }

  // Runs one case through gemmforgeSgemm, the way an application calls cublasSgemm.
  std::string check(const GemmCase& c, gemmforgeOperation_t transa, gemmforgeOperation_t transb) {
    gemmforgeStatus_t status = GEMMFORGE_STATUS_SUCCESS;
    const CaseResult r = harness().run(c, [&](const GemmCall& call, cudaStream_t stream) {
      gemmforgeSetStream(handle_, stream);
      status = gemmforgeSgemm(handle_, transa, transb, static_cast<int>(call.m), static_cast<int>(call.n),
                              static_cast<int>(call.k), &call.alpha, static_cast<const float*>(call.a),
                              static_cast<int>(call.lda), static_cast<const float*>(call.b),
                              static_cast<int>(call.ldb), &call.beta, static_cast<float*>(call.c),
                              static_cast<int>(call.ldc));
    });
    if (status != GEMMFORGE_STATUS_SUCCESS) {
      return fmt::format("{}: {} {}", c.describe(), gemmforgeGetStatusString(status),
                         gemmforgeGetLastErrorMessage());
    }
    return r.passes(kBound) ? "" : fmt::format("{}: {}", c.describe(), r.describe());
  }

  TempDatabase database_;
  gemmforgeHandle_t handle_ = nullptr;
};

TEST_F(ApiSgemm, MatchesCublasOverTheCorrectnessMatrix) {
  struct Shape {
    int64_t m, n, k;
  };
  const std::vector<Shape> shapes = {{1, 1, 1},          {17, 33, 65},       {127, 129, 255},
                                     {1000, 1000, 1000}, {4103, 4105, 4104}, {1, 4096, 4096},
                                     {4096, 4096, 4096}};
  std::vector<std::string> failures;
  int checked = 0;
  for (const Shape& s : shapes) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        for (int variant = 0; variant < 2; ++variant) {
          GemmCase c;
          c.order = Order::kColMajor;
          c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k;
          c.beta = variant == 0 ? 0.0f : -0.75f;  // beta = 0: C starts as NaN and must not be read
          c.alpha = variant == 0 ? 1.0f : 1.5f;
          c.pad = variant == 0 ? 0 : 3;
          ++checked;
          if (std::string f = check(c, capi_op(op_a), capi_op(op_b)); !f.empty()) failures.push_back(f);
        }
      }
    }
  }
  EXPECT_EQ(checked, 56);
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

TEST_F(ApiSgemm, ConjugateTransposeOfRealDataIsTheTranspose) {
  GemmCase c;
  c.order = Order::kColMajor, c.op_a = Op::kT, c.op_b = Op::kT, c.m = 65, c.n = 31, c.k = 47, c.beta = 0.5f;
  EXPECT_EQ(check(c, GEMMFORGE_OP_C, GEMMFORGE_OP_C), "");
}

TEST_F(ApiSgemm, QuickPathsBehaveAsInCublas) {
  std::vector<GemmCase> cases;
  for (float beta : {0.0f, 1.0f, 0.5f}) {
    GemmCase k0;  // k = 0: C = beta * C; beta = 0 writes zeros over the NaN without reading it
    k0.order = Order::kColMajor, k0.m = 70, k0.n = 33, k0.k = 0, k0.beta = beta, k0.pad = 2;
    cases.push_back(k0);
    GemmCase alpha0 = k0;  // alpha = 0: the same, A and B never read
    alpha0.k = 50, alpha0.alpha = 0.0f;
    cases.push_back(alpha0);
  }
  GemmCase m0;
  m0.order = Order::kColMajor, m0.m = 0, m0.n = 16, m0.k = 16, m0.beta = 0.5f;
  cases.push_back(m0);
  GemmCase n0 = m0;
  n0.m = 16, n0.n = 0;
  cases.push_back(n0);
  for (const GemmCase& c : cases) EXPECT_EQ(check(c, GEMMFORGE_OP_N, GEMMFORGE_OP_N), "");
}

TEST_F(ApiSgemm, BadArgumentsLaunchNothingWithAHandleToo) {
  float* c = nullptr;
  const float one = 1.0f;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&c), 64 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemset(c, 0x7f, 64 * sizeof(float)), cudaSuccess);
  EXPECT_EQ(gemmforgeSgemm(handle_, GEMMFORGE_OP_N, GEMMFORGE_OP_N, 8, 8, 8, &one, c, 7, c, 8, &one, c, 8),
            GEMMFORGE_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemmforgeSgemm(handle_, GEMMFORGE_OP_N, GEMMFORGE_OP_N, 8, 8, -8, &one, c, 8, c, 8, &one, c, 8),
            GEMMFORGE_STATUS_INVALID_VALUE);
  std::vector<unsigned char> after(64 * sizeof(float));
  ASSERT_EQ(cudaMemcpy(after.data(), c, after.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(std::count(after.begin(), after.end(), 0x7f), static_cast<long>(after.size())) << "C was written";
  cudaFree(c);
  struct CUstream_st* stream = reinterpret_cast<struct CUstream_st*>(0x1);
  EXPECT_EQ(gemmforgeGetStream(handle_, &stream), GEMMFORGE_STATUS_SUCCESS);
  EXPECT_EQ(stream, nullptr) << "a new handle launches on the legacy default stream";
}

}  // namespace
}  // namespace gemmforge::testing
