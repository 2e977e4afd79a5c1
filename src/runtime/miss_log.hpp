// Problems served without an exact tuned result, recorded in the tuning database so that
// `gemmforge tune --from-misses` tunes them next. Each is counted once per process, however often it runs.
#pragma once

#include <cstdint>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

/// Counts one miss of `problem` on device `device_id` of `database` unless this process already did.
/// Returns whether it recorded one. A database that cannot be written costs a warning, not the call.
bool record_miss_once(SharedDatabase& database, int64_t device_id, const KernelProblem& problem);

}  // namespace gemmforge::runtime
