// Compiling and launching the utility kernels.
#include "rtc/utility_kernels.hpp"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/template_library.hpp"
#include "cuda/check.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::rtc {
namespace {

constexpr int kBlock = 256;

// The architecture of the current device, "sm_90".
std::string current_arch() {
  int ordinal = 0;
  int major = 0;
  int minor = 0;
  GEMMFORGE_CUDA_CHECK(cudaGetDevice(&ordinal));
  GEMMFORGE_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
  GEMMFORGE_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal));
  return "sm_" + std::to_string(major * 10 + minor);
}

}  // namespace

const std::vector<char>& utility_cubin(const std::string& arch) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  CompileRequest request;
  request.source = library.support_source("util.cu");
  request.source_name = "util.cu";
  request.headers = library.headers();
  request.arch = arch;
  return compile_once_per_process(request);
}

UtilityKernels::UtilityKernels()
    : module_(utility_cubin(current_arch())),
      fill_uniform_(module_.kernel("gf_fill_uniform")),
      fill_bits_(module_.kernel("gf_fill_bits")),
      compare_(module_.kernel("gf_compare")),
      changed_padding_(module_.kernel("gf_count_changed_padding")),
      scale_(module_.kernel("gf_scale")),
      convert_(module_.kernel("gf_convert_floats")),
      fill_bits16_(module_.kernel("gf_fill_bits16")),
      compare_typed_(module_.kernel("gf_compare_typed")),
      changed_padding16_(module_.kernel("gf_count_changed_padding16")),
      scale16_(module_.kernel("gf_scale16")),
      stream_floor_(module_.kernel("gf_stream_floor")),
      scratch_(4 * sizeof(uint64_t)) {
  int ordinal = 0;
  int sms = 0;
  GEMMFORGE_CUDA_CHECK(cudaGetDevice(&ordinal));
  GEMMFORGE_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
  grid_ = sms * 4;
  stream_grid_ = sms * 8;
}

Comparison UtilityKernels::launch_compare(const cuda::Kernel& kernel, std::initializer_list<void*> inputs,
                                          cudaStream_t stream) const {
  GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, scratch_.bytes(), stream));
  double* sums = scratch_.as<double>();
  auto* counts = reinterpret_cast<unsigned long long*>(sums + 2);
  std::vector<void*> args(inputs);
  args.push_back(&sums);
  args.push_back(&counts);
  kernel.launch(dim3(grid_), dim3(kBlock), 0, stream, args.data());
  uint64_t host[4] = {};
  GEMMFORGE_CUDA_CHECK(cudaMemcpyAsync(host, scratch_.data(), sizeof(host), cudaMemcpyDeviceToHost, stream));
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
  double diff2 = 0;
  double ref2 = 0;
  std::memcpy(&diff2, &host[0], sizeof(double));
  std::memcpy(&ref2, &host[1], sizeof(double));
  Comparison out;
  out.nonfinite = host[2];
  out.rel_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  if (std::isnan(out.rel_error)) out.rel_error = INFINITY;
  return out;
}

void UtilityKernels::fill_uniform(float* data, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                                  float lo, float hi, cudaStream_t stream) const {
  if (rows <= 0 || cols <= 0) return;
  long long r = rows, c = cols, l = ld;
  unsigned long long s = seed;
  void* args[] = {&data, &r, &c, &l, &s, &lo, &hi};
  fill_uniform_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

void UtilityKernels::stream_floor(const void* a, int64_t a_bytes, const void* b, int64_t b_bytes, void* c,
                                  int64_t c_bytes, cudaStream_t stream) const {
  long long a_vectors = a_bytes / 16, b_vectors = b_bytes / 16, c_vectors = c_bytes / 16;
  unsigned never = 0x9e3779b9u;  // what the loads' XOR is never expected to be
  auto* sink = scratch_.as<unsigned>();
  void* args[] = {&a, &a_vectors, &b, &b_vectors, &c, &c_vectors, &never, &sink};
  stream_floor_.launch(dim3(stream_grid_), dim3(kBlock), 0, stream, args);
}

void UtilityKernels::fill_bits(void* data, int64_t count, uint32_t bits, cudaStream_t stream) const {
  if (count <= 0) return;
  long long n = count;
  unsigned b = bits;
  void* args[] = {&data, &n, &b};
  fill_bits_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

Comparison UtilityKernels::compare(const float* c, int64_t ldc, const float* ref, int64_t ldr, int64_t rows,
                                   int64_t cols, cudaStream_t stream) const {
  if (rows <= 0 || cols <= 0) return Comparison{};
  long long lc = ldc, lr = ldr, r = rows, n = cols;
  return launch_compare(compare_, {&c, &lc, &ref, &lr, &r, &n}, stream);
}

uint64_t UtilityKernels::changed_padding(const void* data, int64_t rows, int64_t cols, int64_t ld,
                                         uint32_t bits, cudaStream_t stream) const {
  if (rows <= 0 || ld <= cols) return 0;
  GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, sizeof(uint64_t), stream));
  auto* changed = scratch_.as<unsigned long long>();
  long long r = rows, c = cols, l = ld;
  unsigned b = bits;
  void* args[] = {&data, &r, &c, &l, &b, &changed};
  changed_padding_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
  uint64_t host = 0;
  GEMMFORGE_CUDA_CHECK(cudaMemcpyAsync(&host, changed, sizeof(host), cudaMemcpyDeviceToHost, stream));
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void UtilityKernels::scale(float* c, int64_t rows, int64_t cols, int64_t ldc, float beta,
                           cudaStream_t stream) const {
  if (rows <= 0 || cols <= 0) return;
  long long r = rows, n = cols, l = ldc;
  void* args[] = {&c, &r, &n, &l, &beta};
  scale_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

namespace {

bool is_16bit(Dtype dtype) {
  return dtype == Dtype::kF16 || dtype == Dtype::kBf16;
}

}  // namespace

void UtilityKernels::convert(const float* src, void* dst, int64_t count, Dtype dtype,
                             cudaStream_t stream) const {
  if (count <= 0) return;
  long long n = count;
  int type = static_cast<int>(dtype);
  void* args[] = {&src, &dst, &n, &type};
  convert_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

void UtilityKernels::poison(void* data, int64_t count, Dtype dtype, cudaStream_t stream) const {
  if (!is_16bit(dtype)) return fill_bits(data, count, kPoison, stream);
  if (count <= 0) return;
  long long n = count;
  unsigned b = kPoison16;
  void* args[] = {&data, &n, &b};
  fill_bits16_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

Comparison UtilityKernels::compare(const void* c, int64_t ldc, const void* ref, int64_t ldr, int64_t rows,
                                   int64_t cols, Dtype dtype, cudaStream_t stream) const {
  if (rows <= 0 || cols <= 0) return Comparison{};
  long long lc = ldc, lr = ldr, r = rows, n = cols;
  int type = static_cast<int>(dtype);
  return launch_compare(compare_typed_, {&c, &lc, &ref, &lr, &r, &n, &type}, stream);
}

uint64_t UtilityKernels::changed_padding(const void* data, int64_t rows, int64_t cols, int64_t ld,
                                         Dtype dtype, cudaStream_t stream) const {
  if (!is_16bit(dtype)) return changed_padding(data, rows, cols, ld, kPoison, stream);
  if (rows <= 0 || ld <= cols) return 0;
  GEMMFORGE_CUDA_CHECK(cudaMemsetAsync(scratch_.data(), 0, sizeof(uint64_t), stream));
  auto* changed = scratch_.as<unsigned long long>();
  long long r = rows, c = cols, l = ld;
  unsigned b = kPoison16;
  void* args[] = {&data, &r, &c, &l, &b, &changed};
  changed_padding16_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
  uint64_t host = 0;
  GEMMFORGE_CUDA_CHECK(cudaMemcpyAsync(&host, changed, sizeof(host), cudaMemcpyDeviceToHost, stream));
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
  return host;
}

void UtilityKernels::scale(void* c, int64_t rows, int64_t cols, int64_t ldc, float beta, Dtype dtype,
                           cudaStream_t stream) const {
  if (!is_16bit(dtype)) return scale(static_cast<float*>(c), rows, cols, ldc, beta, stream);
  if (rows <= 0 || cols <= 0) return;
  long long r = rows, n = cols, l = ldc;
  int type = static_cast<int>(dtype);
  void* args[] = {&c, &r, &n, &l, &beta, &type};
  scale16_.launch(dim3(grid_), dim3(kBlock), 0, stream, args);
}

}  // namespace gemmforge::rtc
