// A seeded random source whose sequence is the same with every compiler and standard library, so that a
// strategy replays identically for a given seed (the std distributions are implementation-defined).
#pragma once

#include <cstdint>

namespace gemmforge::tuner {

/// SplitMix64: tiny state, full 64-bit period, good enough to shuffle candidates.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound) for bound > 0. Draws below 2^64 mod bound are redrawn, which removes the
  /// bias a plain modulo would give small values.
  uint64_t below(uint64_t bound) {
    const uint64_t skew = (0 - bound) % bound;
    for (;;) {
      const uint64_t draw = next();
      if (draw >= skew) return draw % bound;
    }
  }

  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace gemmforge::tuner
