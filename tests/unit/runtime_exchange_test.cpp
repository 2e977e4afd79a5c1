// Export and import files as the `export` and `import` commands use them: round trips lose nothing, merge
// policies are obeyed, and malformed, hostile or invalid files are rejected with a clear error while the
// database stays exactly as it was.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "db/exchange.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

using nlohmann::json;

class RuntimeExchange : public ::testing::Test {
 protected:
  void SetUp() override {
    source_ = db::Database::open(folder_.file("source.db"));
    const int64_t h100 = source_.upsert_device(model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-h100"));
    const int64_t a100 = source_.upsert_device(model("NVIDIA A100-SXM4-40GB", "sm_80", "GPU-a100"));
    record(source_, h100, problem(4096, 4096, 4096), seed(0), 2.0, 2.2);
    record(source_, h100, problem(4096, 4096, 4096), seed(1), 2.4);
    record(source_, h100, problem(100, 200, 300, "tn", 4, 4, 2), seed(2, {{"VEC_A", 4}}), 0.02);
    record(source_, a100, problem(1024, 512, 256, "tt"), seed(3), 0.05, 0.04);
  }

  // Writes `text` as an export file and imports it into target_.
  db::ImportReport import_text(const std::string& text, db::ImportPolicy policy = db::ImportPolicy::kFaster) {
    const std::string path = folder_.file("input.json");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return runtime::import_file(target_, path, policy, TemplateLibrary::instance());
  }

  json exported() const { return db::export_json(source_); }

  TempFolder folder_;
  db::Database source_ = db::Database::open(":memory:");
  db::Database target_ = db::Database::open(":memory:");
};

TEST_F(RuntimeExchange, JsonRoundTripLosesNothing) {
  const std::string path = folder_.file("all.json");
  runtime::export_file(source_, path, runtime::ExportFormat::kJson,
                       {.device = std::nullopt, .all_trials = true});
  const db::ImportReport report =
      runtime::import_file(target_, path, db::ImportPolicy::kFaster, TemplateLibrary::instance());
  EXPECT_EQ(report.devices_added, 2);
  EXPECT_EQ(report.results_imported, 3);
  EXPECT_EQ(report.trials_imported, 1);  // the slower config of 4096^3; the bests came as results
  EXPECT_EQ(transferable_contents(target_), transferable_contents(source_));
}

TEST_F(RuntimeExchange, ExportCanBeLimitedToADeviceAndWrittenAsCsv) {
  const std::string path = folder_.file("a100.csv");
  runtime::export_file(source_, path, runtime::ExportFormat::kCsv,
                       {.device = std::string("A100"), .all_trials = false});
  std::ifstream in(path);
  std::string header, row, extra;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_FALSE(std::getline(in, extra)) << "one best result of one device";
  EXPECT_NE(row.find("GPU-a100"), std::string::npos) << row;
  EXPECT_THROW(runtime::export_file(source_, path, runtime::ExportFormat::kCsv,
                                    {.device = std::string("Voodoo"), .all_trials = false}),
               NotFoundError);
  EXPECT_THROW(runtime::parse_export_format("xml"), InvalidArgumentError);
}

TEST_F(RuntimeExchange, PoliciesDecideWhoseBestStays) {
  const int64_t h100 = target_.upsert_device(model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-h100"));
  record(target_, h100, problem(4096, 4096, 4096), seed(4), 3.0);  // slower than the imported 2.0 ms
  const std::string text = exported().dump();
  auto best_4096 = [&] {
    return target_.best(h100, *target_.find_problem(problem(4096, 4096, 4096)))->config_key;
  };

  import_text(text, db::ImportPolicy::kKeep);
  EXPECT_EQ(best_4096(), seed(4).key());
  import_text(text, db::ImportPolicy::kFaster);
  EXPECT_EQ(best_4096(), seed(0).key());
  record(target_, h100, problem(4096, 4096, 4096), seed(4), 1.0);  // now the local one is faster
  import_text(text, db::ImportPolicy::kFaster);
  EXPECT_EQ(best_4096(), seed(4).key());
  import_text(text, db::ImportPolicy::kReplace);
  EXPECT_EQ(best_4096(), seed(0).key());
}

struct BadFile {
  const char* name;
  std::function<std::string(json)> make;
  const char* message;  // expected inside the error
};

TEST_F(RuntimeExchange, BadFilesAreRejectedAndChangeNothing) {
  import_text(exported().dump());  // the target holds something that must survive
  const json before = contents(target_);
  auto edit = [](const char* pointer, json value) {
    return [pointer, value](json doc) {
      doc[json::json_pointer(pointer)] = value;
      return doc.dump();
    };
  };
  const std::vector<BadFile> bad = {
      {"truncated JSON",
       [](json doc) {
         const std::string t = doc.dump();
         return t.substr(0, t.size() / 2);
       },
       "not valid JSON"},
      {"not an export", [](json) { return std::string(R"({"hello": "world"})"); }, "format"},
      {"unknown template", edit("/results/0/template", "sgemm_gone"), "unknown template 'sgemm_gone'"},
      {"config outside the domain", edit("/results/0/config", seed(0, {{"BM", 100}}).key()),
       "outside its domain"},
      {"config breaking a constraint", edit("/results/0/config", seed(0, {{"WM", 128}, {"WN", 16}}).key()),
       "lanes_tile_warp"},
      {"vectors wider than the alignment", edit("/results/0/problem/align_a", 1), "vector_a_aligned"},
      {"config missing a parameter", edit("/results/0/config", "BM=128,BN=128"), "lacks parameter"},
      {"absurd size", edit("/results/0/problem/m", 1000000000000LL), "results[0].problem.m"},
      {"negative time", edit("/results/0/measurement/time_median_ms", -1.0), "time_median_ms"},
      {"deep nesting",
       [](json) { return "{\"devices\": " + std::string(100000, '[') + std::string(100000, ']') + "}"; },
       "nested deeper"},
  };
  for (const BadFile& b : bad) {
    try {
      import_text(b.make(exported()));
      ADD_FAILURE() << b.name << ": accepted";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << b.name << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("input.json"), std::string::npos) << b.name << ": " << e.what();
    }
    EXPECT_EQ(contents(target_), before) << b.name << " changed the database";
  }
}

TEST_F(RuntimeExchange, HugeFilesAreReadOnlyAsFarAsTheyMakeSenseAndMissingOnesNotAtAll) {
  // No size cap: a 1 GiB file (sparse, so it costs no disk) is refused where it stops being an export,
  // long before its end.
  const std::string huge = folder_.file("huge.json");
  { std::ofstream(huge) << R"({"format": "gemmforge-tuning", "format_version": 1, "devices": [)"; }
  std::filesystem::resize_file(huge, std::uintmax_t{1} << 30);
  const json before = contents(target_);
  const auto start = std::chrono::steady_clock::now();
  try {
    runtime::import_file(target_, huge, db::ImportPolicy::kFaster, TemplateLibrary::instance());
    ADD_FAILURE() << "a file of zero bytes after a header was imported";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("huge.json: "), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)) << "the whole file was read";
  EXPECT_THROW(runtime::import_file(target_, folder_.file("missing.json"), db::ImportPolicy::kFaster,
                                    TemplateLibrary::instance()),
               InvalidArgumentError);
  EXPECT_EQ(contents(target_), before);
}

}  // namespace
}  // namespace gemmforge::testing
