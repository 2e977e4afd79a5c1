// Waiting in tests for something another thread or process does: poll a condition under a deadline.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace gemmforge::test_support {

// Polls `done` until it holds or `seconds` pass; returns whether it held.
inline bool wait_until(const std::function<bool()>& done, double seconds = 10) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace gemmforge::test_support
