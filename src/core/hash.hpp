// Stable 64-bit content hashes (FNV-1a) for cache keys and template identities.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gemmforge {

class Hasher {
 public:
  Hasher& add(std::string_view bytes) {
    for (unsigned char c : bytes) {
      state_ ^= c;
      state_ *= 0x100000001b3ULL;
    }
    // A separator keeps ("ab", "c") and ("a", "bc") apart.
    state_ ^= 0xff;
    state_ *= 0x100000001b3ULL;
    return *this;
  }
  uint64_t value() const { return state_; }
  /// 16 lowercase hex digits.
  std::string hex() const;

 private:
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

inline std::string hash_hex(std::string_view bytes) {
  return Hasher().add(bytes).hex();
}

}  // namespace gemmforge
