// Parallel NVRTC compilation.
#include "rtc/compile_pool.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

namespace gemmforge::rtc {

unsigned default_compile_threads() {
  return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<CompileResult> compile_all(const std::vector<CompileRequest>& requests, unsigned threads) {
  std::vector<CompileResult> results(requests.size());
  if (threads == 0) threads = default_compile_threads();
  threads = std::min<unsigned>(threads, static_cast<unsigned>(std::max<size_t>(1, requests.size())));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < requests.size(); i = next++) {
      try {
        results[i] = compile(requests[i]);
      } catch (const std::exception& e) {  // NVRTC refusing a program is a failed compile like any other
        results[i].ok = false;
        results[i].error = e.what();
      }
    }
  };
  std::vector<std::jthread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  return results;
}

}  // namespace gemmforge::rtc
