// Opening a tuning database: where it lives, what a path must be, telling a usable file from one to
// reject, read-only use of files others own, migrating, the connection's settings, and the write
// transactions every write method runs in.
#include "db/database.hpp"

#include <SQLiteCpp/Backup.h>
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

namespace fs = std::filesystem;

constexpr const char* kInMemory = ":memory:";
constexpr const char* kMoveAway = "move it away or pass --db with another path";
constexpr int kDefaultBusyTimeoutS = 60;
constexpr int kCheckpointWaitMs = 3000;

bool is_file(const std::string& path) {
  return path != kInMemory;
}

bool access_writable(const std::string& path) {
  return ::access(path.c_str(), W_OK) == 0;
}

std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

bool is_cache_location(const std::string& path) {
  try {
    return fs::path(path).lexically_normal() == fs::path(Database::cache_path()).lexically_normal();
  } catch (const DatabaseError&) {
    return false;  // no HOME: there is no cache location
  }
}

// What the first bytes of a file say (https://www.sqlite.org/fileformat.html, "The Database Header").
struct FileHeader {
  uintmax_t size = 0;
  bool wal = false;  // file format version 2: write-ahead logging
};

uint32_t big_endian(const std::array<unsigned char, 100>& bytes, size_t at) {
  return (uint32_t{bytes[at]} << 24) | (uint32_t{bytes[at + 1]} << 16) | (uint32_t{bytes[at + 2]} << 8) |
         uint32_t{bytes[at + 3]};
}

// Reads the first bytes of a file of `size` bytes into `bytes`; returns how many, or nothing where the file
// cannot be read. Through SQLite's own file layer, not a stream: closing any descriptor of a file drops
// every POSIX lock the process holds on it, and SQLite keeps its descriptors of a file open while this
// process's connections hold locks on it. A plain read of a database this process has open already would
// drop its connections' locks, and another process closing its connection would then delete the WAL they
// still write.
std::optional<size_t> read_start(const std::string& path, std::array<unsigned char, 100>& bytes,
                                 uintmax_t size) {
  sqlite3* connection = nullptr;
  // Opening reads nothing yet, so a file that is no database opens as well.
  const int opened = sqlite3_open_v2(path.c_str(), &connection, SQLITE_OPEN_READONLY, nullptr);
  const std::unique_ptr<sqlite3, int (*)(sqlite3*)> closer(connection, sqlite3_close);
  sqlite3_file* file = nullptr;
  if (opened != SQLITE_OK ||
      sqlite3_file_control(connection, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr) {
    return std::nullopt;
  }
  const auto want = static_cast<int>(std::min<uintmax_t>(size, bytes.size()));
  const int read = file->pMethods->xRead(file, bytes.data(), want, 0);
  // A short read (the file shrank since its size was taken) fills the rest with zeros, which the checks
  // below reject.
  if (read != SQLITE_OK && read != SQLITE_IOERR_SHORT_READ) return std::nullopt;
  return static_cast<size_t>(want);
}

// How many bytes the header says the file holds, or nothing where that count is not valid: it is valid when
// the change counter at 24 equals the version-valid-for number at 92. Page size at 16 (1 stands for 65536),
// page count at 28.
std::optional<uintmax_t> counted_bytes(const std::array<unsigned char, 100>& bytes) {
  const uint32_t page_size =
      bytes[16] == 0 && bytes[17] == 1 ? 65536u : (uint32_t{bytes[16]} << 8) | bytes[17];
  const uint32_t pages = big_endian(bytes, 28);
  if (big_endian(bytes, 24) != big_endian(bytes, 92) || pages == 0) return std::nullopt;
  return uintmax_t{page_size} * pages;
}

uintmax_t file_size_of(const std::string& path) {
  std::error_code error;
  const uintmax_t size = fs::file_size(path, error);
  if (error) {
    throw DatabaseError(fmt::format("cannot read the tuning database {}: {}", path, error.message()));
  }
  return size;
}

// Rejects what is certainly no database before SQLite sees it, so that the message says what the file
// is; an empty file is a new database.
FileHeader read_header(const std::string& path) {
  // A checkpoint of another process's WAL writes page 1, which holds the new page count, before the pages
  // that grow the file. So while a WAL exists, a file shorter than its header says may be one mid-way
  // through a checkpoint; it is read again until the counts agree, for as long as a checkpoint of a large
  // WAL may take. A WAL left by a crash beside a file truly cut short costs that wait once.
  sql::BusyDeadline deadline(kCheckpointWaitMs);
  while (true) {
    FileHeader header;
    header.size = file_size_of(path);
    if (header.size == 0) return header;
    std::array<unsigned char, 100> bytes{};
    const std::optional<size_t> got = read_start(path, bytes, header.size);
    if (!got) {
      throw DatabaseError(
          fmt::format("cannot read the tuning database {}: permission denied or I/O error; "
                      "check its permissions",
                      path));
    }
    static constexpr char kMagic[] = "SQLite format 3";  // and its terminating zero: 16 bytes
    if (*got < 16 || !std::equal(kMagic, kMagic + 16, bytes.begin())) {
      size_t first = 0;
      while (first < *got && std::isspace(bytes[first])) ++first;
      const bool json = first < *got && (bytes[first] == '{' || bytes[first] == '[');
      throw DatabaseError(fmt::format(
          "{} is not a gemmforge database (not an SQLite file{}); {}", path,
          json ? ": it holds JSON, perhaps an export, which `gemmforge import` reads" : "", kMoveAway));
    }
    if (*got < bytes.size()) {
      throw DatabaseError(fmt::format(
          "{} is a truncated database ({} bytes, less than its own header); restore it from a backup or "
          "move it away (gemmforge then starts a new one)",
          path, header.size));
    }
    header.wal = bytes[18] == 2;
    // Taken after the header, so that a file that grew since its size was first taken is not called short.
    header.size = file_size_of(path);
    const std::optional<uintmax_t> counted = counted_bytes(bytes);
    if (!counted || header.size >= *counted) return header;
    std::error_code error;
    if (!header.wal || !fs::exists(path + "-wal", error) || !deadline.wait()) {
      throw DatabaseError(fmt::format(
          "{} is a truncated database: its header counts {} bytes, the file holds {}; restore it from a "
          "backup or move it away (gemmforge then starts a new one)",
          path, *counted, header.size));
    }
  }
}

// Checks the path before SQLite sees it: SQLite would call a folder a disk I/O error and would create
// a file in a folder that a typo named. Returns whether the file exists.
bool check_path(const std::string& path, const OpenOptions& options, const WritableCheck& writable) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (fs::is_directory(status)) {
    throw DatabaseError(
        fmt::format("{} is a folder, not a database file; pass --db with a file path, e.g. {}", path,
                    (fs::path(path) / "gemmforge.db").string()));
  }
  if (fs::exists(status)) {
    if (!fs::is_regular_file(status)) {
      throw DatabaseError(fmt::format(
          "{} is not a regular file (a device, pipe or socket); pass --db with a file path", path));
    }
    return true;
  }
  const std::string folder = folder_of(path);
  const bool may_create = options.access != Access::kReadOnly && options.create;
  if (!fs::is_directory(folder)) {
    if (fs::exists(folder)) {
      throw DatabaseError(
          fmt::format("{} is not a folder, so it cannot hold the tuning database {}; pass --db "
                      "with another path",
                      folder, path));
    }
    if (!may_create)
      throw NotFoundError(fmt::format("there is no tuning database at {} (no folder {})", path, folder));
    if (!is_cache_location(path)) {
      throw DatabaseError(
          fmt::format("the folder {} of the tuning database {} does not exist; create it (mkdir -p '{}') or "
                      "pass --db with "
                      "another path (gemmforge creates no folder but its own cache)",
                      folder, path, folder));
    }
    fs::create_directories(folder, error);
    if (error) {
      throw DatabaseError(
          fmt::format("cannot create the folder {} for the tuning database: {}; pass --db (or "
                      "set GEMMFORGE_DB) with a writable path",
                      folder, error.message()));
    }
  }
  if (!may_create) throw NotFoundError(fmt::format("there is no tuning database at {}", path));
  if (!writable(folder)) {
    throw DatabaseError(fmt::format(
        "cannot create the tuning database {}: its folder {} is not writable; pass --db with a path in a "
        "writable folder",
        path, folder));
  }
  return false;
}

// Why an existing file must be opened read-only, or empty when it may be written.
std::string why_read_only(const std::string& path, const WritableCheck& writable) {
  if (!writable(path)) return fmt::format("the file {} is not writable", path);
  // SQLite writes its journal, or the -wal and -shm files, beside the database.
  const std::string folder = folder_of(path);
  if (!writable(folder)) return fmt::format("its folder {} is not writable", folder);
  return {};
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

// SQLite's integrity check, once per file and process: a damaged page found now names the file, instead
// of surfacing later as a wrong value or a failed query far from its cause.
void check_integrity_once(SQLite::Database& connection, const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> checked;
  std::error_code error;
  std::string key = fs::weakly_canonical(path, error).string();
  if (error) key = path;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (checked.count(key) != 0) return;
  }
  SQLite::Statement check(connection, "PRAGMA quick_check(1)");
  const std::string verdict = check.executeStep() ? check.getColumn(0).getString() : "no answer";
  if (verdict != "ok") {
    throw DatabaseError(fmt::format(
        "{} failed SQLite's integrity check ({}); restore it from a backup or move it away (gemmforge then "
        "starts a new one)",
        path, verdict));
  }
  std::lock_guard<std::mutex> lock(mutex);
  checked.insert(key);
}

// Decides on a read-only connection whether an existing file is usable, so that a file rejected here is
// certainly left as it was (a read-only connection cannot even checkpoint a WAL into it).
void inspect_existing_file(const std::string& path, const std::vector<Migration>& migrations) {
  SQLite::Database reader(path, SQLite::OPEN_READONLY, Database::busy_timeout_ms());
  check_integrity_once(reader, path);
  const SchemaState state = read_schema_state(reader);
  reject_unusable(path, state, migrations.back().version);
  // At the current version nothing will be written, so the tables can be checked here already; older
  // databases are checked after migrating, inside the migration's transaction.
  if (state.version == migrations.back().version)
    reject_damaged(path, find_schema_damage(reader, migrations));
}

// "file:" URI of a path (https://www.sqlite.org/uri.html): everything but unreserved characters and '/'
// percent-encoded.
std::string file_uri(const std::string& path, bool immutable) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + (immutable ? "?mode=ro&immutable=1" : "?mode=ro");
}

// A read-only connection. A WAL file needs its -shm beside it; where nobody shares the file (no -shm)
// and the folder does not let SQLite create one, the file is opened as immutable, which is safe only
// without a -wal holding commits that are not in the file yet.
std::unique_ptr<SQLite::Database> open_read_only(const std::string& path, const FileHeader& header,
                                                 const WritableCheck& writable) {
  bool immutable = false;
  if (header.wal && !fs::exists(path + "-shm") && !writable(folder_of(path))) {
    std::error_code error;
    const uintmax_t wal_bytes = fs::exists(path + "-wal") ? fs::file_size(path + "-wal", error) : 0;
    if (wal_bytes > 0) {
      throw DatabaseError(fmt::format(
          "{} has commits in {}-wal that no running process shares (there is no {}-shm), and its folder is "
          "not writable, so it cannot be read safely; ask its owner to open it once with gemmforge, or to "
          "run "
          "sqlite3 '{}' 'PRAGMA wal_checkpoint(TRUNCATE)'",
          path, path, path, path));
    }
    immutable = true;
  }
  return std::make_unique<SQLite::Database>(
      file_uri(path, immutable), SQLite::OPEN_READONLY | SQLite::OPEN_URI, Database::busy_timeout_ms());
}

// The -wal and -shm files SQLite keeps beside a WAL database while it is open.
struct SideFiles {
  bool wal = false;
  bool shm = false;
};

SideFiles side_files(const std::string& path) {
  std::error_code error;
  return {fs::exists(path + "-wal", error), fs::exists(path + "-shm", error)};
}

// A read-only connection cannot remove the -wal and -shm files it made SQLite create, so a file that was
// only inspected, or rejected, would keep them. Where the file may be written, a read-write connection
// that reads and closes lets SQLite remove them as it does for its last connection (never while another
// process has the file open).
void tidy_side_files(const std::string& path, const SideFiles& before) {
  if (before.wal && before.shm) return;
  const SideFiles now = side_files(path);
  if ((!now.wal && !now.shm) || !access_writable(path) || !access_writable(folder_of(path))) return;
  try {
    SQLite::Database closer(path, SQLite::OPEN_READWRITE, Database::busy_timeout_ms());
    closer.exec("PRAGMA schema_version");
  } catch (const SQLite::Exception&) {
    // A file SQLite cannot read keeps what it made; nothing in it changed.
  }
}

}  // namespace

Database Database::open(const std::string& path, const OpenOptions& options) {
  return open(path, builtin_migrations(), options);
}

Database Database::open(const std::string& path, const std::vector<Migration>& migrations,
                        const OpenOptions& options) {
  if (path.empty()) {
    throw InvalidArgumentError("the tuning database path is empty; pass a file path or \":memory:\"");
  }
  if (migrations.empty()) throw InternalError("Database::open needs at least one migration");
  const WritableCheck writable = options.writable ? options.writable : WritableCheck(access_writable);
  if (!is_file(path)) {
    return sql::guarded(path, "open an in-memory database", [&] {
      Database database(
          std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE), path);
      database.migrate(migrations);
      return database;
    });
  }
  const bool exists = check_path(path, options, writable);
  FileHeader header;
  std::string reason;
  if (exists) {
    header = read_header(path);
    if (options.access == Access::kReadOnly) {
      reason = "opened read-only";
    } else {
      reason = why_read_only(path, writable);
      if (!reason.empty() && options.access == Access::kReadWrite) {
        throw DatabaseError(
            fmt::format("{} cannot be written: {}; fix the permissions or pass --db with another path "
                        "(commands that only "
                        "read it, such as report, query and export, open it read-only)",
                        path, reason));
      }
    }
  }
  const SideFiles before = side_files(path);
  try {
    return sql::retry_busy([&] {
      if (!reason.empty()) {
        Database database =
            read_only_database(open_read_only(path, header, writable), path, migrations, reason);
        database.tidy_side_files_ = !before.wal || !before.shm;
        return database;
      }
      if (exists) inspect_existing_file(path, migrations);
      auto connection = std::make_unique<SQLite::Database>(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE,
                                                           busy_timeout_ms());
      Database database(std::move(connection), path);
      database.migrate(migrations);
      return database;
    });
  } catch (const SQLite::Exception& error) {
    tidy_side_files(path, before);
    throw_open_error(path, error);
  } catch (...) {
    tidy_side_files(path, before);
    throw;
  }
}

Database Database::read_only_database(std::unique_ptr<SQLite::Database> connection, const std::string& path,
                                      const std::vector<Migration>& migrations, const std::string& reason) {
  check_integrity_once(*connection, path);
  const int latest = migrations.back().version;
  const SchemaState state = read_schema_state(*connection);
  reject_unusable(path, state, latest);
  if (state.version < latest) {
    // Nothing may be written to the file, so an older schema is upgraded in a copy in memory.
    auto copy = std::make_unique<SQLite::Database>(kInMemory, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    SQLite::Backup(*copy, *connection).executeStep();
    if (state.table_count > 0) {
      spdlog::warn(
          "{} is at schema version {} and cannot be upgraded ({}); it is read through a copy in memory "
          "upgraded "
          "to version {}. Opening it once with a gemmforge that may write it upgrades the file",
          path, state.version, reason, latest);
    }
    connection = std::move(copy);
  } else {
    reject_damaged(path, find_schema_damage(*connection, migrations));
  }
  Database database(std::move(connection), path);
  database.read_only_reason_ = reason;
  database.migrate(migrations);
  // A copy in memory must refuse writes as the file would: they could never be saved.
  database.connection().exec("PRAGMA query_only = ON");
  return database;
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
  if (is_file(path_) && !read_only()) {
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

std::string Database::cache_path() {
  auto variable = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? value : "";
  };
  // The XDG spec says relative values are to be ignored.
  if (std::string cache = variable("XDG_CACHE_HOME"); !cache.empty() && cache.front() == '/') {
    return (fs::path(cache) / "gemmforge" / "gemmforge.db").string();
  }
  if (std::string home = variable("HOME"); !home.empty()) {
    return (fs::path(home) / ".cache" / "gemmforge" / "gemmforge.db").string();
  }
  throw DatabaseError(
      "no place for the tuning database: none of GEMMFORGE_DB, XDG_CACHE_HOME and HOME is set; "
      "set GEMMFORGE_DB or pass --db");
}

std::string Database::default_path() {
  if (const char* path = std::getenv("GEMMFORGE_DB"); path != nullptr && *path != '\0') return path;
  return cache_path();
}

int Database::busy_timeout_ms() {
  static const int timeout_ms = [] {
    const char* text = std::getenv("GEMMFORGE_BUSY_TIMEOUT");
    if (text == nullptr || *text == '\0') return kDefaultBusyTimeoutS * 1000;
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(seconds >= 0 && seconds <= 3600)) {
      spdlog::warn("GEMMFORGE_BUSY_TIMEOUT='{}' is not a number of seconds in 0..3600; waiting {} s", text,
                   kDefaultBusyTimeoutS);
      return kDefaultBusyTimeoutS * 1000;
    }
    return static_cast<int>(seconds * 1000);
  }();
  return timeout_ms;
}

std::string Database::quick_check() const {
  return sql::guarded(path_, "check the database's integrity", [&] {
    SQLite::Statement check(connection(), "PRAGMA quick_check(1)");
    const std::string verdict = check.executeStep() ? check.getColumn(0).getString() : "no answer";
    return verdict == "ok" ? std::string() : verdict;
  });
}

SQLite::Statement& Database::cached(const char* sql) const {
  auto& statement = statements_[sql];
  if (!statement) {
    statement = std::make_unique<SQLite::Statement>(connection(), sql);
  } else {
    statement->tryReset();
    statement->clearBindings();
  }
  return *statement;
}

Database::Database(std::unique_ptr<SQLite::Database> connection, std::string path)
    : connection_(std::move(connection)), path_(std::move(path)) {}

Database::Database(Database&&) noexcept = default;

Database& Database::operator=(Database&& other) noexcept {
  if (this != &other) {
    statements_.clear();  // before the connection they belong to closes
    connection_ = std::move(other.connection_);
    statements_ = std::move(other.statements_);
    path_ = std::move(other.path_);
    read_only_reason_ = std::move(other.read_only_reason_);
    open_transactions_ = other.open_transactions_;
    tidy_side_files_ = other.tidy_side_files_;
    other.tidy_side_files_ = false;
  }
  return *this;
}

Database::~Database() {
  if (!tidy_side_files_ || !connection_) return;
  try {
    statements_.clear();
    connection_.reset();
    tidy_side_files(path_, {});
  } catch (const std::exception& error) {
    spdlog::warn("{}: could not remove the files SQLite left beside it: {}", path_, error.what());
  }
}

int Database::schema_version() const {
  return sql::guarded(path_, "read the schema version",
                      [&] { return read_schema_state(connection()).version; });
}

Database::WriteTransaction::WriteTransaction(Database& database) : database_(database) {
  if (database_.read_only()) {
    throw DatabaseError(
        fmt::format("{} is open read-only ({}); nothing can be written to it; pass --db with a "
                    "writable database",
                    database_.path_, database_.read_only_reason_));
  }
  sql::guarded(database_.path_, "start a write transaction", [&] {
    if (database_.open_transactions_ == 0) {
      // IMMEDIATE: a deferred transaction that reads and then writes can fail with SQLITE_BUSY at once
      // (the busy timeout does not apply) when another process wrote in between.
      outermost_ = sql::retry_busy([&] {
        return std::make_unique<SQLite::Transaction>(database_.connection(),
                                                     SQLite::TransactionBehavior::IMMEDIATE);
      });
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
