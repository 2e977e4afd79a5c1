// Compiles many requests at once on a fixed number of threads; NVRTC is thread-safe per program.
#pragma once

#include <vector>

#include "rtc/compiler.hpp"

namespace gemmforge::rtc {

/// Threads to compile on by default: the machine's hardware threads.
unsigned default_compile_threads();

/// Compiles every request on `threads` threads (0: default); results come back in request order.
std::vector<CompileResult> compile_all(const std::vector<CompileRequest>& requests, unsigned threads = 0);

}  // namespace gemmforge::rtc
