// Opening a tuning database: where it lives, telling a usable file from one to reject, migrating, the
// connection's settings, and the write transactions every write method runs in.
#include "db/database.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

constexpr const char* kInMemory = ":memory:";
constexpr const char* kMoveAway = "move it away or pass --db with another path";

bool is_file(const std::string& path) {
  return path != kInMemory;
}

void create_parent_folders(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(parent, error);
  if (error) {
    throw DatabaseError(
        fmt::format("cannot create the folder {} for the tuning database: {}; "
                    "pass --db (or set GEMMFORGE_DB) with a writable path",
                    parent.string(), error.message()));
  }
}

// Throws the DatabaseError a state deserves when this build cannot use it as it is.
void reject_unusable(const std::string& path, const SchemaState& state, int latest) {
  if (!state.has_version_table && state.table_count > 0) {
    throw DatabaseError(fmt::format(
        "{} is not a gemmforge database (it is a SQLite database without a schema_version table); {}", path,
        kMoveAway));
  }
  if (state.has_version_table && state.version == 0) {
    throw DatabaseError(fmt::format(
        "{} is a damaged gemmforge database (schema_version is empty); move it away (gemmforge then starts a "
        "new one) or restore it from a backup",
        path));
  }
  if (state.version > latest) {
    throw DatabaseError(fmt::format(
        "{} was written by a newer gemmforge (schema version {}; this build knows versions up to {}); "
        "upgrade gemmforge, or pass --db with another path",
        path, state.version, latest));
  }
}

void reject_damaged(const std::string& path, const std::string& damage) {
  if (damage.empty()) return;
  throw DatabaseError(fmt::format(
      "{} is a damaged gemmforge database ({}); move it away (gemmforge then starts a new one) or restore it "
      "from a backup",
      path, damage));
}

// SQLite errors met while opening mean the file is not what it should be, not that an action failed.
[[noreturn]] void throw_open_error(const std::string& path, const SQLite::Exception& error) {
  const int code = error.getErrorCode() & 0xff;
  if (code == SQLITE_NOTADB) {
    throw DatabaseError(
        fmt::format("{} is not a gemmforge database ({}); {}", path, error.what(), kMoveAway));
  }
  if (code == SQLITE_CORRUPT) reject_damaged(path, error.what());
  sql::throw_database_error(path, "open the tuning database", error);
}

// Decides on a read-only connection whether an existing file is usable, so that a file rejected here is
// certainly left as it was (a read-only connection cannot even checkpoint a WAL into it).
void inspect_existing_file(const std::string& path, const std::vector<Migration>& migrations) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return;
  SQLite::Database reader(path, SQLite::OPEN_READONLY, sql::kBusyTimeoutMs);
  const SchemaState state = read_schema_state(reader);
  reject_unusable(path, state, migrations.back().version);
  // At the current version nothing will be written, so the tables can be checked here already; older
  // databases are checked after migrating, inside the migration's transaction.
  if (state.version == migrations.back().version)
    reject_damaged(path, find_schema_damage(reader, migrations));
}

}  // namespace

Database Database::open(const std::string& path) {
  return open(path, builtin_migrations());
}

Database Database::open(const std::string& path, const std::vector<Migration>& migrations) {
  if (path.empty()) {
    throw InvalidArgumentError("the tuning database path is empty; pass a file path or \":memory:\"");
  }
  if (migrations.empty()) throw InternalError("Database::open needs at least one migration");
  if (is_file(path)) create_parent_folders(path);
  try {
    if (is_file(path)) inspect_existing_file(path, migrations);
    auto connection = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                                                         sql::kBusyTimeoutMs);
    Database database(std::move(connection), path);
    database.migrate(migrations);
    return database;
  } catch (const SQLite::Exception& error) {
    throw_open_error(path, error);
  }
}

void Database::migrate(const std::vector<Migration>& migrations) {
  SQLite::Database& db = connection();
  const int latest = migrations.back().version;
  if (read_schema_state(db).version < latest) {
    // Foreign keys must be off while a migration rebuilds a table; foreign_key_check replaces them.
    db.exec("PRAGMA foreign_keys = OFF");
    // IMMEDIATE takes the write lock first, so of two processes creating one file, the second waits
    // and then finds the schema in place.
    SQLite::Transaction transaction(db, SQLite::TransactionBehavior::IMMEDIATE);
    const SchemaState state = read_schema_state(db);
    reject_unusable(path_, state, latest);
    apply_migrations(db, migrations, state.version);
    SQLite::Statement violations(db, "PRAGMA foreign_key_check");
    if (violations.executeStep()) {
      throw DatabaseError(
          fmt::format("{}: migrating to schema version {} left rows of table '{}' pointing at "
                      "nothing; restore the file from a backup or move it away",
                      path_, latest, violations.getColumn(0).getString()));
    }
    reject_damaged(path_, find_schema_damage(db, migrations));
    transaction.commit();
  }
  db.exec("PRAGMA foreign_keys = ON");
  if (is_file(path_)) {
    // WAL lets readers (the runtime) work while a tuner writes; NORMAL sync is durable in WAL mode except
    // for the last commits before a power loss, and spares an fsync per trial.
    const std::string mode = db.execAndGet("PRAGMA journal_mode = WAL").getString();
    if (mode != "wal") {
      spdlog::warn("{}: SQLite kept journal mode '{}' instead of WAL; concurrent tuners will wait longer",
                   path_, mode);
    }
    db.exec("PRAGMA synchronous = NORMAL");
  }
}

std::string Database::default_path() {
  auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  if (std::string path = variable("GEMMFORGE_DB"); !path.empty()) return path;
  // The XDG spec says relative values are to be ignored.
  if (std::string cache = variable("XDG_CACHE_HOME"); !cache.empty() && cache.front() == '/') {
    return (std::filesystem::path(cache) / "gemmforge" / "gemmforge.db").string();
  }
  if (std::string home = variable("HOME"); !home.empty()) {
    return (std::filesystem::path(home) / ".cache" / "gemmforge" / "gemmforge.db").string();
  }
  throw DatabaseError(
      "no place for the tuning database: none of GEMMFORGE_DB, XDG_CACHE_HOME and HOME is set; "
      "set GEMMFORGE_DB or pass --db");
}

Database::Database(std::unique_ptr<SQLite::Database> connection, std::string path)
    : connection_(std::move(connection)), path_(std::move(path)) {}

Database::Database(Database&&) noexcept = default;
Database& Database::operator=(Database&&) noexcept = default;
Database::~Database() = default;

int Database::schema_version() const {
  return sql::guarded(path_, "read the schema version",
                      [&] { return read_schema_state(connection()).version; });
}

Database::WriteTransaction::WriteTransaction(Database& database) : database_(database) {
  sql::guarded(database_.path_, "start a write transaction", [&] {
    if (database_.open_transactions_ == 0) {
      // IMMEDIATE: a deferred transaction that reads and then writes can fail with SQLITE_BUSY at once
      // (the busy timeout does not apply) when another process wrote in between.
      outermost_ = std::make_unique<SQLite::Transaction>(database_.connection(),
                                                         SQLite::TransactionBehavior::IMMEDIATE);
    } else {
      database_.connection().exec("SAVEPOINT nested_write");
    }
  });
  ++database_.open_transactions_;
}

void Database::WriteTransaction::commit() {
  if (done_) throw InternalError("a write transaction was committed twice");
  sql::guarded(database_.path_, "commit a write transaction", [&] {
    if (outermost_) {
      outermost_->commit();
    } else {
      database_.connection().exec("RELEASE nested_write");
    }
  });
  done_ = true;
}

Database::WriteTransaction::~WriteTransaction() {
  --database_.open_transactions_;
  if (done_ || outermost_) return;  // SQLite::Transaction rolls back on destruction unless committed
  try {
    database_.connection().exec("ROLLBACK TO nested_write; RELEASE nested_write");
  } catch (const SQLite::Exception& error) {
    spdlog::error("{}: could not roll back a nested write: {}", database_.path_, error.what());
  }
}

}  // namespace gemmforge::db
