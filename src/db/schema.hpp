// The schema as an ordered list of migrations, parsed from db/schema.sql (embedded at build time), and
// the checks that tell a gemmforge database at some version from a foreign, newer or damaged file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace SQLite {
class Database;
}  // namespace SQLite

namespace gemmforge::db {

/// One step of the schema: the SQL that takes a database from version-1 to version.
struct Migration {
  int version = 0;
  std::string description;
  std::string sql;
};

/// Splits a schema file at its "-- migration N: description" lines. Versions must run 1, 2, 3, ...
/// Throws InvalidArgumentError naming `origin` and the line otherwise.
std::vector<Migration> parse_migrations(std::string_view text, const std::string& origin);

/// The migrations of this build: db/schema.sql as embedded into the library.
const std::vector<Migration>& builtin_migrations();

/// What a database holds before it is migrated.
struct SchemaState {
  int version = 0;  ///< largest version in schema_version, 0 when there is none
  bool has_version_table = false;
  int table_count = 0;  ///< tables other than SQLite's own
};

/// Reads the state; throws SQLite::Exception (e.g. SQLITE_NOTADB for a file that is not a database).
SchemaState read_schema_state(SQLite::Database& connection);

/// Runs the migrations above `from` and records each in schema_version; the caller owns the transaction.
void apply_migrations(SQLite::Database& connection, const std::vector<Migration>& migrations, int from);

/// Compares the tables and columns of `connection` with those `migrations` create: returns an empty
/// string when every expected one exists, else what is missing ("table 'trials' is missing").
std::string find_schema_damage(SQLite::Database& connection, const std::vector<Migration>& migrations);

}  // namespace gemmforge::db
