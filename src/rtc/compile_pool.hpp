// Compiles many requests at once on a fixed number of threads; NVRTC is thread-safe per program.
#pragma once

#include <string>
#include <vector>

#include "rtc/compiler.hpp"

namespace gemmforge::rtc {

/// Threads to compile on by default: one per core this process may run on. A second hardware thread on a
/// core adds little to a compute-bound compiler but slows each kernel down, and a search waits for its
/// batch's slowest kernel.
unsigned default_compile_threads();

/// Cores among the CPUs given by their sibling lists (one entry per CPU: the CPUs sharing its core, as
/// /sys/devices/system/cpu/cpuN/topology/thread_siblings_list writes them); at least one.
unsigned count_cores(const std::vector<std::string>& sibling_lists);

/// Compiles every request on `threads` threads (0: default); results come back in request order.
std::vector<CompileResult> compile_all(const std::vector<CompileRequest>& requests, unsigned threads = 0);

}  // namespace gemmforge::rtc
