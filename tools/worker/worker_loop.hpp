// The worker's request loop: read a frame, let the backend answer, write the reply, until shutdown,
// end of input, or a fatal reply.
#pragma once

#include "worker_backend.hpp"

namespace gemmforge::worker {

/// Exit codes of gemmforge-worker; the tuner reports them when the worker dies.
inline constexpr int kExitOk = 0;
inline constexpr int kExitUsage = 2;        ///< bad arguments, or the channel carried no frames
inline constexpr int kExitNoDevice = 3;     ///< no usable GPU
inline constexpr int kExitContextLost = 4;  ///< a CUDA error poisoned the context (reported first)
inline constexpr int kExitInternal = 70;

/// Serves requests from `in` to `out`; returns the exit code. Never throws.
int serve(Backend& backend, int in, int out);

}  // namespace gemmforge::worker
