// A tuning database shared by the threads of a process: the connection is not thread-safe, so every use
// holds its lock.
#pragma once

#include <mutex>
#include <string>
#include <utility>

#include "db/database.hpp"

namespace gemmforge::runtime {

class SharedDatabase {
 public:
  explicit SharedDatabase(db::Database database) : database_(std::move(database)) {}
  SharedDatabase(const SharedDatabase&) = delete;
  SharedDatabase& operator=(const SharedDatabase&) = delete;

  /// Runs `use(database)` holding the lock and returns what it returns.
  template <typename Use>
  auto with(Use&& use) {
    std::lock_guard<std::mutex> lock(mutex_);
    return use(database_);
  }

  const std::string& path() const { return database_.path(); }
  bool read_only() const { return database_.read_only(); }
  const std::string& read_only_reason() const { return database_.read_only_reason(); }

 private:
  std::mutex mutex_;
  db::Database database_;
};

}  // namespace gemmforge::runtime
