// Parallel NVRTC compilation.
#include "rtc/compile_pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <fstream>
#include <set>
#include <thread>

namespace gemmforge::rtc {

unsigned count_cores(const std::vector<std::string>& sibling_lists) {
  const std::set<std::string> cores(sibling_lists.begin(), sibling_lists.end());
  return std::max(1u, static_cast<unsigned>(cores.size()));
}

unsigned default_compile_threads() {
  static const unsigned cores = [] {
    const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return hardware;
    std::vector<std::string> siblings;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &allowed)) continue;
      std::ifstream file("/sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                         "/topology/thread_siblings_list");
      std::string list;
      if (!(file >> list)) return hardware;  // no topology to read: every hardware thread
      siblings.push_back(list);
    }
    return siblings.empty() ? hardware : count_cores(siblings);
  }();
  return cores;
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
