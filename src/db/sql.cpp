// Error translation, optional columns and problem columns shared by the database's source files.
#include "db/sql.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <thread>

#include "core/dtype.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db::sql {

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t seconds = static_cast<std::time_t>(millis / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1,
                     utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis % 1000);
}

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string advice(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return fmt::format(
          "another process kept the database locked for more than {} s; retry when it has finished, or "
          "set GEMMFORGE_BUSY_TIMEOUT (seconds) to wait longer",
          Database::busy_timeout_ms() / 1000.0);
    case SQLITE_READONLY:
    case SQLITE_PERM:
      return "the file or its folder is not writable; fix the permissions or pass --db with another path";
    case SQLITE_FULL:
      return "the disk is full; free some space and retry";
    case SQLITE_IOERR:
      return "the disk reported an I/O error; check it and retry";
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return "the file is damaged; move it away (gemmforge then starts a new one) or restore it from a "
             "backup";
    case SQLITE_CANTOPEN:
      return "check that its folder exists and is writable, or pass --db with another path";
    case SQLITE_CONSTRAINT:
      return "a value breaks a rule of the schema, e.g. an id that names no row";
    default:
      return "please report this with the message above";
  }
}

}  // namespace

BusyDeadline::BusyDeadline() : deadline_ms_(now_ms() + Database::busy_timeout_ms()) {}

BusyDeadline::BusyDeadline(int timeout_ms)
    : deadline_ms_(now_ms() + std::min(timeout_ms, Database::busy_timeout_ms())) {}

bool BusyDeadline::wait() {
  const int64_t left = deadline_ms_ - now_ms();
  if (left <= 0) return false;
  std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(sleep_ms_, left)));
  sleep_ms_ = std::min(sleep_ms_ * 2, 100);
  return true;
}

bool is_busy(const SQLite::Exception& error) {
  const int code = error.getErrorCode() & 0xff;
  return code == SQLITE_BUSY || code == SQLITE_LOCKED;
}

void throw_database_error(const std::string& path, const char* action, const SQLite::Exception& error) {
  throw DatabaseError(
      fmt::format("{}: could not {}: {}; {}", path, action, error.what(), advice(error.getErrorCode())));
}

void bind_optional(SQLite::Statement& statement, const char* name, const std::optional<double>& value) {
  if (value) {
    statement.bind(name, *value);
  } else {
    statement.bind(name);
  }
}

void bind_optional(SQLite::Statement& statement, const char* name, const std::optional<int64_t>& value) {
  if (value) {
    statement.bind(name, *value);
  } else {
    statement.bind(name);
  }
}

std::optional<double> optional_double(const SQLite::Column& column) {
  if (column.isNull()) return std::nullopt;
  return column.getDouble();
}

std::optional<int64_t> optional_int64(const SQLite::Column& column) {
  if (column.isNull()) return std::nullopt;
  return column.getInt64();
}

void bind_problem(SQLite::Statement& statement, const KernelProblem& problem) {
  statement.bind(":dtype", to_string(problem.dtype));
  statement.bind(":c_dtype", to_string(problem.c_dtype));
  statement.bind(":a_trans", problem.a_trans ? 1 : 0);
  statement.bind(":b_trans", problem.b_trans ? 1 : 0);
  statement.bind(":m", problem.m);
  statement.bind(":n", problem.n);
  statement.bind(":k", problem.k);
  // Stored in bytes (schema migration 2).
  statement.bind(":align_a", align_bytes(problem.align_a, problem.dtype));
  statement.bind(":align_b", align_bytes(problem.align_b, problem.dtype));
  statement.bind(":align_c", align_bytes(problem.align_c, problem.c_dtype));
}

void throw_unreadable(const char* column, const std::string& text, const std::exception& error) {
  throw SQLite::Exception(
      fmt::format("column {} holds '{}', which this gemmforge cannot read ({})", column, text, error.what()),
      SQLITE_CORRUPT);
}

KernelProblem read_problem(const SQLite::Statement& statement) {
  KernelProblem problem;
  problem.dtype = parse_stored(statement, "dtype", [](const std::string& text) { return parse_dtype(text); });
  problem.a_trans = statement.getColumn("a_trans").getInt() != 0;
  problem.b_trans = statement.getColumn("b_trans").getInt() != 0;
  problem.m = statement.getColumn("m").getInt64();
  problem.n = statement.getColumn("n").getInt64();
  problem.k = statement.getColumn("k").getInt64();
  problem.c_dtype =
      parse_stored(statement, "c_dtype", [](const std::string& text) { return parse_dtype(text); });
  problem.align_a = align_elements(statement.getColumn("align_a").getInt(), problem.dtype);
  problem.align_b = align_elements(statement.getColumn("align_b").getInt(), problem.dtype);
  problem.align_c = align_elements(statement.getColumn("align_c").getInt(), problem.c_dtype);
  return problem;
}

}  // namespace gemmforge::db::sql
