// gemmforgeGemmEx, gemmforgeGemmStridedBatchedEx and gemmforgeSgemmStridedBatched called exactly like their
// cuBLAS namesakes (column-major, every op, beta = 0 over NaN and beta != 0 with odd and padded leading
// dimensions), with generated kernels only, against cuBLAS GemmEx with FP32 accumulation on the same
// operands. Bound: verification_tolerance(operands, C), i.e. 1e-4 relative Frobenius error plus one rounding
// of a 16-bit C (2^-7 BF16, 2^-10 FP16) beyond cuBLAS's own result; 1e-5 for FP32.
#include <cublas_v2.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "api_test_support.hpp"
#include "core/dtype.hpp"
#include "cuda/check.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device_buffer.hpp"
#include "gemm_harness.hpp"
#include "gpu_fixture.hpp"

namespace gemmforge::testing {
namespace {

gemmforgeDataType_t capi_type(Dtype dtype) {
  return static_cast<gemmforgeDataType_t>(dtype_facts(dtype).cuda_data_type);
}

struct Shape {
  int64_t m, n, k;
};

class ApiGemmEx : public GpuTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    int ordinal = 0, major = 0;
    ASSERT_EQ(cudaGetDevice(&ordinal), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal), cudaSuccess);
    if (major < 8) GTEST_SKIP() << "16-bit tensor-core kernels need compute capability 8.0";
    parse_type_name(GetParam(), dtype_, c_dtype_);
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
  double bound() const { return verification_tolerance(dtype_, c_dtype_); }
  // TF32 is FP32 storage asked for with CUBLAS_COMPUTE_32F_FAST_TF32, FFMA with CUBLAS_COMPUTE_32F_PEDANTIC;
  // everything else computes in FP32.
  gemmforgeComputeType_t compute() const {
    if (dtype_ == Dtype::kTf32) return GEMMFORGE_COMPUTE_32F_FAST_TF32;
    if (dtype_ == Dtype::kFfma) return GEMMFORGE_COMPUTE_32F_PEDANTIC;
    return GEMMFORGE_COMPUTE_32F;
  }

  // Runs one case through gemmforgeGemmEx, the way an application calls cublasGemmEx.
  std::string check(GemmCase c) {
    c.dtype = dtype_, c.c_dtype = c_dtype_;
    // A TF32 product differs from cuBLAS's by up to 2 * 2^-10; where K is tiny and beta * C cancels most of
    // alpha * A * B, that difference is no longer small against the result. Such TF32 cases keep beta = 0.
    if (c.dtype == Dtype::kTf32 && c.k < 16) c.beta = 0.0f;
    gemmforgeStatus_t status = GEMMFORGE_STATUS_SUCCESS;
    const CaseResult r = harness().run(c, [&](const GemmCall& call, cudaStream_t stream) {
      gemmforgeSetStream(handle_, stream);
      status = gemmforgeGemmEx(handle_, capi_op(call.op_a), capi_op(call.op_b), static_cast<int>(call.m),
                               static_cast<int>(call.n), static_cast<int>(call.k), &call.alpha, call.a,
                               capi_type(dtype_), static_cast<int>(call.lda), call.b, capi_type(dtype_),
                               static_cast<int>(call.ldb), &call.beta, call.c, capi_type(c_dtype_),
                               static_cast<int>(call.ldc), compute(), GEMMFORGE_GEMM_DEFAULT);
    });
    if (status != GEMMFORGE_STATUS_SUCCESS) {
      return fmt::format("{}: {} {}", c.describe(), gemmforgeGetStatusString(status),
                         gemmforgeGetLastErrorMessage());
    }
    return r.passes(bound()) ? "" : fmt::format("{}: {} (bound {:.3g})", c.describe(), r.describe(), bound());
  }

  TempDatabase database_;
  gemmforgeHandle_t handle_ = nullptr;
  Dtype dtype_ = Dtype::kF32;
  Dtype c_dtype_ = Dtype::kF32;
};

TEST_P(ApiGemmEx, MatchesCublasGemmExOverTheCorrectnessMatrix) {
  const std::vector<Shape> shapes = {{1, 1, 1},        {17, 33, 65},       {127, 129, 255},
                                     {8, 4096, 4096},  {1000, 1000, 1000}, {1024, 50257, 768},
                                     {777, 1333, 2049}};
  std::vector<std::string> failures;
  int checked = 0;
  for (const Shape& s : shapes) {
    for (Op op_a : {Op::kN, Op::kT}) {
      for (Op op_b : {Op::kN, Op::kT}) {
        for (int variant = 0; variant < 3; ++variant) {
          GemmCase c;
          c.order = Order::kColMajor;
          c.op_a = op_a, c.op_b = op_b, c.m = s.m, c.n = s.n, c.k = s.k;
          c.beta = variant == 0 ? 0.0f : variant == 1 ? -0.75f : 0.5f;  // beta = 0: C starts as NaN
          c.alpha = variant == 0 ? 1.0f : 1.5f;
          c.pad = variant == 0 ? 0 : variant == 1 ? 3 : 8;
          ++checked;
          if (std::string f = check(c); !f.empty() && failures.size() < 20) failures.push_back(f);
        }
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(shapes.size()) * 12);
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

TEST_P(ApiGemmEx, QuickPathsScaleCWithoutReadingAOrB) {
  std::vector<std::string> failures;
  for (float beta : {0.0f, 0.5f}) {
    GemmCase c;
    c.order = Order::kColMajor;
    c.m = 33, c.n = 17, c.k = 0, c.beta = beta, c.pad = 1;
    if (std::string f = check(c); !f.empty()) failures.push_back(f);
    c.k = 64, c.alpha = 0.0f;
    if (std::string f = check(c); !f.empty()) failures.push_back(f);
  }
  EXPECT_TRUE(failures.empty()) << fmt::format("{}", fmt::join(failures, "\n"));
}

// A batch of column-major products, the strides leaving gaps between the matrices, against
// cublasGemmStridedBatchedEx (cublasSgemmStridedBatched for FP32).
TEST_P(ApiGemmEx, StridedBatchesMatchCublas) {
  const int m = 97, n = 65, k = 130, batch = 5;
  // op(A) = A^T: A is stored k x m, so lda >= k.
  const int lda = k + 1, ldb = k + 3, ldc = m + 2;
  const long long stride_a = static_cast<long long>(lda) * m + 5;
  const long long stride_b = static_cast<long long>(ldb) * n + 7;
  const long long stride_c = static_cast<long long>(ldc) * n + 9;
  const size_t in_bytes = element_bytes(dtype_), out_bytes = element_bytes(c_dtype_);
  cuda::DeviceBuffer a(stride_a * batch * in_bytes), b(stride_b * batch * in_bytes);
  cuda::DeviceBuffer c(stride_c * batch * out_bytes), ref(stride_c * batch * out_bytes);
  cuda::DeviceBuffer staging(std::max({stride_a, stride_b, stride_c}) * batch * sizeof(float));
  cudaStream_t stream = harness().stream();
  const auto& u = harness().utilities();
  const auto fill = [&](cuda::DeviceBuffer& buffer, long long count, uint64_t seed, Dtype dtype) {
    u.fill_uniform(staging.as<float>(), 1, count, 0, seed, -1.0f, 1.0f, stream);
    u.convert(staging.as<float>(), buffer.data(), count, dtype, stream);
  };
  fill(a, stride_a * batch, 11, dtype_);
  fill(b, stride_b * batch, 12, dtype_);
  fill(c, stride_c * batch, 13, c_dtype_);
  GEMMFORGE_CUDA_CHECK(
      cudaMemcpyAsync(ref.data(), c.data(), stride_c * batch * out_bytes, cudaMemcpyDeviceToDevice, stream));
  const float alpha = 1.25f, beta = -0.5f;
  cuda::CublasHandle cublas;
  cublas.set_stream(stream);
  const DtypeFacts& in = dtype_facts(dtype_);
  const DtypeFacts& out = dtype_facts(c_dtype_);
  GEMMFORGE_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      cublas.get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, a.data(),
      static_cast<cudaDataType_t>(in.cuda_data_type), lda, stride_a, b.data(),
      static_cast<cudaDataType_t>(in.cuda_data_type), ldb, stride_b, &beta, ref.data(),
      static_cast<cudaDataType_t>(out.cuda_data_type), ldc, stride_c, batch,
      static_cast<cublasComputeType_t>(in.cublas_compute_type), CUBLAS_GEMM_DEFAULT));
  ASSERT_EQ(gemmforgeSetStream(handle_, stream), GEMMFORGE_STATUS_SUCCESS);
  gemmforgeStatus_t status;
  if (dtype_ == Dtype::kF32 && c_dtype_ == Dtype::kF32) {
    status = gemmforgeSgemmStridedBatched(handle_, GEMMFORGE_OP_T, GEMMFORGE_OP_N, m, n, k, &alpha,
                                          a.as<float>(), lda, stride_a, b.as<float>(), ldb, stride_b, &beta,
                                          c.as<float>(), ldc, stride_c, batch);
  } else {
    status = gemmforgeGemmStridedBatchedEx(handle_, GEMMFORGE_OP_T, GEMMFORGE_OP_N, m, n, k, &alpha, a.data(),
                                           capi_type(dtype_), lda, stride_a, b.data(), capi_type(dtype_), ldb,
                                           stride_b, &beta, c.data(), capi_type(c_dtype_), ldc, stride_c,
                                           batch, compute(), GEMMFORGE_GEMM_DEFAULT);
  }
  ASSERT_EQ(status, GEMMFORGE_STATUS_SUCCESS) << gemmforgeGetLastErrorMessage();
  for (int i = 0; i < batch; ++i) {
    const auto* c_i = static_cast<const char*>(c.data()) + i * stride_c * out_bytes;
    const auto* ref_i = static_cast<const char*>(ref.data()) + i * stride_c * out_bytes;
    const rtc::Comparison r = u.compare(c_i, ldc, ref_i, ldc, n, m, c_dtype_, stream);
    EXPECT_TRUE(r.passes(bound())) << "batch " << i << ": rel error " << r.rel_error << ", " << r.nonfinite
                                   << " non-finite (bound " << bound() << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, ApiGemmEx,
                         ::testing::Values("bf16", "f16", "bf16>f32", "f16>f32", "f32", "tf32", "ffma"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return type_test_name(info.param);
                         });

}  // namespace
}  // namespace gemmforge::testing
