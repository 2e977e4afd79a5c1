// db schema and migrations: parsing db/schema.sql, upgrading an old database, refusing to downgrade,
// and rolling back a migration that fails.
#include "db/schema.hpp"
#include "support/temp_folder.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "db/database.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {
namespace {

// A fresh folder under the test temp dir, removed with everything in it.
using test_support::TempFolder;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<Migration> with_extra(std::vector<Migration> migrations, const std::string& sql) {
  migrations.push_back({static_cast<int>(migrations.size()) + 1, "test addition", sql});
  return migrations;
}

TrialRecord sample_trial(int64_t device_id) {
  TrialRecord t;
  t.device_id = device_id;
  t.problem.m = t.problem.n = t.problem.k = 1024;
  t.template_name = "sgemm_simt";
  t.template_hash = "abcd";
  t.config_key = "BM=64";
  t.time_median_ms = 0.75;
  return t;
}

TEST(DbSchema, BuiltinMigrationsStartWithTheInitialSchemaAndCountUp) {
  const std::vector<Migration>& migrations = builtin_migrations();
  ASSERT_FALSE(migrations.empty());
  EXPECT_EQ(migrations[0].version, 1);
  EXPECT_EQ(migrations[0].description, "initial schema");
  for (size_t i = 0; i < migrations.size(); ++i) EXPECT_EQ(migrations[i].version, static_cast<int>(i) + 1);
  EXPECT_NE(migrations[0].sql.find("CREATE TABLE trials"), std::string::npos);
}

TEST(DbSchema, SchemaFileInTheSourceTreeIsTheOneBuiltIn) {
  std::ifstream in(std::string(GEMMFORGE_SOURCE_DIR) + "/db/schema.sql", std::ios::binary);
  ASSERT_TRUE(in) << "db/schema.sql is missing";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<Migration> from_file = parse_migrations(text, "db/schema.sql");
  ASSERT_EQ(from_file.size(), builtin_migrations().size()) << "rebuild: CMake re-embeds a changed schema.sql";
  for (size_t i = 0; i < from_file.size(); ++i) EXPECT_EQ(from_file[i].sql, builtin_migrations()[i].sql);
}

TEST(DbSchema, ParserSplitsSectionsAndKeepsDescriptions) {
  const std::vector<Migration> migrations = parse_migrations(
      "-- a comment before the first section\n\n"
      "-- migration 1: first\nCREATE TABLE a (x);\n"
      "-- migration 2: second step\nCREATE TABLE b (y);\n-- a comment inside\nCREATE TABLE c (z);\n",
      "test.sql");
  ASSERT_EQ(migrations.size(), 2u);
  EXPECT_EQ(migrations[0].description, "first");
  EXPECT_EQ(migrations[0].sql, "CREATE TABLE a (x);\n");
  EXPECT_EQ(migrations[1].version, 2);
  EXPECT_EQ(migrations[1].description, "second step");
  EXPECT_NE(migrations[1].sql.find("CREATE TABLE c"), std::string::npos);
}

TEST(DbSchema, ParserRejectsGapsStraySqlEmptySectionsAndBadMarkers) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"-- migration 1: a\nCREATE TABLE a (x);\n-- migration 3: c\nCREATE TABLE c (x);\n", "test.sql:3"},
      {"-- migration 2: a\nCREATE TABLE a (x);\n", "test.sql:1"},
      {"CREATE TABLE early (x);\n-- migration 1: a\nCREATE TABLE a (x);\n", "before the first"},
      {"-- migration 1: a\n-- only a comment\n\n", "holds no SQL"},
      {"-- migration one: a\nCREATE TABLE a (x);\n", "is not of the form"},
      {"-- nothing here\n", "holds no"},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE(text);
    try {
      parse_migrations(text, "test.sql");
      ADD_FAILURE() << "accepted";
    } catch (const InvalidArgumentError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
}

TEST(DbSchema, OldDatabaseIsUpgradedByALaterMigrationKeepingItsData) {
  TempFolder folder;
  const std::string path = folder.file("old.db");
  int64_t device = 0;
  {
    Database v1 = Database::open(path, builtin_migrations());
    device = v1.upsert_device(DeviceInfo::nominal("sm_90"));
    v1.record_trial(sample_trial(device));
  }
  const std::vector<Migration> later = with_extra(builtin_migrations(),
                                                  "ALTER TABLE trials ADD COLUMN note TEXT NOT NULL DEFAULT "
                                                  "'';\nCREATE TABLE notes (id INTEGER PRIMARY KEY);\n");
  const int latest = later.back().version;
  {
    Database upgraded = Database::open(path, later);
    EXPECT_EQ(upgraded.schema_version(), latest);
    const std::optional<int64_t> problem_id = upgraded.find_problem(sample_trial(device).problem);
    ASSERT_TRUE(problem_id);
    const std::optional<TrialRecord> best = upgraded.best(device, *problem_id);
    ASSERT_TRUE(best);
    EXPECT_EQ(best->config_key, "BM=64");
    EXPECT_EQ(best->time_median_ms, 0.75);
  }
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_TRUE(raw.tableExists("notes"));
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM pragma_table_info('trials') WHERE name = 'note'").getInt(),
            1);
  EXPECT_EQ(raw.execAndGet("SELECT count(*) FROM schema_version").getInt(), latest);
  EXPECT_EQ(raw.execAndGet("SELECT description FROM schema_version WHERE version = " + std::to_string(latest))
                .getString(),
            "test addition");
}

TEST(DbSchema, SixteenBitMigrationKeepsFp32ProblemsAndStoresAlignmentsInBytes) {
  TempFolder folder;
  const std::string path = folder.file("v1.db");
  {
    // A database as gemmforge wrote it before 16-bit types: alignments in floats, no c_dtype.
    const std::vector<Migration> v1(builtin_migrations().begin(), builtin_migrations().begin() + 1);
    const Database database = Database::open(path, v1);
    EXPECT_EQ(database.schema_version(), 1);
    SQLite::Database raw(path, SQLite::OPEN_READWRITE);
    raw.exec(
        "INSERT INTO problems (id, dtype, a_trans, b_trans, m, n, k, align_a, align_b, align_c) VALUES "
        "(7, 'f32', 0, 1, 4103, 4105, 4104, 4, 1, 2)");
  }
  Database upgraded = Database::open(path);
  EXPECT_EQ(upgraded.schema_version(), builtin_migrations().back().version);
  KernelProblem p;
  p.b_trans = true;
  p.m = 4103, p.n = 4105, p.k = 4104;
  p.align_a = 4, p.align_b = 1, p.align_c = 2;
  EXPECT_EQ(upgraded.find_problem(p), std::optional<int64_t>(7)) << "the same problem, in elements";
  KernelProblem half = p;
  half.dtype = half.c_dtype = Dtype::kBf16;
  half.align_a = 8;
  const int64_t half_id = upgraded.upsert_problem(half);
  EXPECT_NE(half_id, 7);
  EXPECT_EQ(upgraded.find_problem(half), std::optional<int64_t>(half_id));
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_EQ(
      raw.execAndGet("SELECT align_a || '/' || align_b || '/' || align_c || ' ' || c_dtype FROM problems "
                     "WHERE id = 7")
          .getString(),
      "16/4/8 f32");
  EXPECT_EQ(raw.execAndGet("SELECT align_a FROM problems WHERE id = " + std::to_string(half_id)).getInt(),
            16);
}

TEST(DbSchema, UpgradedDatabaseIsRejectedByOlderCodeUntouched) {
  TempFolder folder;
  const std::string path = folder.file("newer.db");
  Database::open(path, with_extra(builtin_migrations(), "CREATE TABLE extra (x);\n"));
  const std::string before = read_bytes(path);
  try {
    Database::open(path);
    FAIL() << "a database from a newer schema was opened";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("newer gemmforge"), std::string::npos) << error.what();
  }
  EXPECT_EQ(read_bytes(path), before);
}

TEST(DbSchema, FailingMigrationLeavesTheDatabaseAsItWas) {
  TempFolder folder;
  const std::string path = folder.file("stays.db");
  Database::open(path).upsert_device(DeviceInfo::nominal("sm_80"));
  const std::string before = read_bytes(path);
  // The first statement would succeed; the second fails, so the whole migration must roll back.
  const std::vector<Migration> broken =
      with_extra(builtin_migrations(), "CREATE TABLE half_done (x);\nCREATE TABLE devices (x);\n");
  EXPECT_THROW(Database::open(path, broken), DatabaseError);
  EXPECT_EQ(read_bytes(path), before);
  Database db = Database::open(path);
  EXPECT_EQ(db.schema_version(), builtin_migrations().back().version);
  EXPECT_EQ(db.devices().size(), 1u);
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  EXPECT_FALSE(raw.tableExists("half_done"));
}

TEST(DbSchema, MigrationLeavingDanglingReferencesIsRolledBack) {
  TempFolder folder;
  const std::string path = folder.file("dangling.db");
  Database::open(path).upsert_device(DeviceInfo::nominal("sm_80"));
  const std::string before = read_bytes(path);
  // Migrations run with foreign keys off (to allow table rebuilds); the check before commit catches this.
  const std::vector<Migration> dangling = with_extra(
      builtin_migrations(), "INSERT INTO best (device_id, problem_id, trial_id) VALUES (7, 8, 9);\n");
  try {
    Database::open(path, dangling);
    FAIL() << "a migration leaving rows that point at nothing was committed";
  } catch (const DatabaseError& error) {
    EXPECT_NE(std::string(error.what()).find("table 'best'"), std::string::npos) << error.what();
  }
  EXPECT_EQ(read_bytes(path), before);
  EXPECT_EQ(Database::open(path).schema_version(), builtin_migrations().back().version);
}

}  // namespace
}  // namespace gemmforge::db
