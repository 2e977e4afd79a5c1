// db::Database: opening and rejecting files, idempotent upserts, trial recording and best election,
// resume, cubins, misses, transactions and two processes writing one file.
#include "db/database.hpp"
#include "support/db_records.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_folder.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {
namespace {

using test_support::recorded_gpu;
using test_support::ScopedEnv;
using test_support::simt_trial;
using test_support::TempFolder;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

KernelProblem problem(int64_t m, int64_t n = 512, int64_t k = 256) {
  KernelProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  return p;
}

TrialRecord trial(int64_t device_id, const KernelProblem& p, const std::string& config, TrialStatus status,
                  std::optional<double> time_ms) {
  TrialRecord t = simt_trial(device_id, p, config, status);
  t.time_median_ms = time_ms;
  if (status != TrialStatus::kOk) t.reason = std::string("failed: ") + to_string(status);
  return t;
}

TrialRecord ok(int64_t device_id, const KernelProblem& p, const std::string& config, double time_ms) {
  return trial(device_id, p, config, TrialStatus::kOk, time_ms);
}

std::string best_config(const Database& db, int64_t device_id, const KernelProblem& p) {
  const std::optional<int64_t> problem_id = db.find_problem(p);
  if (!problem_id) return "<no problem>";
  const std::optional<TrialRecord> best = db.best(device_id, *problem_id);
  return best ? best->config_key : "<no best>";
}

// Expects `open` to throw DatabaseError whose message holds every one of `parts`.
void expect_open_rejected(const std::string& path, std::initializer_list<const char*> parts) {
  try {
    Database::open(path);
    FAIL() << path << " was opened";
  } catch (const DatabaseError& error) {
    const std::string message = error.what();
    for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
  }
}

TEST(DbDatabase, InMemoryDatabaseHasEveryTableAtTheLatestVersion) {
  Database db = Database::open(":memory:");
  EXPECT_EQ(db.schema_version(), builtin_migrations().back().version);
  EXPECT_EQ(db.path(), ":memory:");
  EXPECT_TRUE(db.devices().empty());
}

TEST(DbDatabase, FileDatabaseIsCreatedInWalModeAndKeepsData) {
  TempFolder folder;
  const std::string path = folder.file("tuning.db");
  int64_t device_id = 0;
  {
    Database db = Database::open(path);
    device_id = db.upsert_device(recorded_gpu("GPU-1"));
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  {
    SQLite::Database raw(path, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
  }
  const std::string header = read_bytes(path).substr(0, 20);
  EXPECT_EQ(header.substr(0, 15), "SQLite format 3");
  EXPECT_EQ(header[18], 2) << "file header does not announce WAL";
  Database reopened = Database::open(path);
  ASSERT_EQ(reopened.devices().size(), 1u);
  EXPECT_EQ(reopened.devices().front().id, device_id);
}

TEST(DbDatabase, EmptyPathIsAnInvalidArgument) {
  EXPECT_THROW(Database::open(""), InvalidArgumentError);
}

TEST(DbDatabase, FileThatIsNotADatabaseIsRejectedUntouched) {
  TempFolder folder;
  const std::string path = folder.file("notes.db");
  std::string text;
  for (int i = 0; i < 200; ++i) text += "these are my notes, not a database\n";
  write_bytes(path, text);
  expect_open_rejected(path, {"notes.db", "is not a gemmforge database", "move it away"});
  EXPECT_EQ(read_bytes(path), text);
}

// A WAL beside a file that is shorter than its header says may belong to a checkpoint under way, so the
// file is read again for a while; one truly cut short is still rejected, untouched.
TEST(DbDatabase, TruncatedWalDatabaseBesideALeftoverWalIsRejectedUntouched) {
  TempFolder folder;
  const std::string path = folder.file("cut.db");
  {
    Database db = Database::open(path);
    const int64_t device = db.upsert_device(recorded_gpu("GPU-cut"));
    for (int i = 0; i < 200; ++i) db.record_trial(ok(device, problem(64 + i), "I=" + std::to_string(i), 1.0));
  }
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  write_bytes(path + "-wal", "");
  const std::string before = read_bytes(path);
  expect_open_rejected(path, {"cut.db", "is a truncated database: its header counts", "move it away"});
  EXPECT_EQ(read_bytes(path), before);
}

TEST(DbDatabase, ForeignSqliteDatabaseIsRejectedUntouched) {
  TempFolder folder;
  const std::string path = folder.file("other.db");
  {
    SQLite::Database other(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
    other.exec(
        "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos (name) VALUES ('a')");
  }
  const std::string before = read_bytes(path);
  expect_open_rejected(path, {"other.db", "not a gemmforge database", "schema_version"});
  EXPECT_EQ(read_bytes(path), before);
}

TEST(DbDatabase, DatabaseFromANewerGemmforgeIsRejectedUntouched) {
  TempFolder folder;
  const std::string path = folder.file("future.db");
  Database::open(path).upsert_device(recorded_gpu("GPU-1"));
  {
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec("INSERT INTO schema_version (version, description, applied_at) VALUES (99, 'future', 'later')");
  }
  const std::string before = read_bytes(path);
  expect_open_rejected(path, {"future.db", "newer gemmforge", "schema version 99", "upgrade gemmforge"});
  EXPECT_EQ(read_bytes(path), before);
}

TEST(DbDatabase, DatabaseWithAMissingTableOrColumnIsRejectedUntouched) {
  TempFolder folder;
  const std::string no_table = folder.file("no_table.db");
  const std::string no_column = folder.file("no_column.db");
  Database::open(no_table).upsert_device(recorded_gpu("GPU-1"));
  Database::open(no_column).upsert_device(recorded_gpu("GPU-1"));
  SQLite::Database(no_table, SQLite::OPEN_READWRITE).exec("DROP TABLE misses");
  SQLite::Database(no_column, SQLite::OPEN_READWRITE).exec("ALTER TABLE cubins DROP COLUMN log");
  const std::string before_table = read_bytes(no_table);
  const std::string before_column = read_bytes(no_column);
  expect_open_rejected(no_table, {"no_table.db", "damaged", "table 'misses' is missing", "backup"});
  expect_open_rejected(no_column, {"no_column.db", "damaged", "table 'cubins' has no column 'log'"});
  EXPECT_EQ(read_bytes(no_table), before_table);
  EXPECT_EQ(read_bytes(no_column), before_column);
}

TEST(DbDatabase, EmptyFileBecomesADatabase) {
  TempFolder folder;
  const std::string path = folder.file("empty.db");
  write_bytes(path, "");
  EXPECT_EQ(Database::open(path).schema_version(), builtin_migrations().back().version);
}

TEST(DbDatabase, DefaultPathFollowsGemmforgeDbThenXdgCacheThenHome) {
  {
    const ScopedEnv db("GEMMFORGE_DB", "/data/mine.db");
    const ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(Database::default_path(), "/data/mine.db");
  }
  {
    const ScopedEnv db("GEMMFORGE_DB", nullptr);
    const ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    const ScopedEnv home("HOME", "/home/me");
    EXPECT_EQ(Database::default_path(), "/xdg/gemmforge/gemmforge.db");
  }
  {
    const ScopedEnv db("GEMMFORGE_DB", nullptr);
    const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    const ScopedEnv home("HOME", "/home/me");
    EXPECT_EQ(Database::default_path(), "/home/me/.cache/gemmforge/gemmforge.db");
  }
  {
    const ScopedEnv db("GEMMFORGE_DB", nullptr);
    const ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    const ScopedEnv home("HOME", nullptr);
    EXPECT_THROW(Database::default_path(), DatabaseError);
  }
}

TEST(DbDatabase, DevicesAreUpsertedByUuidAndRefreshed) {
  Database db = Database::open(":memory:");
  DeviceInfo device = recorded_gpu("GPU-aaaa");
  const int64_t id = db.upsert_device(device);
  device.driver_version = 13010;
  device.clock_khz = 1755000;
  EXPECT_EQ(db.upsert_device(device), id);
  const std::vector<DeviceRecord> devices = db.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].info.driver_version, 13010);
  EXPECT_EQ(devices[0].info.clock_khz, 1755000);
  EXPECT_EQ(devices[0].info.total_memory, int64_t{80} << 30);
  EXPECT_EQ(devices[0].info.smem_per_block_optin, device.smem_per_block_optin);
  EXPECT_EQ(devices[0].info.nvrtc_version, "13.0");
  EXPECT_LE(devices[0].first_seen, devices[0].last_seen);
  EXPECT_NE(db.upsert_device(recorded_gpu("GPU-bbbb")), id);
  EXPECT_EQ(db.devices().size(), 2u);
}

TEST(DbDatabase, DeviceWithoutUuidIsStoredUnderItsModel) {
  Database db = Database::open(":memory:");
  const DeviceInfo nominal = DeviceInfo::nominal("sm_80");
  const int64_t id = db.upsert_device(nominal);
  EXPECT_EQ(db.upsert_device(nominal), id);
  const std::optional<DeviceRecord> found = db.device_by_uuid("model:nominal sm_80");
  ASSERT_TRUE(found);
  EXPECT_EQ(found->id, id);
  EXPECT_EQ(found->info.sm_count, 108);
}

TEST(DbDatabase, FindDeviceByUuidNameOrUniqueSubstring) {
  Database db = Database::open(":memory:");
  const int64_t h100 = db.upsert_device(recorded_gpu("GPU-1111", "NVIDIA H100 80GB HBM3"));
  const int64_t a100 = db.upsert_device(recorded_gpu("GPU-2222", "NVIDIA A100-SXM4-40GB"));
  EXPECT_EQ(db.find_device("GPU-2222")->id, a100);
  EXPECT_EQ(db.find_device("nvidia h100 80gb hbm3")->id, h100);
  EXPECT_EQ(db.find_device("A100")->id, a100);
  EXPECT_FALSE(db.find_device("V100"));
  EXPECT_FALSE(db.find_device(""));
  EXPECT_THROW(db.find_device("NVIDIA"), InvalidArgumentError);  // both match: ambiguous
  // A second GPU of one model makes the model name ambiguous, yet devices_matching finds both.
  db.upsert_device(recorded_gpu("GPU-3333", "NVIDIA H100 80GB HBM3"));
  EXPECT_THROW(db.find_device("NVIDIA H100 80GB HBM3"), InvalidArgumentError);
  EXPECT_EQ(db.devices_matching("NVIDIA H100 80GB HBM3").size(), 2u);
  // A user's text is not a pattern.
  EXPECT_FALSE(db.find_device("%"));
}

TEST(DbDatabase, ProblemsAndTemplatesAreUpsertedIdempotently) {
  Database db = Database::open(":memory:");
  const int64_t p = db.upsert_problem(problem(1024));
  EXPECT_EQ(db.upsert_problem(problem(1024)), p);
  KernelProblem unaligned = problem(1024);
  unaligned.align_a = 1;
  EXPECT_NE(db.upsert_problem(unaligned), p);
  KernelProblem transposed = problem(1024);
  transposed.b_trans = true;
  EXPECT_NE(db.upsert_problem(transposed), p);
  EXPECT_EQ(db.find_problem(problem(1024)), p);
  EXPECT_FALSE(db.find_problem(problem(2048)));

  const int64_t t = db.upsert_template("sgemm_simt", "aaaa");
  EXPECT_EQ(db.upsert_template("sgemm_simt", "aaaa"), t);
  EXPECT_NE(db.upsert_template("sgemm_simt", "bbbb"), t);
}

TEST(DbDatabase, ProblemsOutsideTheSupportedRangeAreRejected) {
  Database db = Database::open(":memory:");
  EXPECT_THROW(db.upsert_problem(problem(0)), InvalidArgumentError);
  EXPECT_THROW(db.upsert_problem(problem(int64_t{1} << 31)), InvalidArgumentError);
  KernelProblem odd = problem(64);
  odd.align_c = 3;
  EXPECT_THROW(db.upsert_problem(odd), InvalidArgumentError);
  EXPECT_FALSE(db.find_problem(problem(64)));
}

TEST(DbDatabase, RunsRecordTheirCommandClocksAndEnd) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const int64_t run = db.begin_run(device, "gemmforge tune --shapes s.txt", "random", {1980000, 2619000});
  std::vector<RunRecord> runs = db.runs(device);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, run);
  EXPECT_FALSE(runs[0].finished_at);
  EXPECT_EQ(runs[0].command, "gemmforge tune --shapes s.txt");
  EXPECT_EQ(runs[0].strategy, "random");
  EXPECT_EQ(runs[0].clocks.clock_khz, 1980000);
  EXPECT_EQ(runs[0].clocks.memory_clock_khz, 2619000);
  EXPECT_EQ(runs[0].gemmforge_version, gemmforge_version());
  db.finish_run(run);
  runs = db.runs(device);
  ASSERT_TRUE(runs[0].finished_at);
  EXPECT_GE(*runs[0].finished_at, runs[0].started_at);
  EXPECT_THROW(db.finish_run(run + 100), InvalidArgumentError);
}

TEST(DbDatabase, TrialKeepsEveryColumn) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const int64_t run = db.begin_run(device, "tune", "grid", {});
  TrialRecord t = ok(device, problem(4096, 4096, 4096), "BM=128,BN=128,BK=8", 1.25);
  t.run_id = run;
  t.time_min_ms = 1.2;
  t.time_max_ms = 1.5;
  t.repetitions = 50;
  t.cublas_ms = 1.0;
  t.tflops = 110.0;
  t.ratio_vs_cublas = 0.8;
  t.registers = 128;
  t.smem_bytes = 32768;
  t.spill_bytes = 0;
  t.occupancy_blocks = 2;
  t.occupancy_pct = 25.0;
  t.compile_ms = 850.5;
  t.rel_error = 1e-6;
  const int64_t id = db.record_trial(t);
  const std::vector<TrialRecord> stored = db.trials(device, *db.find_problem(t.problem));
  ASSERT_EQ(stored.size(), 1u);
  const TrialRecord& s = stored[0];
  EXPECT_EQ(s.id, id);
  EXPECT_EQ(s.run_id, run);
  EXPECT_EQ(s.device_id, device);
  EXPECT_EQ(s.problem, t.problem);
  EXPECT_EQ(s.template_name, "sgemm_simt");
  EXPECT_EQ(s.template_hash, "0123456789abcdef");
  EXPECT_EQ(s.config_key, t.config_key);
  EXPECT_EQ(s.status, TrialStatus::kOk);
  EXPECT_EQ(s.time_median_ms, 1.25);
  EXPECT_EQ(s.time_min_ms, 1.2);
  EXPECT_EQ(s.time_max_ms, 1.5);
  EXPECT_EQ(s.repetitions, 50);
  EXPECT_EQ(s.cublas_ms, 1.0);
  EXPECT_EQ(s.tflops, 110.0);
  EXPECT_EQ(s.ratio_vs_cublas, 0.8);
  EXPECT_EQ(s.registers, 128);
  EXPECT_EQ(s.smem_bytes, 32768);
  EXPECT_EQ(s.spill_bytes, 0);
  EXPECT_EQ(s.occupancy_blocks, 2);
  EXPECT_EQ(s.occupancy_pct, 25.0);
  EXPECT_EQ(s.compile_ms, 850.5);
  EXPECT_EQ(s.rel_error, 1e-6);
  EXPECT_EQ(s.device_uuid, "GPU-1");
  EXPECT_EQ(s.gemmforge_version, gemmforge_version());
  EXPECT_EQ(s.created_at.size(), std::string("2025-01-31T12:00:00.000Z").size()) << s.created_at;
  EXPECT_TRUE(s.is_best);
}

TEST(DbDatabase, FasterOkTrialBecomesBestSlowerOneDoesNot) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  db.record_trial(ok(device, p, "C=a", 2.0));
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(ok(device, p, "C=b", 3.0));
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(ok(device, p, "C=c", 1.0));
  EXPECT_EQ(best_config(db, device, p), "C=c");
  db.record_trial(ok(device, p, "C=d", 1.0));  // a tie keeps the incumbent
  EXPECT_EQ(best_config(db, device, p), "C=c");
}

TEST(DbDatabase, FailedTrialIsNeverBest) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  for (TrialStatus status :
       {TrialStatus::kWrongResult, TrialStatus::kCompileError, TrialStatus::kLaunchError,
        TrialStatus::kCrashed, TrialStatus::kTimeout, TrialStatus::kSpills, TrialStatus::kInvalid}) {
    // Even a failure with a (meaningless) tiny time and the strongest update mode stays out.
    db.record_trial(trial(device, p, std::string("C=") + to_string(status), status, 0.001),
                    BestUpdate::kAlways);
  }
  EXPECT_EQ(best_config(db, device, p), "<no best>");
  db.record_trial(ok(device, p, "C=ok", 5.0));
  EXPECT_EQ(best_config(db, device, p), "C=ok");
  db.record_trial(trial(device, p, "C=late_failure", TrialStatus::kWrongResult, 0.5));
  EXPECT_EQ(best_config(db, device, p), "C=ok");
}

TEST(DbDatabase, TheVendorsTrialIsNeverBestHoweverFast) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  TrialRecord vendor = ok(device, p, kVendorConfig, 0.1);
  vendor.template_name = kVendorTemplate;
  db.record_trial(vendor, BestUpdate::kAlways);
  EXPECT_EQ(best_config(db, device, p), "<no best>");
  db.record_trial(ok(device, p, "C=a", 1.0));
  db.record_trial(ok(device, p, "C=b", 2.0));
  EXPECT_EQ(best_config(db, device, p), "C=a");
  // The best re-measured slower hands over to the fastest generated trial, not to cuBLAS's.
  db.record_trial(ok(device, p, "C=a", 3.0));
  EXPECT_EQ(best_config(db, device, p), "C=b");
}

TEST(DbDatabase, RemeasuringTheBestReelectsTheFastestRemainingOkTrial) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  const int64_t a = db.record_trial(ok(device, p, "C=a", 1.0));
  db.record_trial(ok(device, p, "C=b", 2.0));
  db.record_trial(trial(device, p, "C=x", TrialStatus::kCrashed, std::nullopt));
  // Same config again: the row (and its id) is replaced, not duplicated.
  EXPECT_EQ(db.record_trial(ok(device, p, "C=a", 3.0)), a);
  EXPECT_EQ(db.trials(device, *db.find_problem(p)).size(), 3u);
  EXPECT_EQ(best_config(db, device, p), "C=b");
  db.record_trial(trial(device, p, "C=b", TrialStatus::kTimeout, std::nullopt));
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(ok(device, p, "C=a", 0.5));  // the best re-measured faster stays best
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(trial(device, p, "C=a", TrialStatus::kWrongResult, std::nullopt));
  EXPECT_EQ(best_config(db, device, p), "<no best>");
}

TEST(DbDatabase, BestUpdateModesAlwaysAndIfNone) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  db.record_trial(ok(device, p, "C=a", 1.0), BestUpdate::kIfNone);  // no best yet: it becomes one
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(ok(device, p, "C=b", 0.1), BestUpdate::kIfNone);
  EXPECT_EQ(best_config(db, device, p), "C=a");
  db.record_trial(ok(device, p, "C=c", 9.0), BestUpdate::kAlways);
  EXPECT_EQ(best_config(db, device, p), "C=c");
  db.record_trial(ok(device, p, "C=c", 12.0), BestUpdate::kAlways);  // still the pinned one
  EXPECT_EQ(best_config(db, device, p), "C=c");
  db.record_trial(ok(device, p, "C=c", 10.0));  // speed decides again
  EXPECT_EQ(best_config(db, device, p), "C=b");
}

TEST(DbDatabase, SetBestPinsOnlyOkTrialsOfThatProblem) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  db.record_trial(ok(device, p, "C=fast", 1.0));
  const int64_t slow = db.record_trial(ok(device, p, "C=slow", 2.0));
  const int64_t failed = db.record_trial(trial(device, p, "C=bad", TrialStatus::kCrashed, std::nullopt));
  const int64_t other = db.record_trial(ok(device, problem(2048), "C=other", 1.0));
  const int64_t problem_id = *db.find_problem(p);
  db.set_best({device, problem_id, slow});
  EXPECT_EQ(best_config(db, device, p), "C=slow");
  EXPECT_THROW(db.set_best({device, problem_id, failed}), InvalidArgumentError);
  EXPECT_THROW(db.set_best({device, problem_id, other}), InvalidArgumentError);
  EXPECT_EQ(best_config(db, device, p), "C=slow");
}

TEST(DbDatabase, OkTrialWithoutATimeIsRejectedAndNothingIsStored) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  EXPECT_THROW(db.record_trial(trial(device, problem(64), "C=a", TrialStatus::kOk, std::nullopt)),
               InvalidArgumentError);
  EXPECT_THROW(db.record_trial(ok(device, problem(64), "C=a", -1.0)), InvalidArgumentError);
  EXPECT_THROW(db.record_trial(ok(device, problem(64), "", 1.0)), InvalidArgumentError);
  EXPECT_FALSE(db.find_problem(problem(64)));
}

TEST(DbDatabase, TrialOfAnUnknownDeviceIsADatabaseErrorAndStoresNothing) {
  Database db = Database::open(":memory:");
  EXPECT_THROW(db.record_trial(ok(42, problem(64), "C=a", 1.0)), DatabaseError);
  EXPECT_FALSE(db.find_problem(problem(64)));
}

TEST(DbDatabase, StoredValueThisBuildCannotReadIsADatabaseError) {
  TempFolder folder;
  const std::string path = folder.file("odd.db");
  Database db = Database::open(path);
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  db.record_trial(ok(device, problem(64), "C=1", 1.0));
  SQLite::Database(path, SQLite::OPEN_READWRITE).exec("UPDATE trials SET status = 'exploded'");
  try {
    db.trials(device);
    FAIL() << "an unknown status was read";
  } catch (const DatabaseError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("odd.db"), std::string::npos) << message;
    EXPECT_NE(message.find("'exploded'"), std::string::npos) << message;
  }
}

TEST(DbDatabase, HasTrialLetsARerunSkipWhatIsStored) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  db.record_trial(ok(device, p, "BM=64,BN=64", 1.0));
  db.record_trial(trial(device, p, "BM=128,BN=128", TrialStatus::kCompileError, std::nullopt));
  const int64_t problem_id = *db.find_problem(p);
  EXPECT_TRUE(db.has_trial(device, problem_id, "0123456789abcdef", "BM=64,BN=64"));
  EXPECT_TRUE(db.has_trial(device, problem_id, "0123456789abcdef", "BM=128,BN=128"));  // failures too
  EXPECT_FALSE(db.has_trial(device, problem_id, "0123456789abcdef", "BM=32,BN=32"));
  EXPECT_FALSE(db.has_trial(device, problem_id, "fedcba9876543210", "BM=64,BN=64"));  // template changed
  const int64_t other_device = db.upsert_device(recorded_gpu("GPU-2"));
  EXPECT_FALSE(db.has_trial(other_device, problem_id, "0123456789abcdef", "BM=64,BN=64"));
}

TEST(DbDatabase, TrialListsAreOrderedAndTopTrialsAreTheFastestOk) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  const KernelProblem p = problem(1024);
  db.record_trial(trial(device, p, "C=fail1", TrialStatus::kCrashed, std::nullopt));
  db.record_trial(ok(device, p, "C=3", 3.0));
  db.record_trial(ok(device, p, "C=1", 1.0));
  db.record_trial(trial(device, p, "C=fail2", TrialStatus::kSpills, std::nullopt));
  db.record_trial(ok(device, p, "C=2", 2.0));
  const int64_t problem_id = *db.find_problem(p);
  std::vector<std::string> order;
  for (const TrialRecord& t : db.trials(device, problem_id)) order.push_back(t.config_key);
  EXPECT_EQ(order, (std::vector<std::string>{"C=1", "C=2", "C=3", "C=fail1", "C=fail2"}));
  const std::vector<TrialRecord> top = db.top_trials(device, problem_id, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].config_key, "C=1");
  EXPECT_EQ(top[1].config_key, "C=2");
  EXPECT_EQ(db.top_trials(device, problem_id, 10).size(), 3u);
  EXPECT_TRUE(db.top_trials(device, problem_id, 0).empty());
  EXPECT_EQ(db.trials(device).size(), 5u);
}

TEST(DbDatabase, BestForDeviceAndForModel) {
  Database db = Database::open(":memory:");
  const int64_t first = db.upsert_device(recorded_gpu("GPU-1", "NVIDIA H100 80GB HBM3"));
  const int64_t second = db.upsert_device(recorded_gpu("GPU-2", "NVIDIA H100 80GB HBM3"));
  const int64_t other = db.upsert_device(recorded_gpu("GPU-3", "NVIDIA A100-SXM4-40GB"));
  db.record_trial(ok(first, problem(1024), "C=a", 1.0));
  db.record_trial(ok(first, problem(1024), "C=b", 0.5));
  db.record_trial(ok(first, problem(2048), "C=c", 4.0));
  db.record_trial(trial(first, problem(4096), "C=d", TrialStatus::kCrashed, std::nullopt));
  db.record_trial(ok(second, problem(1024), "C=e", 0.7));
  db.record_trial(ok(other, problem(1024), "C=f", 0.1));

  const std::vector<TrialRecord> mine = db.best_for_device(first);
  ASSERT_EQ(mine.size(), 2u);  // the problem with only a failure has no best
  EXPECT_EQ(mine[0].problem, problem(1024));
  EXPECT_EQ(mine[0].config_key, "C=b");
  EXPECT_EQ(mine[1].problem, problem(2048));
  EXPECT_EQ(mine[1].config_key, "C=c");
  for (const TrialRecord& t : mine) EXPECT_TRUE(t.is_best);

  const std::vector<TrialRecord> model = db.best_for_model("nvidia h100 80gb hbm3");
  ASSERT_EQ(model.size(), 3u);
  EXPECT_EQ(model[0].device_uuid, "GPU-1");
  EXPECT_EQ(model[2].device_uuid, "GPU-2");
  EXPECT_EQ(model[2].config_key, "C=e");
  EXPECT_TRUE(db.best_for_model("H100").empty());  // a model is named in full
}

TEST(DbDatabase, CubinsRoundTripByteExact) {
  Database db = Database::open(":memory:");
  CubinRecord record;
  record.key = "sgemm_simt/0123/sm_90/13.0/BM=128";
  record.template_name = "sgemm_simt";
  record.template_hash = "0123";
  record.arch = "sm_90";
  record.nvrtc_version = "13.0";
  record.options = {"--gpu-architecture=sm_90", "-DNAME=a b", "--std=c++17"};
  record.config_key = "BM=128,BN=128";
  for (int i = 0; i < 4096; ++i) record.cubin.push_back(static_cast<char>(i % 256));  // zeros included
  record.cubin.push_back('\0');
  record.log = "ptxas info: Used 128 registers";
  record.registers = 128;
  record.spill_bytes = 0;
  record.static_smem_bytes = 16384;
  record.compile_ms = 912.25;
  db.put_cubin(record);
  std::optional<CubinRecord> stored = db.get_cubin(record.key);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->cubin, record.cubin);
  EXPECT_EQ(stored->options, record.options);
  EXPECT_EQ(stored->template_name, "sgemm_simt");
  EXPECT_EQ(stored->template_hash, "0123");
  EXPECT_EQ(stored->arch, "sm_90");
  EXPECT_EQ(stored->nvrtc_version, "13.0");
  EXPECT_EQ(stored->config_key, "BM=128,BN=128");
  EXPECT_EQ(stored->log, record.log);
  EXPECT_EQ(stored->registers, 128);
  EXPECT_EQ(stored->spill_bytes, 0);
  EXPECT_EQ(stored->static_smem_bytes, 16384);
  EXPECT_EQ(stored->compile_ms, 912.25);
  EXPECT_FALSE(stored->created_at.empty());
  EXPECT_FALSE(db.get_cubin("no such key"));

  record.cubin.clear();  // replacing a key keeps one row; an empty image stays empty, not NULL
  db.put_cubin(record);
  stored = db.get_cubin(record.key);
  ASSERT_TRUE(stored);
  EXPECT_TRUE(stored->cubin.empty());
  EXPECT_THROW(db.put_cubin(CubinRecord{}), InvalidArgumentError);
}

TEST(DbDatabase, MissesCountUpPerProblem) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  for (int i = 0; i < 3; ++i) db.record_miss(device, problem(100));
  db.record_miss(device, problem(200));
  const std::vector<MissRecord> misses = db.misses(device);
  ASSERT_EQ(misses.size(), 2u);
  EXPECT_EQ(misses[0].problem, problem(100));
  EXPECT_EQ(misses[0].count, 3);
  EXPECT_LE(misses[0].first_seen, misses[0].last_seen);
  EXPECT_EQ(misses[1].problem, problem(200));
  EXPECT_EQ(misses[1].count, 1);
  EXPECT_TRUE(db.misses(db.upsert_device(recorded_gpu("GPU-2"))).empty());
}

TEST(DbDatabase, UncommittedTransactionStoresNothing) {
  Database db = Database::open(":memory:");
  {
    auto transaction = db.transaction();
    const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
    db.record_trial(ok(device, problem(64), "C=a", 1.0));
    db.record_miss(device, problem(128));
  }
  EXPECT_TRUE(db.devices().empty());
  EXPECT_FALSE(db.find_problem(problem(64)));
  {
    auto transaction = db.transaction();
    db.upsert_device(recorded_gpu("GPU-1"));
    transaction.commit();
  }
  EXPECT_EQ(db.devices().size(), 1u);
}

TEST(DbDatabase, FailedWriteInsideATransactionUndoesOnlyItself) {
  Database db = Database::open(":memory:");
  auto transaction = db.transaction();
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  // The problem and template rows are written before the trial row fails on its unknown device.
  EXPECT_THROW(db.record_trial(ok(device + 7, problem(64), "C=a", 1.0)), DatabaseError);
  db.record_trial(ok(device, problem(128), "C=b", 1.0));
  transaction.commit();
  EXPECT_EQ(db.devices().size(), 1u);
  EXPECT_FALSE(db.find_problem(problem(64)));
  EXPECT_TRUE(db.find_problem(problem(128)));
}

TEST(DbDatabase, MovedDatabaseKeepsWorking) {
  Database db = Database::open(":memory:");
  const int64_t device = db.upsert_device(recorded_gpu("GPU-1"));
  Database moved = std::move(db);
  EXPECT_EQ(moved.devices().front().id, device);
}

// Two processes write one file at once, each through its own connection; the busy timeout and
// immediate transactions must make both finish with every row stored.
TEST(DbDatabase, TwoProcessesWritingOneFileBothFinishWithoutLostWrites) {
  TempFolder folder;
  const std::string path = folder.file("shared.db");
  constexpr int kTrialsPerWriter = 150;
  const KernelProblem p = problem(4096);
  std::vector<pid_t> children;
  for (int writer = 0; writer < 2; ++writer) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // Child: no gtest assertions here, only an exit status the parent checks.
      int status = 0;
      try {
        Database db = Database::open(path);  // both may create the file at once
        const int64_t device = db.upsert_device(recorded_gpu("GPU-shared"));
        for (int i = 0; i < kTrialsPerWriter; ++i) {
          db.record_trial(ok(device, p, "W=" + std::to_string(writer) + ",I=" + std::to_string(i),
                             1.0 + writer + i * 0.01));
          db.record_miss(device, p);
        }
      } catch (const std::exception& error) {
        std::fprintf(stderr, "writer %d: %s\n", writer, error.what());
        status = 1;
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a writer failed; see its message above";
  }
  Database db = Database::open(path);
  ASSERT_EQ(db.devices().size(), 1u);
  const int64_t device = db.devices().front().id;
  const int64_t problem_id = *db.find_problem(p);
  const std::vector<TrialRecord> trials = db.trials(device, problem_id);
  EXPECT_EQ(trials.size(), 2u * kTrialsPerWriter);
  for (int writer = 0; writer < 2; ++writer) {
    for (int i = 0; i < kTrialsPerWriter; ++i) {
      const std::string key = "W=" + std::to_string(writer) + ",I=" + std::to_string(i);
      EXPECT_TRUE(db.has_trial(device, problem_id, "0123456789abcdef", key)) << key;
    }
  }
  EXPECT_EQ(best_config(db, device, p), "W=0,I=0");
  ASSERT_EQ(db.misses(device).size(), 1u);
  EXPECT_EQ(db.misses(device).front().count, 2 * kTrialsPerWriter);
}

}  // namespace
}  // namespace gemmforge::db
