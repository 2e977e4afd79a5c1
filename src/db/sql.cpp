// Error translation, optional columns and problem columns shared by the database's source files.
#include "db/sql.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <ctime>
#include <limits>

#include "core/dtype.hpp"
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

const char* advice(int code) {
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "another process kept the database locked for more than 10 s; retry when it has finished";
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

void check_problem(const KernelProblem& problem) {
  constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();
  for (auto [name, value] :
       {std::pair{"m", problem.m}, std::pair{"n", problem.n}, std::pair{"k", problem.k}}) {
    if (value < 1 || value > kMaxSize) {
      throw InvalidArgumentError(fmt::format("problem {}: {} = {} is not a size in 1..{}",
                                             problem.to_string(), name, value, kMaxSize));
    }
  }
  if (!output_allowed(problem.dtype, problem.c_dtype)) {
    throw InvalidArgumentError(fmt::format("problem {}: {} operands cannot give a {} C", problem.to_string(),
                                           to_string(problem.dtype), to_string(problem.c_dtype)));
  }
  // Alignments in elements: a vector of at most 16 bytes.
  for (auto [name, value, dtype] : {std::tuple{"align_a", problem.align_a, problem.dtype},
                                    std::tuple{"align_b", problem.align_b, problem.dtype},
                                    std::tuple{"align_c", problem.align_c, problem.c_dtype}}) {
    const int widest = 16 / element_bytes(dtype);
    if (value < 1 || value > widest || (value & (value - 1)) != 0) {
      throw InvalidArgumentError(fmt::format("problem {}: {} = {} is not a power of two in 1..{}",
                                             problem.to_string(), name, value, widest));
    }
  }
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
