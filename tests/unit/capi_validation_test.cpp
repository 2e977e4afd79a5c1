// The C API without a GPU: every bad argument of gemmforgeSgemm gets the right status before any CUDA
// call (so nothing can be launched), valid calls get as far as the handle, creating a handle fails with
// GEMMFORGE_STATUS_NO_DEVICE, and error messages are kept per thread.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>

#include "cuda/device.hpp"
#include "gemmforge/gemmforge.h"
#include "gemmforge/gemmforge.hpp"

namespace gemmforge::testing {
namespace {

// A well-formed column-major call: C (m x n) = A (m x k) B (k x n), no handle.
struct Call {
  gemmforgeOperation_t transa = GEMMFORGE_OP_N;
  gemmforgeOperation_t transb = GEMMFORGE_OP_N;
  int m = 8, n = 6, k = 4;
  const float* alpha = &one;
  const float* a = dummy;
  int lda = 8;
  const float* b = dummy;
  int ldb = 4;
  const float* beta = &one;
  float* c = dummy;
  int ldc = 8;

  gemmforgeStatus_t run() const {
    return gemmforgeSgemm(nullptr, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  static inline float one = 1.0f;
  static inline float dummy[4] = {};  // never dereferenced: validation fails first
};

struct BadArgument {
  const char* name;
  std::function<void(Call&)> change;
  const char* mentions;
};

TEST(CapiValidation, EveryBadArgumentIsInvalidValue) {
  const std::vector<BadArgument> cases = {
      {"transa out of range", [](Call& c) { c.transa = static_cast<gemmforgeOperation_t>(5); }, "transa = 5"},
      {"transb out of range", [](Call& c) { c.transb = static_cast<gemmforgeOperation_t>(-1); },
       "transb = -1"},
      {"negative m", [](Call& c) { c.m = -1; }, "m = -1"},
      {"negative n", [](Call& c) { c.n = -3; }, "n = -3"},
      {"negative k", [](Call& c) { c.k = -2; }, "k = -2"},
      {"lda below m", [](Call& c) { c.lda = 7; }, "lda = 7"},
      {"lda below k for op T", [](Call& c) { c.transa = GEMMFORGE_OP_T, c.lda = 3; }, "lda = 3"},
      {"ldb below k", [](Call& c) { c.ldb = 3; }, "ldb = 3"},
      {"ldb below n for op C", [](Call& c) { c.transb = GEMMFORGE_OP_C, c.ldb = 5; }, "ldb = 5"},
      {"ldc below m", [](Call& c) { c.ldc = 7; }, "ldc = 7"},
      {"zero lda with m = 0", [](Call& c) { c.m = 0, c.lda = 0; }, "lda = 0"},
      {"null A", [](Call& c) { c.a = nullptr; }, "A is a null pointer"},
      {"null B", [](Call& c) { c.b = nullptr; }, "B is a null pointer"},
      {"null C", [](Call& c) { c.c = nullptr; }, "C is a null pointer"},
      {"null alpha", [](Call& c) { c.alpha = nullptr; }, "alpha is a NULL pointer"},
      {"null beta", [](Call& c) { c.beta = nullptr; }, "beta is a NULL pointer"},
  };
  for (const BadArgument& bad : cases) {
    Call call;
    bad.change(call);
    EXPECT_EQ(call.run(), GEMMFORGE_STATUS_INVALID_VALUE) << bad.name;
    const std::string message = gemmforgeGetLastErrorMessage();
    EXPECT_EQ(message.rfind("gemmforgeSgemm: ", 0), 0u) << message;
    EXPECT_NE(message.find(bad.mentions), std::string::npos) << bad.name << ": " << message;
  }
}

TEST(CapiValidation, ValidCallsReachTheHandleCheck) {
  // Quick-return shapes are valid as in cuBLAS, null matrices included where they hold no element.
  const std::vector<std::pair<const char*, std::function<void(Call&)>>> valid = {
      {"the plain call", [](Call&) {}},
      {"m = 0", [](Call& c) { c.m = 0, c.a = nullptr, c.c = nullptr, c.lda = 1, c.ldc = 1; }},
      {"n = 0", [](Call& c) { c.n = 0, c.b = nullptr, c.c = nullptr; }},
      {"k = 0 scales C", [](Call& c) { c.k = 0, c.a = nullptr, c.b = nullptr, c.ldb = 1; }},
      {"all ops",
       [](Call& c) { c.transa = GEMMFORGE_OP_T, c.transb = GEMMFORGE_OP_C, c.lda = 4, c.ldb = 6; }},
      {"padded leading dimensions", [](Call& c) { c.lda = 1000, c.ldb = 1000, c.ldc = 1000; }},
  };
  for (const auto& [name, change] : valid) {
    Call call;
    change(call);
    EXPECT_EQ(call.run(), GEMMFORGE_STATUS_NOT_INITIALIZED) << name << ": " << gemmforgeGetLastErrorMessage();
    EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("handle is NULL"), std::string::npos);
  }
}

TEST(CapiValidation, NullHandlesAndOutputPointers) {
  EXPECT_EQ(gemmforgeCreate(nullptr), GEMMFORGE_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemmforgeCreateWithDatabase(nullptr, ":memory:"), GEMMFORGE_STATUS_INVALID_VALUE);
  EXPECT_EQ(gemmforgeDestroy(nullptr), GEMMFORGE_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(gemmforgeSetStream(nullptr, nullptr), GEMMFORGE_STATUS_NOT_INITIALIZED);
  struct CUstream_st* stream = nullptr;
  EXPECT_EQ(gemmforgeGetStream(nullptr, &stream), GEMMFORGE_STATUS_NOT_INITIALIZED);
}

TEST(CapiValidation, CreatingAHandleWithoutAGpuIsNoDevice) {
  if (cuda::unavailable_reason().empty()) GTEST_SKIP() << "this machine has a GPU";
  gemmforgeHandle_t handle = reinterpret_cast<gemmforgeHandle_t>(0x1);
  EXPECT_EQ(gemmforgeCreateWithDatabase(&handle, ":memory:"), GEMMFORGE_STATUS_NO_DEVICE);
  EXPECT_EQ(handle, nullptr);
  const std::string message = gemmforgeGetLastErrorMessage();
  EXPECT_EQ(message.rfind("gemmforgeCreateWithDatabase: ", 0), 0u) << message;
  EXPECT_NE(message.find(cuda::unavailable_reason()), std::string::npos) << message;
  EXPECT_EQ(gemmforgeCreate(&handle), GEMMFORGE_STATUS_NO_DEVICE);
}

TEST(CapiValidation, TheCppRuntimeWithoutAGpuThrowsNoDeviceError) {
  if (cuda::unavailable_reason().empty()) GTEST_SKIP() << "this machine has a GPU";
  RuntimeOptions options;
  options.database_path = ":memory:";
  EXPECT_THROW(Runtime runtime(options), NoDeviceError);
}

TEST(CapiValidation, ErrorMessagesArePerThread) {
  Call bad;
  bad.m = -1;
  EXPECT_EQ(bad.run(), GEMMFORGE_STATUS_INVALID_VALUE);
  std::string other;
  std::thread([&] {
    other = gemmforgeGetLastErrorMessage();
    Call null_alpha;
    null_alpha.alpha = nullptr;
    null_alpha.run();
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("m = -1"), std::string::npos);
}

TEST(CapiValidation, StatusStringsNameEveryStatus) {
  std::set<std::string> names;
  for (int s = GEMMFORGE_STATUS_SUCCESS; s <= GEMMFORGE_STATUS_INTERNAL_ERROR; ++s) {
    const std::string name = gemmforgeGetStatusString(static_cast<gemmforgeStatus_t>(s));
    EXPECT_EQ(name.rfind("GEMMFORGE_STATUS_", 0), 0u);
    EXPECT_NE(name, "GEMMFORGE_STATUS_UNKNOWN") << s;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(GEMMFORGE_STATUS_INTERNAL_ERROR) + 1);
  EXPECT_STREQ(gemmforgeGetStatusString(static_cast<gemmforgeStatus_t>(99)), "GEMMFORGE_STATUS_UNKNOWN");
}

}  // namespace
}  // namespace gemmforge::testing

namespace gemmforge::testing {
namespace {

// A well-formed column-major gemmforgeGemmEx call with BF16 operands and C, no handle.
struct ExCall {
  gemmforgeDataType_t a_type = GEMMFORGE_R_16BF;
  gemmforgeDataType_t b_type = GEMMFORGE_R_16BF;
  gemmforgeDataType_t c_type = GEMMFORGE_R_16BF;
  gemmforgeComputeType_t compute = GEMMFORGE_COMPUTE_32F;
  int m = 8, n = 6, k = 4;
  int lda = 8, ldb = 4, ldc = 8;
  int batch = 2;
  long long stride_c = 48;
  const void* alpha = &one;

  gemmforgeStatus_t run() const {
    return gemmforgeGemmEx(nullptr, GEMMFORGE_OP_N, GEMMFORGE_OP_N, m, n, k, alpha, dummy, a_type, lda, dummy,
                           b_type, ldb, &one, dummy, c_type, ldc, compute, GEMMFORGE_GEMM_DEFAULT);
  }
  gemmforgeStatus_t run_batched() const {
    return gemmforgeGemmStridedBatchedEx(nullptr, GEMMFORGE_OP_N, GEMMFORGE_OP_N, m, n, k, alpha, dummy,
                                         a_type, lda, 32, dummy, b_type, ldb, 24, &one, dummy, c_type, ldc,
                                         stride_c, batch, compute, GEMMFORGE_GEMM_DEFAULT);
  }
  static inline float one = 1.0f;
  static inline float dummy[4] = {};  // never dereferenced: validation fails first
};

TEST(CapiGemmEx, EnumValuesMirrorCudaDataTypeAndCublasComputeType) {
  // cudaDataType_t: CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14; cublasComputeType_t: 68, 69, 74,
  // 75, 77.
  EXPECT_EQ(GEMMFORGE_R_32F, 0);
  EXPECT_EQ(GEMMFORGE_R_16F, 2);
  EXPECT_EQ(GEMMFORGE_R_16BF, 14);
  EXPECT_EQ(GEMMFORGE_COMPUTE_32F, 68);
  EXPECT_EQ(GEMMFORGE_COMPUTE_32F_PEDANTIC, 69);
  EXPECT_EQ(GEMMFORGE_COMPUTE_32F_FAST_16F, 74);
  EXPECT_EQ(GEMMFORGE_COMPUTE_32F_FAST_16BF, 75);
  EXPECT_EQ(GEMMFORGE_COMPUTE_32F_FAST_TF32, 77);
}

TEST(CapiGemmEx, ValidCombinationsReachTheHandle) {
  for (auto [a, c] :
       {std::pair{GEMMFORGE_R_16BF, GEMMFORGE_R_16BF}, std::pair{GEMMFORGE_R_16BF, GEMMFORGE_R_32F},
        std::pair{GEMMFORGE_R_16F, GEMMFORGE_R_16F}, std::pair{GEMMFORGE_R_16F, GEMMFORGE_R_32F},
        std::pair{GEMMFORGE_R_32F, GEMMFORGE_R_32F}}) {
    ExCall call;
    call.a_type = call.b_type = a, call.c_type = c;
    EXPECT_EQ(call.run(), GEMMFORGE_STATUS_NOT_INITIALIZED)
        << a << " " << c << ": " << gemmforgeGetLastErrorMessage();
    EXPECT_EQ(call.run_batched(), GEMMFORGE_STATUS_NOT_INITIALIZED) << gemmforgeGetLastErrorMessage();
  }
  ExCall tf32;
  tf32.a_type = tf32.b_type = tf32.c_type = GEMMFORGE_R_32F;
  tf32.compute = GEMMFORGE_COMPUTE_32F_FAST_TF32;
  EXPECT_EQ(tf32.run(), GEMMFORGE_STATUS_NOT_INITIALIZED) << gemmforgeGetLastErrorMessage();
}

TEST(CapiGemmEx, UnsupportedCombinationsAreNotSupportedAndNamed) {
  ExCall mixed;
  mixed.b_type = GEMMFORGE_R_16F;
  EXPECT_EQ(mixed.run(), GEMMFORGE_STATUS_NOT_SUPPORTED);
  EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("Btype GEMMFORGE_R_16F"), std::string::npos)
      << gemmforgeGetLastErrorMessage();
  ExCall cross;
  cross.a_type = cross.b_type = GEMMFORGE_R_16F;
  cross.c_type = GEMMFORGE_R_16BF;
  EXPECT_EQ(cross.run(), GEMMFORGE_STATUS_NOT_SUPPORTED);
  EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("Ctype GEMMFORGE_R_16BF"), std::string::npos)
      << gemmforgeGetLastErrorMessage();
  ExCall narrowing;
  narrowing.a_type = narrowing.b_type = GEMMFORGE_R_32F;
  EXPECT_EQ(narrowing.run_batched(), GEMMFORGE_STATUS_NOT_SUPPORTED) << "FP32 operands into a BF16 C";
}

TEST(CapiGemmEx, BadArgumentsAreInvalidValueBeforeTheHandle) {
  const std::vector<std::pair<const char*, std::function<void(ExCall&)>>> cases = {
      {"Atype = 7", [](ExCall& c) { c.a_type = static_cast<gemmforgeDataType_t>(7); }},
      {"Ctype = 3", [](ExCall& c) { c.c_type = static_cast<gemmforgeDataType_t>(3); }},
      {"computeType = 64", [](ExCall& c) { c.compute = static_cast<gemmforgeComputeType_t>(64); }},
      {"alpha is a NULL pointer", [](ExCall& c) { c.alpha = nullptr; }},
      {"lda = 7", [](ExCall& c) { c.lda = 7; }},
      {"m = -1", [](ExCall& c) { c.m = -1; }},
  };
  for (const auto& [mentions, change] : cases) {
    ExCall call;
    change(call);
    EXPECT_EQ(call.run(), GEMMFORGE_STATUS_INVALID_VALUE) << mentions;
    EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find(mentions), std::string::npos)
        << gemmforgeGetLastErrorMessage();
  }
  ExCall batch;
  batch.batch = -1;
  EXPECT_EQ(batch.run_batched(), GEMMFORGE_STATUS_INVALID_VALUE);
  EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("batchCount = -1"), std::string::npos);
  ExCall overlapping;
  overlapping.stride_c = 40;  // C is 8 x 6 with ldc 8: 48 elements
  EXPECT_EQ(overlapping.run_batched(), GEMMFORGE_STATUS_INVALID_VALUE);
  EXPECT_NE(std::string(gemmforgeGetLastErrorMessage()).find("strideC = 40"), std::string::npos);
}

}  // namespace
}  // namespace gemmforge::testing
