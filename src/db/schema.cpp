// Parsing db/schema.sql into migrations, applying them, and recognizing damaged databases.
// The schema exists once, in db/schema.sql: src/db/CMakeLists.txt embeds that file into the library,
// so the code, the file a reader opens and the tables a database gets can never disagree.
#include "db/schema.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>

#include "core/embedded.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {

namespace db {

namespace {

constexpr std::string_view kMarker = "-- migration ";

bool blank_or_comment(std::string_view line) {
  const size_t first = line.find_first_not_of(" \t\r");
  return first == std::string_view::npos || line.substr(first, 2) == "--";
}

// "-- migration 3: add a column" -> (3, "add a column"); the caller has checked the prefix.
Migration parse_marker(std::string_view line, const std::string& origin, int line_number) {
  const std::string_view rest = line.substr(kMarker.size());
  const size_t colon = rest.find(':');
  Migration migration;
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  if (colon == std::string_view::npos || digits == 0 || digits != colon || digits > 6) {
    throw InvalidArgumentError(fmt::format("{}:{}: '{}' is not of the form '-- migration N: description'",
                                           origin, line_number, line));
  }
  migration.version = std::stoi(std::string(rest.substr(0, digits)));
  std::string_view description = rest.substr(colon + 1);
  while (!description.empty() && (description.front() == ' ')) description.remove_prefix(1);
  while (!description.empty() && (description.back() == ' ' || description.back() == '\r')) {
    description.remove_suffix(1);
  }
  migration.description = std::string(description);
  return migration;
}

}  // namespace

std::vector<Migration> parse_migrations(std::string_view text, const std::string& origin) {
  std::vector<Migration> migrations;
  int line_number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    if (line.substr(0, kMarker.size()) == kMarker) {
      Migration migration = parse_marker(line, origin, line_number);
      const int expected = static_cast<int>(migrations.size()) + 1;
      if (migration.version != expected) {
        throw InvalidArgumentError(
            fmt::format("{}:{}: migration {} follows migration {}; versions must run 1, 2, 3, ...", origin,
                        line_number, migration.version, expected - 1));
      }
      migrations.push_back(std::move(migration));
    } else if (!migrations.empty()) {
      migrations.back().sql.append(line).append("\n");
    } else if (!blank_or_comment(line)) {
      throw InvalidArgumentError(
          fmt::format("{}:{}: SQL before the first '-- migration 1: ...' line", origin, line_number));
    }
  }
  if (migrations.empty())
    throw InvalidArgumentError(fmt::format("{} holds no '-- migration N: ...' line", origin));
  for (const Migration& migration : migrations) {
    bool has_sql = false;
    std::string_view rest = migration.sql;
    while (!rest.empty() && !has_sql) {
      const size_t end = rest.find('\n');
      has_sql = !blank_or_comment(rest.substr(0, end));
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    if (!has_sql) {
      throw InvalidArgumentError(fmt::format("{}: migration {} holds no SQL", origin, migration.version));
    }
  }
  return migrations;
}

const std::vector<Migration>& builtin_migrations() {
  static const std::vector<Migration> migrations = [] {
    if (embedded::kSchemaCount != 1) throw InternalError("the library was built without db/schema.sql");
    const embedded::File& file = embedded::kSchema[0];
    const std::string_view text(reinterpret_cast<const char*>(file.data), file.size());
    try {
      return parse_migrations(text, "db/schema.sql (built in)");
    } catch (const InvalidArgumentError& e) {
      throw InternalError(e.what());
    }
  }();
  return migrations;
}

SchemaState read_schema_state(SQLite::Database& connection) {
  SchemaState state;
  SQLite::Statement tables(
      connection,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
      "ESCAPE '\\'");
  while (tables.executeStep()) {
    ++state.table_count;
    if (tables.getColumn(0).getString() == "schema_version") state.has_version_table = true;
  }
  if (state.has_version_table) {
    SQLite::Statement version(connection, "SELECT coalesce(max(version), 0) FROM schema_version");
    if (version.executeStep()) state.version = version.getColumn(0).getInt();
  }
  return state;
}

void apply_migrations(SQLite::Database& connection, const std::vector<Migration>& migrations, int from) {
  for (const Migration& migration : migrations) {
    if (migration.version <= from) continue;
    connection.exec(migration.sql);
    SQLite::Statement record(connection,
                             "INSERT INTO schema_version (version, description, applied_at) "
                             "VALUES (:version, :description, :applied_at)");
    record.bind(":version", migration.version);
    record.bind(":description", migration.description);
    record.bind(":applied_at", sql::utc_now());
    record.exec();
  }
}

std::string find_schema_damage(SQLite::Database& connection, const std::vector<Migration>& migrations) {
  // The expected tables are whatever the migrations create, so this check never needs updating.
  SQLite::Database expected(":memory:", SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
  apply_migrations(expected, migrations, 0);
  SQLite::Statement tables(
      expected,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' "
      "ESCAPE '\\' ORDER BY name");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    SQLite::Statement expected_columns(expected, "SELECT name FROM pragma_table_info(?)");
    expected_columns.bind(1, table);
    SQLite::Statement actual_columns(connection, "SELECT name FROM pragma_table_info(?)");
    actual_columns.bind(1, table);
    std::vector<std::string> actual;
    while (actual_columns.executeStep()) actual.push_back(actual_columns.getColumn(0).getString());
    if (actual.empty()) return fmt::format("table '{}' is missing", table);
    while (expected_columns.executeStep()) {
      const std::string column = expected_columns.getColumn(0).getString();
      if (std::find(actual.begin(), actual.end(), column) == actual.end()) {
        return fmt::format("table '{}' has no column '{}'", table, column);
      }
    }
  }
  return {};
}

}  // namespace db
}  // namespace gemmforge
