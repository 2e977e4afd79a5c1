// The vendor path of the runtime.
#include "runtime/vendor_gemm.hpp"

#include <limits>

namespace gemmforge::runtime {

bool VendorGemm::serves(const KernelCall& call) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  return call.lda <= kMax && call.ldb <= kMax && call.ldc <= kMax;
}

void VendorGemm::gemm(const KernelCall& call, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handle_) handle_.emplace();
  handle_->set_stream(stream);
  handle_->gemm_ex(call);
}

}  // namespace gemmforge::runtime
