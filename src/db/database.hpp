// The tuning database: one SQLite file holding devices, problems, every trial, the best config per
// (device, problem), compiled cubins and the problems served untuned. Every write is one transaction.
#pragma once

#include <cstdint>
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
class Transaction;
}  // namespace SQLite

namespace gemmforge::db {

/// How record_trial may change the best config of the trial's problem.
enum class BestUpdate {
  kIfFaster,  ///< an ok trial faster than the current best becomes best (tuning; import policy "faster")
  kAlways,    ///< the (ok) trial becomes best whatever its time (import policy "replace")
  kIfNone,    ///< the trial becomes best only of a problem without one (import policy "keep")
};

/// A connection to a tuning database. Move-only; not thread-safe (open one per thread: SQLite
/// serializes writers across connections and processes). All failures of SQLite are DatabaseError.
class Database {
 public:
  /// Opens or creates the database at `path` (":memory:" for a private in-memory one): creates the
  /// parent folders, turns on WAL for files, foreign keys and a busy timeout, and migrates the schema.
  /// Throws DatabaseError, naming the file and what to do, for a file that is not a gemmforge database,
  /// one written by a newer gemmforge, or one with missing tables; such a file is left untouched.
  static Database open(const std::string& path);
  /// As open(path), applying `migrations` instead of the built-in ones; for upgrade tests.
  static Database open(const std::string& path, const std::vector<Migration>& migrations);
  /// $GEMMFORGE_DB if set, else $XDG_CACHE_HOME/gemmforge/gemmforge.db, else
  /// $HOME/.cache/gemmforge/gemmforge.db. Throws DatabaseError when none of them is set.
  static std::string default_path();

  Database(Database&&) noexcept;
  Database& operator=(Database&&) noexcept;
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  const std::string& path() const { return path_; }
  /// Version of the schema this database is at (after migration).
  int schema_version() const;

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
  std::vector<DeviceRecord> devices() const;
  std::optional<DeviceRecord> device_by_uuid(const std::string& uuid) const;
  /// Devices named by `text`: the one with that exact uuid, else all whose name equals it ignoring
  /// case (a GPU model), else all whose name contains it ignoring case.
  std::vector<DeviceRecord> devices_matching(const std::string& text) const;
  /// The single device devices_matching(text) finds; nullopt when none; InvalidArgumentError listing
  /// the candidates when several match.
  std::optional<DeviceRecord> find_device(const std::string& uuid_or_name) const;

  // Problems and templates -----------------------------------------------------------------------

  /// Throws InvalidArgumentError for sizes outside 1..2^31-1 or alignments other than 1, 2, 4.
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
  /// Throws InvalidArgumentError for an ok trial without a finite, positive median time.
  int64_t record_trial(const TrialRecord& trial, BestUpdate update = BestUpdate::kIfFaster);
  /// Pins a trial as the best of its problem; it must be ok and belong to that device and problem.
  void set_best(const BestRecord& best);

  /// Trials of a problem on a device: ok ones fastest first, then the others in recording order.
  std::vector<TrialRecord> trials(int64_t device_id, int64_t problem_id) const;
  /// Every trial on a device, grouped by problem, ordered as above within each problem.
  std::vector<TrialRecord> trials(int64_t device_id) const;
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
  Database(std::unique_ptr<SQLite::Database> connection, std::string path);
  void migrate(const std::vector<Migration>& migrations);
  SQLite::Database& connection() const { return *connection_; }

  // Row writers that expect an open transaction; the public methods wrap them in one.
  int64_t store_device(const DeviceInfo& device);
  int64_t store_problem(const KernelProblem& problem);
  int64_t store_template(const std::string& name, const std::string& source_hash);
  void store_best(const BestRecord& best);
  void elect_fastest(int64_t device_id, int64_t problem_id);

  std::unique_ptr<SQLite::Database> connection_;
  std::string path_;
  int open_transactions_ = 0;  // depth of nested WriteTransactions
};

}  // namespace gemmforge::db
