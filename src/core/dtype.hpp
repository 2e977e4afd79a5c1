// Facts about the element types, kept in one place.
#pragma once

#include "gemmforge/types.hpp"

namespace gemmforge {

/// Bytes of one element of A, B and C.
int element_bytes(Dtype dtype) noexcept;

}  // namespace gemmforge
