// Helpers the database's source files share: SQLite errors turned into DatabaseError with advice,
// optional columns, problem columns and timestamps. Internal to src/db.
#pragma once

#include <SQLiteCpp/SQLiteCpp.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "core/problem.hpp"

namespace gemmforge::db::sql {

/// The waiting of retry_busy: wait() sleeps (1 ms, doubling up to 100 ms) and says whether the time
/// left allowed it. The time is the busy timeout, or `timeout_ms` where that is shorter.
class BusyDeadline {
 public:
  BusyDeadline();
  explicit BusyDeadline(int timeout_ms);
  bool wait();

 private:
  int64_t deadline_ms_;
  int sleep_ms_ = 1;
};

/// Current UTC time as ISO-8601 text with milliseconds, e.g. "2025-01-31T12:00:00.000Z".
std::string utc_now();

/// Throws DatabaseError: "<path>: could not <action>: <sqlite message>; <advice for its error code>".
[[noreturn]] void throw_database_error(const std::string& path, const char* action,
                                       const SQLite::Exception& error);

/// Runs `body`, turning SQLite exceptions into DatabaseError naming the file and the action.
template <class Body>
auto guarded(const std::string& path, const char* action, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const SQLite::Exception& error) {
    throw_database_error(path, action, error);
  }
}

/// Resets a statement kept for reuse when it goes out of scope, so that it holds no read snapshot and no
/// pending write (a RETURNING statement keeps its write open until it is reset).
class ResetOnExit {
 public:
  explicit ResetOnExit(SQLite::Statement& statement) : statement_(statement) {}
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;
  ~ResetOnExit() { statement_.tryReset(); }

 private:
  SQLite::Statement& statement_;
};

/// Whether an error is another connection's lock (SQLITE_BUSY or SQLITE_LOCKED, any extended code).
bool is_busy(const SQLite::Exception& error);

/// Runs `body` again while it fails on another connection's lock, sleeping a little longer each time,
/// until Database::busy_timeout_ms() has passed; then the last exception propagates. SQLite's own busy
/// handler does not cover every case (a stale snapshot, a journal-mode change, recovery of a WAL file),
/// so operations that take locks run under this as well.
template <class Body>
auto retry_busy(Body&& body) -> decltype(body()) {
  BusyDeadline deadline;
  while (true) {
    try {
      return body();
    } catch (const SQLite::Exception& error) {
      if (!is_busy(error) || !deadline.wait()) throw;
    }
  }
}

void bind_optional(SQLite::Statement& statement, const char* name, const std::optional<double>& value);
void bind_optional(SQLite::Statement& statement, const char* name, const std::optional<int64_t>& value);
std::optional<double> optional_double(const SQLite::Column& column);
std::optional<int64_t> optional_int64(const SQLite::Column& column);

/// Binds :dtype, :c_dtype, :a_trans, :b_trans, :m, :n, :k, :align_a, :align_b, :align_c (alignments in
/// bytes).
void bind_problem(SQLite::Statement& statement, const KernelProblem& problem);
/// Reads the columns bind_problem names from the current row.
KernelProblem read_problem(const SQLite::Statement& statement);

/// Throws SQLite::Exception(SQLITE_CORRUPT) saying which column holds a value this build cannot read.
[[noreturn]] void throw_unreadable(const char* column, const std::string& text, const std::exception& error);

/// Parses a stored text value (a status, a dtype) with `parse`. A value this build cannot interpret
/// means a damaged file, so it throws SQLite::Exception(SQLITE_CORRUPT), which guarded() turns into a
/// DatabaseError naming the file.
template <class Parse>
auto parse_stored(const SQLite::Statement& row, const char* column, Parse&& parse) {
  const std::string text = row.getColumn(column).getString();
  try {
    return parse(text);
  } catch (const std::exception& error) {
    throw_unreadable(column, text, error);
  }
}

}  // namespace gemmforge::db::sql
