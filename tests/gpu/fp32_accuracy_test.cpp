// FP32 at FP32 accuracy on TF32 tensor cores: the Hopper templates' FP32 mode (three TF32 products of each
// operand's big and small parts) against an FP64 reference (cuBLAS Dgemm on the same inputs), next to cuBLAS
// SGEMM (FFMA) on the same data. Bound: the generated kernel's relative Frobenius error against FP64 is no
// larger than SGEMM's. Inputs uniform in [-1, 1], K long enough for accumulation to dominate the error.
// Needs an sm_90 GPU.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/template_library.hpp"
#include "cuda/check.hpp"
#include "kernel_fixture.hpp"

namespace gemmforge::testing {
namespace {

struct AccuracyCase {
  const char* template_name;
  Op op_a;
  Op op_b;
  int64_t m, n, k;
};

class Fp32AccuracyTest : public KernelTest, public ::testing::WithParamInterface<AccuracyCase> {
 protected:
  void SetUp() override {
    KernelTest::SetUp();
    if (IsSkipped()) return;
    if (kernels().device().cc() != 90) GTEST_SKIP() << GetParam().template_name << " is written for sm_90a";
  }
};

double relative_error(const std::vector<float>& c, const std::vector<double>& ref) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    diff += (c[i] - ref[i]) * (c[i] - ref[i]);
    norm += ref[i] * ref[i];
  }
  return std::sqrt(diff / norm);
}

TEST_P(Fp32AccuracyTest, ErrorAgainstFp64IsNoLargerThanSgemms) {
  const AccuracyCase& p = GetParam();
  const KernelTemplate& tmpl = TemplateLibrary::instance().get(p.template_name);
  GemmCall call;  // row-major; op(A) m x k, op(B) k x n
  call.order = Order::kRowMajor;
  call.op_a = p.op_a, call.op_b = p.op_b;
  call.m = p.m, call.n = p.n, call.k = p.k;
  call.lda = p.op_a == Op::kN ? p.k : p.m;
  call.ldb = p.op_b == Op::kN ? p.n : p.k;
  call.ldc = p.n;

  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(p.m * p.k), b(p.k * p.n);
  for (float& x : a) x = uniform(rng);
  for (float& x : b) x = uniform(rng);
  const std::vector<double> a64(a.begin(), a.end()), b64(b.begin(), b.end());

  cuda::DeviceBuffer da(a.size() * 4), db(b.size() * 4), dc(p.m * p.n * 4);
  cuda::DeviceBuffer da64(a.size() * 8), db64(b.size() * 8), dc64(p.m * p.n * 8);
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(da.data(), a.data(), da.bytes(), cudaMemcpyHostToDevice));
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(db.data(), b.data(), db.bytes(), cudaMemcpyHostToDevice));
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(da64.data(), a64.data(), da64.bytes(), cudaMemcpyHostToDevice));
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(db64.data(), b64.data(), db64.bytes(), cudaMemcpyHostToDevice));

  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  cuda::CublasHandle cublas;
  const cublasOperation_t tb = p.op_b == Op::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t ta = p.op_a == Op::kN ? CUBLAS_OP_N : CUBLAS_OP_T;
  const double one = 1, zero = 0;
  GEMMFORGE_CUBLAS_CHECK(
      cublasDgemm(cublas.get(), tb, ta, static_cast<int>(p.n), static_cast<int>(p.m), static_cast<int>(p.k),
                  &one, db64.as<double>(), static_cast<int>(call.ldb), da64.as<double>(),
                  static_cast<int>(call.lda), &zero, dc64.as<double>(), static_cast<int>(p.n)));
  std::vector<double> ref(p.m * p.n);
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(ref.data(), dc64.data(), dc64.bytes(), cudaMemcpyDeviceToHost));

  call.a = da.data(), call.b = db.data(), call.c = dc.data();
  const KernelCall canonical = canonicalize(call);
  std::vector<float> c(p.m * p.n);
  cublas.sgemm(canonical);
  GEMMFORGE_CUDA_CHECK(cudaMemcpy(c.data(), dc.data(), dc.bytes(), cudaMemcpyDeviceToHost));
  const double sgemm_error = relative_error(c, ref);

  GEMMFORGE_CUDA_CHECK(cudaMemset(dc.data(), 0xff, dc.bytes()));  // NaN until the kernel writes C
  for (const Config& seed : tmpl.manifest.seeds()) {
    if (!tmpl.manifest.violations(seed, &kernels().device(), &canonical.problem).empty()) continue;
    kernels().launch(tmpl, seed, canonical, nullptr);
    GEMMFORGE_CUDA_CHECK(cudaDeviceSynchronize());
    GEMMFORGE_CUDA_CHECK(cudaMemcpy(c.data(), dc.data(), dc.bytes(), cudaMemcpyDeviceToHost));
    const double error = relative_error(c, ref);
    EXPECT_LE(error, sgemm_error) << seed.key() << ": " << error << " against SGEMM's " << sgemm_error;
    std::printf("%s %s: relative error against FP64 %.3g, cuBLAS SGEMM %.3g\n", p.template_name,
                seed.key().c_str(), error, sgemm_error);
  }
}

INSTANTIATE_TEST_SUITE_P(Hopper, Fp32AccuracyTest,
                         ::testing::Values(AccuracyCase{"gemm_tma", Op::kN, Op::kN, 1024, 1024, 8192},
                                           AccuracyCase{"gemm_tma", Op::kT, Op::kT, 1000, 1030, 4100},
                                           AccuracyCase{"gemm_wgmma", Op::kN, Op::kN, 1024, 1024, 8192}),
                         [](const ::testing::TestParamInfo<AccuracyCase>& info) {
                           return fmt::format("{}_{}{}_{}x{}x{}", info.param.template_name,
                                              info.param.op_a == Op::kN ? "n" : "t",
                                              info.param.op_b == Op::kN ? "n" : "t", info.param.m,
                                              info.param.n, info.param.k);
                         });

}  // namespace
}  // namespace gemmforge::testing
