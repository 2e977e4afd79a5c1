// The tuning database: one SQLite file holding devices, problems, every trial, the best config per
// (device, problem), compiled cubins and the problems served untuned. Every write is one transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "db/records.hpp"
#include "db/schema.hpp"

namespace SQLite {
class Database;
class Statement;
class Transaction;
}  // namespace SQLite

namespace gemmforge::db {

/// How record_trial may change the best config of the trial's problem.
enum class BestUpdate {
  kIfFaster,  ///< an ok trial faster than the current best becomes best (tuning; import policy "faster")
  kAlways,    ///< the (ok) trial becomes best whatever its time (import policy "replace")
  kIfNone,    ///< the trial becomes best only of a problem without one (import policy "keep")
  kNever,     ///< the best is left alone (the caller elects bests itself, as merge does)
};

/// How Database::open may use a file.
enum class Access {
  kReadWrite,  ///< read and write; a file or folder that is not writable is an error
  kReadOnly,   ///< never write: no migration on disk, no journal change, no file created
  kAuto,       ///< read-write when the file and its folder are writable, else read-only
};

/// Whether the process may write a path (a file or a folder). The default asks access(2); tests inject
/// their own, because root may write anything.
using WritableCheck = std::function<bool(const std::string& path)>;

struct OpenOptions {
  Access access = Access::kReadWrite;
  /// Create the file when it does not exist (never with kReadOnly). Its folder must exist, except for
  /// Database::cache_path(), whose folders are created: a mistyped --db never makes folders.
  bool create = true;
  WritableCheck writable;
};

/// A connection to a tuning database. Move-only; not thread-safe (open one per thread: SQLite
/// serializes writers across connections and processes). All failures of SQLite are DatabaseError.
class Database {
 public:
  /// Opens the database at `path` (":memory:" for a private in-memory one) as `options` say. A file
  /// opened for writing is created when missing, put in WAL mode and migrated; one opened read-only is
  /// never written (a read-only file at an older schema version is upgraded in a copy in memory). The
  /// first time a process opens a file, SQLite's quick_check must pass. Every connection waits up to
  /// busy_timeout_ms() for another process's lock, retrying where SQLite does not wait by itself.
  /// Throws DatabaseError, naming the file and what to do, for a folder, a missing folder, a file that
  /// is not a gemmforge database, one written by a newer gemmforge, a damaged one, or one that cannot be
  /// written with kReadWrite; NotFoundError for a missing file that may not be created. A rejected file is
  /// left untouched.
  static Database open(const std::string& path, const OpenOptions& options = {});
  /// As open(path, options), applying `migrations` instead of the built-in ones; for upgrade tests.
  static Database open(const std::string& path, const std::vector<Migration>& migrations,
                       const OpenOptions& options = {});
  /// $GEMMFORGE_DB if set, else cache_path().
  static std::string default_path();
  /// The per-user location: $XDG_CACHE_HOME/gemmforge/gemmforge.db, else
  /// $HOME/.cache/gemmforge/gemmforge.db. Throws DatabaseError when neither variable is set.
  static std::string cache_path();
  /// How long a connection waits for another process's lock: $GEMMFORGE_BUSY_TIMEOUT seconds when set
  /// (0 to 3600), else 60 s.
  static int busy_timeout_ms();

  Database(Database&&) noexcept;
  Database& operator=(Database&& other) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }
  /// Version of the schema this database is at (after migration).
  int schema_version() const;
  /// Whether writes are refused (opened read-only); read_only_reason() says why.
  bool read_only() const { return !read_only_reason_.empty(); }
  const std::string& read_only_reason() const { return read_only_reason_; }
  /// SQLite's quick_check: empty when it passes, else its first complaint.
  std::string quick_check() const;

  /// Groups writes into one transaction: every write method called while it is open joins it (as a
  /// savepoint, so a failed write undoes only itself), and nothing is stored unless commit() is called.
  /// It must end before its Database is moved.
  class WriteTransaction {
   public:
    explicit WriteTransaction(Database& database);
    WriteTransaction(const WriteTransaction&) = delete;
    WriteTransaction& operator=(const WriteTransaction&) = delete;
    ~WriteTransaction();
    void commit();

   private:
    Database& database_;
    std::unique_ptr<SQLite::Transaction> outermost_;  // null when nested inside another one
    bool done_ = false;
  };
  WriteTransaction transaction() { return WriteTransaction(*this); }

  // Devices --------------------------------------------------------------------------------------

  /// Inserts the device or refreshes its row (found by device_key); returns its id.
  int64_t upsert_device(const DeviceInfo& device);
  /// Stores a device record as it is, times included (merges keep them): inserts it, or replaces the
  /// description and last_seen of the row with its key, keeping the earlier first_seen. Returns its id.
  int64_t store_device_record(const DeviceRecord& record);
  std::vector<DeviceRecord> devices() const;
  std::optional<DeviceRecord> device_by_uuid(const std::string& uuid) const;
  /// Devices named by `text`: the one with that exact uuid, else all whose name equals it ignoring
  /// case (a GPU model), else all whose name contains it ignoring case.
  std::vector<DeviceRecord> devices_matching(const std::string& text) const;
  /// The single device devices_matching(text) finds; nullopt when none; InvalidArgumentError listing
  /// the candidates when several match.
  std::optional<DeviceRecord> find_device(const std::string& uuid_or_name) const;

  // Problems and templates -----------------------------------------------------------------------

  /// Throws InvalidArgumentError for sizes outside 1..2^31-1 or alignments other than 1, 2, 4
  /// (check_kernel_problem).
  int64_t upsert_problem(const KernelProblem& problem);
  std::optional<int64_t> find_problem(const KernelProblem& problem) const;
  int64_t upsert_template(const std::string& name, const std::string& source_hash);

  // Runs -----------------------------------------------------------------------------------------

  int64_t begin_run(int64_t device_id, const std::string& command, const std::string& strategy,
                    RunClocks clocks);
  void finish_run(int64_t run_id);
  /// Runs on a device, oldest first.
  std::vector<RunRecord> runs(int64_t device_id) const;

  // Trials and best configs ----------------------------------------------------------------------

  /// Stores a trial (replacing the row of the same device, problem, template and config), its
  /// problem and template, and updates the best config of its problem as `update` says. Whatever
  /// `update`, a trial that is not ok never becomes best, and when the current best trial is
  /// re-measured slower or failing, the fastest remaining ok trial is elected. Returns the trial id.
  /// A trial that is not servable never becomes best either. Throws InvalidArgumentError for a trial
  /// whose values break trial_fault() (e.g. an ok trial without a finite, positive median time).
  int64_t record_trial(const TrialRecord& trial, BestUpdate update = BestUpdate::kIfFaster);
  /// Makes the fastest servable ok trial of every problem of every device its best, where its rel_error
  /// is known and at most verified_error_bound() of its types and `error_bound`; ties go to the smaller
  /// template name, then config key, so the outcome does not depend on the order rows were stored in.
  /// Problems without such a trial lose their best.
  void elect_verified_bests(double error_bound);
  /// Pins a trial as the best of its problem; it must be ok and belong to that device and problem.
  void set_best(const BestRecord& best);

  /// Trials of a problem on a device: ok ones fastest first, then the others in recording order.
  std::vector<TrialRecord> trials(int64_t device_id, int64_t problem_id) const;
  /// Every trial on a device, grouped by problem, ordered as above within each problem.
  std::vector<TrialRecord> trials(int64_t device_id) const;
  /// Visits the trials of a device (only the best of each problem when best_only) one row at a time, in
  /// the order of trials(device_id) with ties broken by template name and config key: memory stays
  /// bounded whatever the size of the database, and equal contents give the same sequence.
  void for_each_trial(int64_t device_id, bool best_only,
                      const std::function<void(const TrialRecord&)>& visit) const;
  /// How many trials for_each_trial visits.
  int64_t count_trials(int64_t device_id, bool best_only) const;
  /// The fastest cuBLAS time of each problem on a device among its ok trials (each trial carries the
  /// cuBLAS time of its tune), in the order of for_each_trial's problems.
  void for_each_fastest_cublas(int64_t device_id,
                               const std::function<void(const KernelProblem&, double)>& visit) const;
  /// The fastest cuBLAS time of a problem on a device among its ok trials, if any carries one.
  std::optional<double> fastest_cublas_ms(int64_t device_id, int64_t problem_id) const;
  /// The trial of this config of this template version on a device, if stored.
  std::optional<TrialRecord> find_trial(int64_t device_id, const KernelProblem& problem,
                                        const std::string& template_name, const std::string& template_hash,
                                        const std::string& config_key) const;
  /// The id of the trial of this config of this template version on a device, if stored.
  std::optional<int64_t> trial_id(int64_t device_id, const KernelProblem& problem,
                                  const std::string& template_name, const std::string& template_hash,
                                  const std::string& config_key) const;
  /// Median time of the best trial of a problem on a device, if it has one.
  std::optional<double> best_time_ms(int64_t device_id, const KernelProblem& problem) const;
  /// Whether this config of this template version was already tried (lets a rerun resume).
  bool has_trial(int64_t device_id, int64_t problem_id, const std::string& template_hash,
                 const std::string& config_key) const;
  std::optional<TrialRecord> best(int64_t device_id, int64_t problem_id) const;
  /// The best trial of every tuned problem on a device.
  std::vector<TrialRecord> best_for_device(int64_t device_id) const;
  /// The best trials of every device whose name equals `device_name` ignoring case (one GPU model).
  std::vector<TrialRecord> best_for_model(const std::string& device_name) const;
  /// The k fastest ok trials of a problem on a device.
  std::vector<TrialRecord> top_trials(int64_t device_id, int64_t problem_id, int k) const;

  // Cubins and misses ----------------------------------------------------------------------------

  /// Stores (or replaces) a compiled kernel under record.key.
  void put_cubin(const CubinRecord& record);
  std::optional<CubinRecord> get_cubin(const std::string& key) const;

  /// Counts one more call of an untuned problem on a device.
  void record_miss(int64_t device_id, const KernelProblem& problem);
  /// Misses on a device, most frequent first.
  std::vector<MissRecord> misses(int64_t device_id) const;

 private:
  friend class Importer;  // keeps its duplicate keys in a temporary table of the connection

  Database(std::unique_ptr<SQLite::Database> connection, std::string path);
  /// The Database of a read-only connection to an existing file: checked, and at an older schema
  /// version replaced by an upgraded copy in memory.
  static Database read_only_database(std::unique_ptr<SQLite::Database> connection, const std::string& path,
                                     const std::vector<Migration>& migrations, const std::string& reason);
  void migrate(const std::vector<Migration>& migrations);
  SQLite::Database& connection() const { return *connection_; }
  /// A prepared statement kept for the life of the connection (hot paths of imports and tuning): reset,
  /// bindings cleared. `sql` must be a string literal, whose address is the key.
  SQLite::Statement& cached(const char* sql) const;

  // Row writers that expect an open transaction; the public methods wrap them in one.
  int64_t store_device(const DeviceInfo& device, const std::string& first_seen = {},
                       const std::string& last_seen = {});
  int64_t store_problem(const KernelProblem& problem);
  int64_t store_template(const std::string& name, const std::string& source_hash);
  void store_best(const BestRecord& best);
  void elect_fastest(int64_t device_id, int64_t problem_id);

  std::unique_ptr<SQLite::Database> connection_;
  // Declared after the connection, so the statements are finalized before it closes.
  mutable std::map<const char*, std::unique_ptr<SQLite::Statement>> statements_;
  std::string path_;
  std::string read_only_reason_;
  int open_transactions_ = 0;  // depth of nested WriteTransactions
  // A read-only connection made SQLite create -wal/-shm files: remove them at the end.
  bool tidy_side_files_ = false;
};

}  // namespace gemmforge::db
