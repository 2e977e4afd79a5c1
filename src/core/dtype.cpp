// Facts about the element types.
#include "core/dtype.hpp"

#include <algorithm>
#include <array>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace gemmforge {
namespace {

// cudaDataType_t and cublasComputeType_t values (library_types.h, cublas_api.h), which core does not include.
constexpr int kCudaR32F = 0;
constexpr int kCudaR16F = 2;
constexpr int kCudaR16BF = 14;
constexpr int kComputeF32 = 68;          // CUBLAS_COMPUTE_32F
constexpr int kComputeF32Pedantic = 69;  // CUBLAS_COMPUTE_32F_PEDANTIC
constexpr int kComputeF32FastTf32 = 77;  // CUBLAS_COMPUTE_32F_FAST_TF32

// Indexed by Dtype.
constexpr std::array<DtypeFacts, 5> kFacts = {{
    {Dtype::kF32, "f32", 4, kCudaR32F, kComputeF32, false, 1e-5, 0x1p-23},
    // TF32 operands keep 10 mantissa bits: a product of two operands truncated to TF32 differs from one
    // rounded otherwise, or from the FP32 product cuBLAS computes where its tensor-core kernels do not run,
    // by up to 2 * 2^-10 (3.1e-3 measured on a single product, K = 1).
    {Dtype::kTf32, "tf32", 4, kCudaR32F, kComputeF32FastTf32, true, 4e-3, 0x1p-23},
    {Dtype::kF16, "f16", 2, kCudaR16F, kComputeF32, true, 1e-4, 0x1p-10},
    {Dtype::kBf16, "bf16", 2, kCudaR16BF, kComputeF32, true, 1e-4, 0x1p-7},
    // FP32 by plain FFMA, against cuBLAS's pedantic FP32 (no reduced-precision shortcut either).
    {Dtype::kFfma, "ffma", 4, kCudaR32F, kComputeF32Pedantic, false, 1e-5, 0x1p-23},
}};

}  // namespace

const DtypeFacts& dtype_facts(Dtype dtype) noexcept {
  const auto index = static_cast<size_t>(dtype);
  return kFacts[index < kFacts.size() ? index : 0];
}

int element_bytes(Dtype dtype) noexcept {
  return dtype_facts(dtype).bytes;
}

bool dtype_from_cuda(int cuda_data_type, Dtype& dtype) noexcept {
  for (const DtypeFacts& facts : kFacts) {
    // FP32 storage means FP32; TF32 and FFMA are ways to multiply it, never storage types.
    if (facts.cuda_data_type == cuda_data_type && facts.dtype != Dtype::kTf32 &&
        facts.dtype != Dtype::kFfma) {
      dtype = facts.dtype;
      return true;
    }
  }
  return false;
}

double verification_tolerance(Dtype input, Dtype output) noexcept {
  const double rounding = output == Dtype::kF32 ? 0.0 : dtype_facts(output).epsilon;
  return dtype_facts(input).accumulation_tolerance + rounding;
}

double verified_error_bound(Dtype input, Dtype output, double error_bound) noexcept {
  return std::max(error_bound, verification_tolerance(input, output));
}

std::vector<std::pair<Dtype, Dtype>> type_pairs() {
  std::vector<std::pair<Dtype, Dtype>> pairs;
  for (const DtypeFacts& input : kFacts) {
    for (const DtypeFacts& output : kFacts) {
      if (output_allowed(input.dtype, output.dtype)) pairs.emplace_back(input.dtype, output.dtype);
    }
  }
  return pairs;
}

double peak_tflops(Dtype dtype, const DeviceInfo& device) noexcept {
  if (!dtype_facts(dtype).tensor_cores) return device.fp32_peak_tflops();
  // Dense multiply-adds per SM per clock of the tensor cores with FP32 accumulation for 16-bit operands:
  // 1024 on sm_80, 256 on the consumer parts (sm_86, sm_89), 2048 on sm_90 and newer (wgmma's rate;
  // mma.sync reaches part of it, which the fitted model learns). TF32 runs at half the 16-bit rate.
  const int cc = device.cc();
  double per_clock = 0;
  if (cc >= 90) {
    per_clock = 2048;
  } else if (cc == 80) {
    per_clock = 1024;
  } else if (cc >= 86) {
    per_clock = 256;
  }
  if (dtype == Dtype::kTf32) per_clock /= 2;
  return 2.0 * per_clock * device.sm_count * (device.clock_khz * 1e3) / 1e12;
}

}  // namespace gemmforge
