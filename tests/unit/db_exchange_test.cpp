// db export/import: JSON round trips, merge policies, rejection of malformed or hostile documents
// without any change to the database, and RFC 4180 CSV.
#include "db/exchange.hpp"

#include "db/record_checks.hpp"
#include "support/db_records.hpp"
#include "support/temp_folder.hpp"

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {
namespace {

using nlohmann::json;

// A fresh folder under the test temp dir, removed with everything in it.
using test_support::recorded_gpu;
using test_support::simt_trial;
using test_support::TempFolder;

// Every table's definition and rows, in a stable order, through a connection of its own.
std::string dump(const std::string& path) {
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  std::string out;
  SQLite::Statement tables(raw, "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (tables.executeStep()) {
    const std::string table = tables.getColumn(0).getString();
    out += "table " + table + ": " + tables.getColumn(1).getString() + "\n";
    SQLite::Statement rows(raw, "SELECT * FROM \"" + table + "\" ORDER BY rowid");
    while (rows.executeStep()) {
      for (int i = 0; i < rows.getColumnCount(); ++i) {
        const SQLite::Column column = rows.getColumn(i);
        char number[64];
        if (column.isNull()) {
          out += "NULL";
        } else if (column.isFloat()) {
          std::snprintf(number, sizeof(number), "%.17g", column.getDouble());
          out += number;
        } else if (column.isBlob()) {
          const auto* bytes = static_cast<const unsigned char*>(column.getBlob());
          for (int b = 0; b < column.getBytes(); ++b) {
            std::snprintf(number, sizeof(number), "%02x", bytes[b]);
            out += number;
          }
        } else {
          out += column.getString();
        }
        out += '|';
      }
      out += '\n';
    }
  }
  return out;
}

KernelProblem problem(int64_t m, bool a_trans = false, bool b_trans = false, int align = 4) {
  KernelProblem p;
  p.m = m;
  p.n = 768;
  p.k = 512;
  p.a_trans = a_trans;
  p.b_trans = b_trans;
  p.align_a = align;
  p.align_c = align == 4 ? 2 : 4;
  return p;
}

TrialRecord measured(int64_t device_id, const KernelProblem& p, const std::string& config, double time_ms) {
  TrialRecord t = simt_trial(device_id, p, config, TrialStatus::kOk);
  t.time_median_ms = time_ms;
  t.time_min_ms = time_ms * 0.97;
  t.time_max_ms = time_ms * 1.1;
  t.repetitions = 40;
  t.cublas_ms = 0.123456789012345;
  t.tflops = p.flops() / (time_ms * 1e9);
  t.ratio_vs_cublas = *t.cublas_ms / time_ms;
  t.registers = 96;
  t.smem_bytes = 24576;
  t.spill_bytes = 0;
  t.occupancy_blocks = 3;
  t.occupancy_pct = 37.5;
  t.compile_ms = 640.0;
  t.rel_error = 3.1e-7;
  return t;
}

TrialRecord failed(int64_t device_id, const KernelProblem& p, const std::string& config, TrialStatus status,
                   const std::string& reason) {
  TrialRecord t = simt_trial(device_id, p, config, status);
  t.reason = reason;
  t.registers = 255;
  return t;
}

// Two devices (one known only by model), three problems, ok and failed trials.
void populate(Database& db) {
  const int64_t h100 = db.upsert_device(recorded_gpu("GPU-aaaa"));
  const int64_t model = db.upsert_device(DeviceInfo::nominal("sm_80"));
  const int64_t run = db.begin_run(h100, "gemmforge tune", "random", {1980000, 2619000});
  TrialRecord first = measured(h100, problem(1024), "BM=64,BN=64,BK=8", 0.5);
  first.run_id = run;
  db.record_trial(first);
  db.record_trial(measured(h100, problem(1024), "BM=128,BN=64,BK=8", 0.42));
  db.record_trial(
      failed(h100, problem(1024), "BM=256,BN=256,BK=32", TrialStatus::kSpills, "spills 64 bytes"));
  db.record_trial(failed(h100, problem(1024), "BM=32,BN=32,BK=4", TrialStatus::kCompileError,
                         "error: \"tile\" too small, see line 3\nsecond line"));
  db.record_trial(measured(h100, problem(2048, false, true, 2), "BM=128,BN=128,BK=8", 1.75));
  db.record_trial(measured(model, problem(4096, true, true, 1), "BM=64,BN=128,BK=16", 3.5));
  db.record_trial(failed(model, problem(4096, true, true, 1), "BM=16,BN=16,BK=4", TrialStatus::kInvalid,
                         "breaks BM % 32 == 0"));
}

void test_validator(const std::string& template_name, const std::string& /*template_hash*/,
                    const std::string& config_key, const KernelProblem&) {
  if (template_name != "sgemm_simt") throw NotFoundError("unknown template '" + template_name + "'");
  if (config_key.rfind("BM=3,", 0) == 0)
    throw InvalidArgumentError("config " + config_key + " breaks BM % 16 == 0");
}

json without_device_times(json devices) {
  for (json& device : devices) {
    device.erase("first_seen");
    device.erase("last_seen");
  }
  return devices;
}

TEST(DbExchange, ExportDocumentHasItsHeaderDevicesAndOneResultPerTunedProblem) {
  Database db = Database::open(":memory:");
  populate(db);
  const json document = export_json(db);
  EXPECT_EQ(document.at("format"), "gemmforge-tuning");
  EXPECT_EQ(document.at("format_version"), 2);
  EXPECT_EQ(document.at("gemmforge_version"), gemmforge_version());
  EXPECT_TRUE(std::regex_match(document.at("exported_at").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
      << document.at("exported_at");
  ASSERT_EQ(document.at("devices").size(), 2u);
  EXPECT_EQ(document["devices"][0]["uuid"], "GPU-aaaa");
  EXPECT_EQ(document["devices"][0]["memory_bytes"], int64_t{80} << 30);
  EXPECT_EQ(document["devices"][0]["smem_per_block_optin"], 227 * 1024);
  EXPECT_EQ(document["devices"][1]["uuid"], "model:nominal sm_80");
  EXPECT_FALSE(document.contains("trials"));

  const json& results = document.at("results");
  ASSERT_EQ(results.size(), 3u);
  const json& first = results[0];
  EXPECT_EQ(first["device"], "GPU-aaaa");
  EXPECT_EQ(first["problem"], json({{"dtype", "f32"},
                                    {"layout", "nn"},
                                    {"m", 1024},
                                    {"n", 768},
                                    {"k", 512},
                                    {"align_a", 4},
                                    {"align_b", 4},
                                    {"align_c", 2}}));
  EXPECT_EQ(first["template"], "sgemm_simt");
  EXPECT_EQ(first["template_hash"], "0123456789abcdef");
  EXPECT_EQ(first["config"], "BM=128,BN=64,BK=8");
  EXPECT_EQ(first["measurement"]["time_median_ms"], 0.42);
  EXPECT_EQ(first["measurement"]["cublas_ms"], 0.123456789012345);
  EXPECT_EQ(first["measurement"]["occupancy_blocks"], 3);
  EXPECT_EQ(results[1]["problem"]["layout"], "nt");
  EXPECT_EQ(results[2]["problem"]["layout"], "tt");
}

// "vendor" holds each problem's fastest cuBLAS time among its ok trials on a device, with or without the
// trials exported, so that a reader of the results knows it without reading them.
TEST(DbExchange, ExportListsTheFastestCublasTimeOfEachProblemOnEachDevice) {
  Database db = Database::open(":memory:");
  populate(db);
  const int64_t h100 = db.find_device("GPU-aaaa")->id;
  TrialRecord slow_tune = measured(h100, problem(1024), "BM=64,BN=128,BK=8", 0.61);
  slow_tune.cublas_ms = 0.2;
  slow_tune.ratio_vs_cublas = 0.2 / 0.61;
  db.record_trial(slow_tune);
  TrialRecord fast_tune = measured(h100, problem(1024), "BM=32,BN=128,BK=8", 0.7);
  fast_tune.cublas_ms = 0.1;
  fast_tune.ratio_vs_cublas = 0.1 / 0.7;
  db.record_trial(fast_tune);
  TrialRecord failed_fast = failed(h100, problem(1024), "BM=16,BN=128,BK=8", TrialStatus::kWrongResult, "");
  failed_fast.cublas_ms = 0.01;  // a failed trial's cuBLAS time does not count
  db.record_trial(failed_fast);
  for (const bool all_trials : {false, true}) {
    const json document = export_json(db, {.device = std::nullopt, .all_trials = all_trials});
    const json& vendor = document.at("vendor");
    ASSERT_EQ(vendor.size(), 3u) << vendor.dump();
    EXPECT_EQ(
        vendor[0],
        json({{"device", "GPU-aaaa"}, {"problem", document["results"][0]["problem"]}, {"cublas_ms", 0.1}}));
    EXPECT_EQ(vendor[1]["problem"]["layout"], "nt");
    EXPECT_EQ(vendor[1]["cublas_ms"], 0.123456789012345);
    EXPECT_EQ(vendor[2]["device"], "model:nominal sm_80");
    Database target = Database::open(":memory:");
    const ImportReport report = import_json(target, document, ImportPolicy::kFaster, test_validator);
    EXPECT_TRUE(report.committed);
    // The database derives the times from the trials it holds.
    const int64_t there = target.find_device("GPU-aaaa")->id;
    const std::optional<int64_t> problem_id = target.find_problem(problem(1024));
    ASSERT_TRUE(problem_id);
    EXPECT_EQ(target.fastest_cublas_ms(there, *problem_id), all_trials ? 0.1 : 0.123456789012345);
  }
  EXPECT_EQ(db.fastest_cublas_ms(h100, *db.find_problem(problem(1024))), 0.1);
}

TEST(DbExchange, RoundTripReproducesBestsMeasurementsAndDevices) {
  Database source = Database::open(":memory:");
  populate(source);
  const json exported = export_json(source);
  Database target = Database::open(":memory:");
  // Through text, as between machines.
  const ImportReport report =
      import_json(target, json::parse(exported.dump()), ImportPolicy::kFaster, test_validator);
  EXPECT_EQ(report.devices_added, 2);
  EXPECT_EQ(report.devices_known, 0);
  EXPECT_EQ(report.results_imported, 3);
  EXPECT_EQ(report.results_skipped, 0);
  EXPECT_EQ(report.trials_imported, 0);

  const json again = export_json(target);
  EXPECT_EQ(again.at("results"), exported.at("results"));
  EXPECT_EQ(without_device_times(again.at("devices")), without_device_times(exported.at("devices")));
  // Imported results are ok trials without a run.
  const int64_t device = target.find_device("GPU-aaaa")->id;
  const std::vector<TrialRecord> trials = target.trials(device);
  ASSERT_EQ(trials.size(), 2u);
  for (const TrialRecord& t : trials) {
    EXPECT_EQ(t.status, TrialStatus::kOk);
    EXPECT_FALSE(t.run_id);
    EXPECT_TRUE(t.is_best);
  }
  EXPECT_EQ(target.find_device("GPU-aaaa")->info.pci_bus_id, "0000:17:00.0");
}

TEST(DbExchange, RoundTripWithAllTrialsKeepsFailedTrialsWithTheirReasons) {
  Database source = Database::open(":memory:");
  populate(source);
  const json exported = export_json(source, {.device = std::nullopt, .all_trials = true});
  ASSERT_EQ(exported.at("trials").size(), 7u);
  Database target = Database::open(":memory:");
  const ImportReport report = import_json(target, exported, ImportPolicy::kFaster, test_validator);
  EXPECT_EQ(report.results_imported, 3);
  EXPECT_EQ(report.trials_imported, 4);  // the other 3 are the results themselves
  EXPECT_EQ(report.trials_skipped, 3);
  const json again = export_json(target, {.device = std::nullopt, .all_trials = true});
  EXPECT_EQ(again.at("results"), exported.at("results"));
  EXPECT_EQ(again.at("trials"), exported.at("trials"));
  const std::vector<TrialRecord> trials = target.trials(target.find_device("GPU-aaaa")->id);
  const auto compile_error = std::find_if(trials.begin(), trials.end(), [](const TrialRecord& t) {
    return t.status == TrialStatus::kCompileError;
  });
  ASSERT_NE(compile_error, trials.end());
  EXPECT_EQ(compile_error->reason, "error: \"tile\" too small, see line 3\nsecond line");
  EXPECT_FALSE(compile_error->time_median_ms);
  EXPECT_EQ(compile_error->registers, 255);
}

TEST(DbExchange, ReimportChangesNothing) {
  TempFolder folder;
  const std::string path = folder.file("target.db");
  Database source = Database::open(":memory:");
  populate(source);
  const json exported = export_json(source, {.device = std::nullopt, .all_trials = true});
  Database target = Database::open(path);
  import_json(target, exported, ImportPolicy::kFaster, test_validator);
  const std::string before = dump(path);
  const ImportReport report = import_json(target, exported, ImportPolicy::kFaster, test_validator);
  EXPECT_EQ(report.devices_known, 2);
  EXPECT_EQ(report.results_imported, 0);
  EXPECT_EQ(report.results_skipped, 3);  // equal times are not faster
  EXPECT_EQ(report.trials_imported, 0);
  EXPECT_EQ(report.trials_skipped, 7);
  EXPECT_EQ(dump(path), before);
}

TEST(DbExchange, ExportCanBeLimitedToADevice) {
  Database db = Database::open(":memory:");
  populate(db);
  const json only_model = export_json(db, {.device = "model:nominal sm_80", .all_trials = true});
  ASSERT_EQ(only_model.at("devices").size(), 1u);
  EXPECT_EQ(only_model.at("results").size(), 1u);
  EXPECT_EQ(only_model.at("trials").size(), 2u);
  for (const json& result : only_model.at("results")) EXPECT_EQ(result["device"], "model:nominal sm_80");
  EXPECT_EQ(export_json(db, {.device = "h100", .all_trials = false}).at("results").size(), 2u);
  EXPECT_THROW(export_json(db, {.device = "V100", .all_trials = false}), NotFoundError);
}

// The local database has a best of 2.0 ms for the problem; the document brings a slower (3.0 ms) and a
// faster (1.0 ms) result for it, and one for a problem the database has never seen.
constexpr const char* kLocal = "BM=64,BN=64";
constexpr const char* kSlow = "BM=32,BN=32";
constexpr const char* kFast = "BM=128,BN=128";
constexpr const char* kNew = "BM=16,BN=16";

class DbExchangePolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = db_.upsert_device(recorded_gpu("GPU-local"));
    db_.record_trial(measured(device_, problem(1024), kLocal, 2.0));
  }

  static json document(const std::vector<std::pair<std::string, double>>& results, int64_t m = 1024) {
    json doc = {
        {"format", "gemmforge-tuning"},
        {"format_version", 1},
        {"devices",
         json::array({{{"uuid", "GPU-local"}, {"name", "elsewhere"}, {"cc_major", 9}, {"cc_minor", 0}}})},
        {"results", json::array()}};
    for (const auto& [config, time] : results) {
      doc["results"].push_back({{"device", "GPU-local"},
                                {"problem",
                                 {{"dtype", "f32"},
                                  {"layout", "nn"},
                                  {"m", m},
                                  {"n", 768},
                                  {"k", 512},
                                  {"align_a", 4},
                                  {"align_b", 4},
                                  {"align_c", 2}}},
                                {"template", "sgemm_simt"},
                                {"template_hash", "0123456789abcdef"},
                                {"config", config},
                                {"measurement", {{"time_median_ms", time}, {"rel_error", 1e-7}}}});
    }
    return doc;
  }

  ImportReport import(ImportPolicy policy, const json& doc) {
    return import_json(db_, doc, policy, test_validator);
  }
  std::string best() const {
    const std::optional<TrialRecord> best = db_.best(device_, *db_.find_problem(problem(1024)));
    return best ? best->config_key : "<none>";
  }

  Database db_ = Database::open(":memory:");
  int64_t device_ = 0;
};

TEST_F(DbExchangePolicy, FasterKeepsWhicheverIsFaster) {
  ImportReport report = import(ImportPolicy::kFaster, document({{kSlow, 3.0}}));
  EXPECT_EQ(report.results_skipped, 1);
  EXPECT_EQ(best(), kLocal);
  EXPECT_FALSE(db_.has_trial(device_, *db_.find_problem(problem(1024)), "0123456789abcdef", kSlow));
  report = import(ImportPolicy::kFaster, document({{kFast, 1.0}}));
  EXPECT_EQ(report.results_imported, 1);
  EXPECT_EQ(best(), kFast);
  EXPECT_EQ(report.devices_known, 1);
  EXPECT_EQ(db_.find_device("GPU-local")->info.name, "NVIDIA H100 80GB HBM3");  // local description kept
}

TEST_F(DbExchangePolicy, KeepNeverReplacesAnExistingBest) {
  for (const auto& [config, time] : {std::pair{kSlow, 3.0}, std::pair{kFast, 1.0}}) {
    const ImportReport report = import(ImportPolicy::kKeep, document({{config, time}}));
    EXPECT_EQ(report.results_skipped, 1);
    EXPECT_EQ(report.results_imported, 0);
    EXPECT_EQ(best(), kLocal);
  }
  ImportReport report;
  report = import(ImportPolicy::kKeep, document({{kNew, 5.0}}, 8192));
  EXPECT_EQ(report.results_imported, 1);
  const std::optional<TrialRecord> fresh = db_.best(device_, *db_.find_problem(problem(8192)));
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->config_key, kNew);
}

TEST_F(DbExchangePolicy, ReplaceAlwaysLetsTheImportWin) {
  ImportReport report = import(ImportPolicy::kReplace, document({{kSlow, 3.0}}));
  EXPECT_EQ(report.results_imported, 1);
  EXPECT_EQ(best(), kSlow);
  report = import(ImportPolicy::kReplace, document({{kFast, 1.0}}));
  EXPECT_EQ(report.results_imported, 1);
  EXPECT_EQ(best(), kFast);
}

// A verified result's error is bounded by its types' own tolerance: 1e-5 for FP32, 1e-4 plus one rounding of
// a BF16 C for BF16. A faster BF16 trial 1.2e-4 off cuBLAS is verified and elected; an FP32 one 2e-5 off is
// not, unless a looser bound is given.
TEST(DbExchange, ElectionAndChecksBoundEachProblemsErrorByItsTypes) {
  Database db = Database::open(":memory:");
  const int64_t h100 = db.upsert_device(recorded_gpu("GPU-aaaa"));
  KernelProblem bf16 = problem(1024);
  bf16.dtype = bf16.c_dtype = Dtype::kBf16;
  bf16.align_a = bf16.align_b = bf16.align_c = 8;
  const KernelProblem f32 = problem(2048);
  for (const KernelProblem& p : {bf16, f32}) {
    TrialRecord fast = measured(h100, p, "BM=128,BN=64,BK=8", 0.4);
    fast.rel_error = p.dtype == Dtype::kBf16 ? 1.2e-4 : 2e-5;
    db.record_trial(fast);
    db.record_trial(measured(h100, p, "BM=64,BN=64,BK=8", 0.5));
    EXPECT_EQ(trial_fault(fast, 1e-5).field, p.dtype == Dtype::kBf16 ? "" : "measurement.rel_error");
    EXPECT_EQ(trial_fault(fast, 1e-4).field, "") << "a looser bound given counts";
  }
  db.elect_verified_bests(1e-5);
  std::map<std::string, std::string> best;  // problem -> config
  for (const TrialRecord& t : db.trials(h100)) {
    if (t.is_best) best[t.problem.type_name()] = t.config_key;
  }
  EXPECT_EQ(best["bf16"], "BM=128,BN=64,BK=8");
  EXPECT_EQ(best["f32"], "BM=64,BN=64,BK=8");
}

TEST(DbExchange, ImportPolicyNames) {
  EXPECT_EQ(parse_import_policy("faster"), ImportPolicy::kFaster);
  EXPECT_EQ(parse_import_policy("keep"), ImportPolicy::kKeep);
  EXPECT_EQ(parse_import_policy("replace"), ImportPolicy::kReplace);
  EXPECT_THROW(parse_import_policy("newest"), InvalidArgumentError);
  for (ImportPolicy policy : {ImportPolicy::kFaster, ImportPolicy::kKeep, ImportPolicy::kReplace}) {
    EXPECT_EQ(parse_import_policy(to_string(policy)), policy);
  }
}

TEST(DbExchange, ValidatorSeesEachEntryButNotTrialsRecordedAsInvalid) {
  Database source = Database::open(":memory:");
  populate(source);
  const json exported = export_json(source, {.device = std::nullopt, .all_trials = true});
  std::vector<std::string> seen;
  Database target = Database::open(":memory:");
  import_json(target, exported, ImportPolicy::kFaster,
              [&](const std::string& name, const std::string& /*hash*/, const std::string& key,
                  const KernelProblem& p) { seen.push_back(name + " " + key + " " + p.to_string()); });
  EXPECT_EQ(seen.size(), 3u + 6u);  // 3 results, 7 trials of which one is 'invalid'
  EXPECT_EQ(seen.front(), "sgemm_simt BM=128,BN=64,BK=8 f32 nn 1024x768x512 align 4/4/2");
  EXPECT_EQ(
      std::count(seen.begin(), seen.end(), "sgemm_simt BM=16,BN=16,BK=4 f32 tt 4096x768x512 align 1/4/4"), 0);
}

// A valid document: two results and a failed trial for a device the target database does not know.
json valid_document() {
  auto result = [](const std::string& config, int64_t m, double time) {
    return json{{"device", "GPU-import"},
                {"problem",
                 {{"dtype", "f32"},
                  {"layout", "nt"},
                  {"m", m},
                  {"n", 256},
                  {"k", 128},
                  {"align_a", 4},
                  {"align_b", 2},
                  {"align_c", 1}}},
                {"template", "sgemm_simt"},
                {"template_hash", "feedfacecafebeef"},
                {"config", config},
                {"measurement",
                 {{"time_median_ms", time}, {"cublas_ms", 0.9}, {"registers", 64}, {"rel_error", 4e-7}}}};
  };
  json trial = result("BM=64,BN=16", 512, 1.0);
  trial["status"] = "launch_error";
  trial["reason"] = "too many resources requested for launch";
  trial["measurement"] = nullptr;
  return {{"format", "gemmforge-tuning"},
          {"format_version", 1},
          {"devices", json::array({{{"uuid", "GPU-import"},
                                    {"name", "NVIDIA L40S"},
                                    {"cc_major", 8},
                                    {"cc_minor", 9},
                                    {"sm_count", 142}}})},
          {"results", json::array({result("BM=64,BN=64", 512, 0.8), result("BM=128,BN=128", 1024, 2.5)})},
          {"trials", json::array({trial})}};
}

struct Rejection {
  const char* name;
  std::function<void(json&)> mutate;
  const char* message;  // expected inside what()
};

// A Rejection's mutation: the value at `pointer` becomes `value`.
std::function<void(json&)> set_at(const char* pointer, json value) {
  return [pointer, value](json& doc) { doc[json::json_pointer(pointer)] = value; };
}

// Each rejection's mutation of `valid()` is refused under every policy with its message, and leaves a
// populated database as it was.
void expect_rejected_unchanged(const std::vector<Rejection>& rejections, const std::function<json()>& valid) {
  TempFolder folder;
  const std::string path = folder.file("target.db");
  Database db = Database::open(path);
  populate(db);
  const std::string before = dump(path);
  for (const Rejection& rejection : rejections) {
    SCOPED_TRACE(rejection.name);
    json doc = valid();
    rejection.mutate(doc);
    for (ImportPolicy policy : {ImportPolicy::kFaster, ImportPolicy::kReplace}) {
      try {
        import_json(db, doc, policy, test_validator);
        ADD_FAILURE() << "accepted";
      } catch (const InvalidArgumentError& error) {
        EXPECT_NE(std::string(error.what()).find(rejection.message), std::string::npos) << error.what();
      }
    }
    EXPECT_EQ(dump(path), before);
  }
}

// valid_document() in format_version 2: its two results' cuBLAS times in "vendor".
json valid_document_2() {
  json doc = valid_document();
  doc["format_version"] = 2;
  doc["vendor"] = json::array();
  for (const json& result : doc["results"]) {
    doc["vendor"].push_back(
        {{"device", result["device"]}, {"problem", result["problem"]}, {"cublas_ms", 0.9}});
  }
  return doc;
}

TEST(DbExchange, TheValidDocumentOfTheRejectionTestsImports) {
  Database db = Database::open(":memory:");
  const ImportReport report = import_json(db, valid_document(), ImportPolicy::kFaster, test_validator);
  EXPECT_EQ(report.devices_added, 1);
  EXPECT_EQ(report.results_imported, 2);
  EXPECT_EQ(report.trials_imported, 1);
  EXPECT_EQ(db.find_device("GPU-import")->info.sm_count, 142);
  Database second = Database::open(":memory:");
  EXPECT_EQ(import_json(second, valid_document_2(), ImportPolicy::kFaster, test_validator).results_imported,
            2);
}

// "vendor" must agree with the results and trials beside it: an entry cannot be faster than the trials it
// sums up, nor slower than a result, nor missing, nor twice there.
TEST(DbExchange, CublasTimesThatDisagreeWithTheDocumentAreRejectedAndChangeNothing) {
  const std::vector<Rejection> rejections = {
      {"no vendor in version 2", [](json& doc) { doc.erase("vendor"); }, "vendor: missing"},
      {"vendor in version 1", set_at("/format_version", 1), "vendor: is not a member of format_version 1"},
      {"vendor not an array", set_at("/vendor", json::object()), "vendor: expected an array"},
      {"faster than the trials", set_at("/vendor/0/cublas_ms", 0.5),
       "0.5 ms is not the fastest cuBLAS time of its results and trials, 0.9 ms"},
      {"slower than a result", set_at("/vendor/1/cublas_ms", 1.5),
       "1.5 ms is slower than a result's cuBLAS time, 0.9 ms"},
      {"an entry missing", [](json& doc) { doc["vendor"].erase(1); },
       "has ok results or trials with cuBLAS times (0.9 ms the fastest) but no entry"},
      {"an entry twice", [](json& doc) { doc["vendor"].push_back(doc["vendor"][0]); },
       "vendor[2]: a second entry for"},
      {"an entry no trial is behind",
       [](json& doc) {
         json entry = doc["vendor"][1];
         entry["problem"]["m"] = 4096;
         doc["vendor"].push_back(entry);
       },
       "0.9 ms is no ok result's or trial's cuBLAS time: none carries one"},
      {"unknown device", set_at("/vendor/0/device", "GPU-elsewhere"),
       "vendor[0].device: \"GPU-elsewhere\" is not the uuid of an entry of \"devices\""},
      {"zero time", set_at("/vendor/0/cublas_ms", 0.0), "vendor[0].cublas_ms: 0.0 is not a time"},
      {"time as text", set_at("/vendor/0/cublas_ms", "0.9"), "vendor[0].cublas_ms: \"0.9\" is not a number"},
      {"unknown member", set_at("/vendor/0/tflops", 1.0), "vendor[0]"},
  };
  expect_rejected_unchanged(rejections, valid_document_2);
  // Without its trials a document may list a time faster than its results': the trials it came from stayed
  // behind.
  json results_only = valid_document_2();
  results_only.erase("trials");
  results_only["vendor"][0]["cublas_ms"] = 0.5;
  Database db = Database::open(":memory:");
  EXPECT_EQ(import_json(db, results_only, ImportPolicy::kFaster, test_validator).results_imported, 2);
}

TEST(DbExchange, MalformedOrHostileDocumentsAreRejectedAndChangeNothing) {
  using P = json::json_pointer;
  const std::vector<Rejection> rejections = {
      {"not an object",
       [](json& doc) {
         doc = json::array({1, 2});
       },
       "the document is not a JSON object"},
      {"no results", [](json& doc) { doc.erase("results"); }, "results: missing"},
      {"results not an array", set_at("/results", json::object()), "results: expected an array"},
      {"no devices", [](json& doc) { doc.erase("devices"); }, "devices: missing"},
      {"wrong format", set_at("/format", "clblast-tuning"),
       "format: \"clblast-tuning\" is not a gemmforge tuning"},
      {"future format version", set_at("/format_version", 3), "format_version: version 3 is not supported"},
      {"past format version", set_at("/format_version", 0), "format_version: version 0 is not supported"},
      {"format version as text", set_at("/format_version", "1"), "format_version: \"1\" is not an integer"},
      {"missing size", [](json& doc) { doc[P("/results/1/problem")].erase("k"); },
       "results[1].problem.k: missing"},
      {"m = 0", set_at("/results/1/problem/m", 0), "results[1].problem.m: 0 is not a size in 1..2147483647"},
      {"m = 2^40", set_at("/results/1/problem/m", int64_t{1} << 40),
       "results[1].problem.m: 1099511627776 is not a size in 1..2147483647"},
      {"m = -5", set_at("/results/1/problem/m", -5), "results[1].problem.m: -5 is not a size"},
      {"m as text", set_at("/results/1/problem/m", "1024"),
       "results[1].problem.m: \"1024\" is not an integer"},
      {"m fractional", set_at("/results/1/problem/m", 1024.5),
       "results[1].problem.m: 1024.5 is not an integer"},
      {"m beyond int64", set_at("/results/1/problem/m", uint64_t{1} << 63),
       "results[1].problem.m: 9223372036854775808"},
      {"alignment 3", set_at("/results/1/problem/align_b", 3),
       "results[1].problem.align_b: 3 is not an alignment"},
      {"alignment 8", set_at("/results/1/problem/align_c", 8),
       "results[1].problem.align_c: 8 is not an alignment"},
      {"bad layout", set_at("/results/1/problem/layout", "nx"),
       "results[1].problem.layout: \"nx\" is not a layout"},
      {"bad dtype", set_at("/results/1/problem/dtype", "f64"),
       "results[1].problem.dtype: unknown dtype 'f64'"},
      {"negative time", set_at("/results/1/measurement/time_median_ms", -1.0),
       "results[1].measurement.time_median_ms: -1 is not a time in ms in (0, 3.6e+06]"},
      {"NaN as a string", set_at("/results/1/measurement/time_median_ms", "NaN"),
       "results[1].measurement.time_median_ms: \"NaN\" is not a number"},
      {"zero median", set_at("/results/1/measurement/time_median_ms", 0.0),
       "results[1].measurement.time_median_ms: 0 is not a time in ms"},
      {"no median", [](json& doc) { doc[P("/results/1/measurement")].erase("time_median_ms"); },
       "results[1].measurement.time_median_ms"},
      {"negative cuBLAS time", set_at("/results/1/measurement/cublas_ms", -0.5),
       "results[1].measurement.cublas_ms: -0.5 is not a time in ms"},
      {"occupancy above 100%", set_at("/results/1/measurement/occupancy_pct", 150.0),
       "results[1].measurement.occupancy_pct: 150 is not a percentage in [0, 100]"},
      {"registers as boolean", set_at("/results/1/measurement/registers", true),
       "results[1].measurement.registers: true is not an integer"},
      {"measurement null", set_at("/results/1/measurement", nullptr),
       "results[1].measurement: expected an object"},
      {"unknown device", set_at("/results/1/device", "GPU-elsewhere"),
       "results[1].device: \"GPU-elsewhere\" is not the uuid of an entry of \"devices\""},
      {"unknown template", set_at("/results/1/template", "hgemm_wmma"),
       "results[1]: unknown template 'hgemm_wmma'"},
      {"config breaking a constraint", set_at("/results/1/config", "BM=3,BN=64"),
       "results[1]: config BM=3,BN=64 breaks BM % 16 == 0"},
      {"config not a key", set_at("/results/1/config", "BM"), "results[1].config: config 'BM'"},
      {"empty template", set_at("/results/1/template", ""), "results[1].template: is empty"},
      {"huge template name", set_at("/results/1/template", std::string(5000, 'x')),
       "results[1].template: is 5000 bytes long; at most 256"},
      {"device without cc", [](json& doc) { doc[P("/devices/0")].erase("cc_major"); },
       "devices[0].cc_major: missing"},
      {"device cc as text", set_at("/devices/0/cc_minor", "9"),
       "devices[0].cc_minor: \"9\" is not an integer"},
      {"device listed twice", [](json& doc) { doc["devices"].push_back(doc["devices"][0]); },
       "devices[1].uuid: \"GPU-import\" is listed twice"},
      {"unknown trial status", set_at("/trials/0/status", "exploded"),
       "trials[0].status: unknown trial status"},
      {"huge reason", set_at("/trials/0/reason", std::string(70000, 'r')),
       "trials[0].reason: is 70000 bytes long"},
      {"trials not an array", set_at("/trials", "none"), "trials: expected an array"},
  };
  expect_rejected_unchanged(rejections, valid_document);
}

// Splits RFC 4180 text into rows of fields.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = rows.back().back();
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.emplace_back(1);
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

TEST(DbExchange, CsvHasOneQuotedRowPerTrial) {
  Database db = Database::open(":memory:");
  populate(db);
  const std::string csv = export_csv(db, {.device = std::nullopt, .all_trials = true});
  EXPECT_NE(csv.find(",\"BM=128,BN=64,BK=8\","), std::string::npos);
  EXPECT_NE(csv.find("\"error: \"\"tile\"\" too small, see line 3\nsecond line\""), std::string::npos);
  const std::vector<std::vector<std::string>> rows = parse_csv(csv);
  ASSERT_EQ(rows.size(), 1u + 7u);
  const std::vector<std::string>& header = rows[0];
  for (const auto& row : rows) EXPECT_EQ(row.size(), header.size());
  auto column = [&](const std::string& name) {
    return static_cast<size_t>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  ASSERT_LT(column("config"), header.size());
  ASSERT_LT(column("time_median_ms"), header.size());
  const auto best = std::find_if(rows.begin() + 1, rows.end(), [&](const auto& row) {
    return row[column("config")] == "BM=128,BN=64,BK=8";
  });
  ASSERT_NE(best, rows.end());
  EXPECT_EQ((*best)[column("time_median_ms")], "0.42");
  EXPECT_EQ((*best)[column("is_best")], "1");
  EXPECT_EQ((*best)[column("layout")], "nn");
  EXPECT_EQ((*best)[column("device_uuid")], "GPU-aaaa");
  const auto failure = std::find_if(rows.begin() + 1, rows.end(), [&](const auto& row) {
    return row[column("status")] == "compile_error";
  });
  ASSERT_NE(failure, rows.end());
  EXPECT_EQ((*failure)[column("reason")], "error: \"tile\" too small, see line 3\nsecond line");
  EXPECT_EQ((*failure)[column("time_median_ms")], "");

  EXPECT_EQ(parse_csv(export_csv(db)).size(), 1u + 3u);  // without all_trials: the best ones
}

}  // namespace
}  // namespace gemmforge::db
