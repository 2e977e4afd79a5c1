// Facts about the element types.
#include "core/dtype.hpp"

namespace gemmforge {

int element_bytes(Dtype dtype) noexcept {
  switch (dtype) {
    case Dtype::kF16:
    case Dtype::kBf16:
      return 2;
    case Dtype::kF32:
    case Dtype::kTf32:
      break;
  }
  return 4;
}

}  // namespace gemmforge
