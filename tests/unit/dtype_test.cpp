// The element types' facts, and what they let serve a problem: pedantic FP32 (dtype ffma, cuBLAS's
// CUBLAS_COMPUTE_32F_PEDANTIC) is FP32 data that only plain FFMA kernels may multiply.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/device_info.hpp"
#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge {
namespace {

TEST(Dtype, PedanticFp32IsFp32DataAgainstCublassPedanticCompute) {
  EXPECT_EQ(parse_dtype("ffma"), Dtype::kFfma);
  EXPECT_EQ(parse_dtype("F32-Pedantic"), Dtype::kFfma);
  EXPECT_STREQ(to_string(Dtype::kFfma), "ffma");
  const DtypeFacts& ffma = dtype_facts(Dtype::kFfma);
  EXPECT_EQ(ffma.bytes, 4);
  EXPECT_EQ(ffma.cuda_data_type, dtype_facts(Dtype::kF32).cuda_data_type);
  EXPECT_EQ(ffma.cublas_compute_type, 69);  // CUBLAS_COMPUTE_32F_PEDANTIC
  EXPECT_FALSE(ffma.tensor_cores);
  EXPECT_EQ(verification_tolerance(Dtype::kFfma, Dtype::kF32),
            verification_tolerance(Dtype::kF32, Dtype::kF32));
  // FP32 storage reads back as FP32: pedantic is how it is multiplied, as TF32 is.
  Dtype stored = Dtype::kBf16;
  ASSERT_TRUE(dtype_from_cuda(ffma.cuda_data_type, stored));
  EXPECT_EQ(stored, Dtype::kF32);
  // C is FP32; the problem is a problem of its own, not the FP32 one.
  Dtype in = Dtype::kF32, out = Dtype::kBf16;
  parse_type_name("ffma", in, out);
  EXPECT_EQ(in, Dtype::kFfma);
  EXPECT_EQ(out, Dtype::kF32);
  EXPECT_THROW(parse_type_name("ffma>bf16", in, out), InvalidArgumentError);
  const KernelProblem pedantic = test_support::typed_problem(512, 512, 512, "nn", "ffma");
  EXPECT_NE(pedantic.to_string(), test_support::typed_problem(512, 512, 512, "nn", "f32").to_string());
  EXPECT_EQ(peak_tflops(Dtype::kFfma, DeviceInfo::nominal("sm_90")),
            peak_tflops(Dtype::kF32, DeviceInfo::nominal("sm_90")));
}

TEST(Dtype, PedanticFp32IsServedByThePlainFfmaTemplatesOnly) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  for (int cc : {80, 90}) {
    std::set<std::string> names;
    for (const KernelTemplate* t :
         candidates(library, test_support::typed_problem(1000, 1000, 1000, "nn", "ffma"), cc))
      names.insert(t->manifest.name());
    EXPECT_EQ(names, (std::set<std::string>{"sgemm_simt", "sgemm_skinny"})) << "sm_" << cc;
  }
  // The three-TF32-product templates compute FP32 at FP32-level accuracy, not by FFMA.
  const KernelProblem pedantic = test_support::typed_problem(64, 64, 64, "nn", "ffma");
  for (const char* name : {"sgemm_tf32x3", "gemm_wgmma", "gemm_tma"}) {
    EXPECT_FALSE(can_serve(library.get(name), pedantic, 90)) << name;
    EXPECT_TRUE(can_serve(library.get(name), test_support::typed_problem(64, 64, 64, "nn", "f32"), 90))
        << name;
  }
}

}  // namespace
}  // namespace gemmforge
