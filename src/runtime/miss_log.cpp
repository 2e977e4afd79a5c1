// The process-wide memory of misses already recorded.
#include "runtime/miss_log.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

bool record_miss_once(SharedDatabase& database, int64_t device_id, const KernelProblem& problem) {
  static std::mutex mutex;
  static std::set<std::tuple<std::string, int64_t, KernelProblem>> recorded;
  // Every ":memory:" database is a different one.
  const std::string where = database.path() == ":memory:"
                                ? fmt::format(":memory:@{}", static_cast<const void*>(&database))
                                : database.path();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!recorded.emplace(where, device_id, problem).second) return false;
  }
  try {
    database.with([&](db::Database& db) { db.record_miss(device_id, problem); });
    return true;
  } catch (const DatabaseError& e) {
    spdlog::warn("cannot record the untuned problem {}: {}", problem.to_string(), e.what());
    return false;
  }
}

}  // namespace gemmforge::runtime
