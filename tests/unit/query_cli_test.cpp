// The query, export and import commands run as a user runs them: `query --device-name` answers from the
// shipped results (a test export in their place through GEMMFORGE_TUNED_DIR) without a GPU, exports
// round-trip through import, and a rejected import exits with an error and changes nothing.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cuda/device.hpp"
#include "db/exchange.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

using nlohmann::json;

class QueryCli : public ::testing::Test {
 protected:
  // The tool with the test exports as shipped results and no user database unless --db names one.
  CommandResult gemmforge(const std::string& arguments) const {
    return run_command("GEMMFORGE_TUNED_DIR='" + current_results() + "' GEMMFORGE_DB='" +
                       folder_.file("absent.db") + "' " + gemmforge_tool() + " " + arguments);
  }
  json query_json(const std::string& arguments) const {
    const CommandResult r = gemmforge("query --json " + arguments);
    EXPECT_EQ(r.status, 0) << r.output;
    return json::parse(r.output, nullptr, false);
  }

  TempFolder folder_;
};

TEST_F(QueryCli, CandidatesListTheModelsRankingFastestFirst) {
  // Nobody tuned it: the model's choice is its best-ranked candidate.
  json answer = query_json("--shape 1500x1500x1500 --device-name h200 --no-vendor --candidates 6");
  ASSERT_EQ(answer["candidates"].size(), 6u) << answer.dump(2);
  EXPECT_GE(answer["candidates_ranked"].get<size_t>(), 6u);
  EXPECT_EQ(answer["candidates"][0]["template"], answer["template"]);
  EXPECT_EQ(answer["candidates"][0]["config"], answer["config"]);
  EXPECT_DOUBLE_EQ(answer["candidates"][0]["predicted_ms"].get<double>(), answer["time_ms"].get<double>());
  double previous = 0;
  for (const json& c : answer["candidates"]) {
    const double pessimistic = c["predicted_ms"].get<double>() * c["error"].get<double>();
    EXPECT_GE(pessimistic, previous * (1 - 1e-12)) << c.dump();
    EXPECT_GE(c["error"].get<double>(), 1.0);
    previous = pessimistic;
  }
  // A tuned problem is still ranked as if nobody had tuned it; without the option nothing is listed.
  answer = query_json("--shape 4096x4096x4096 --device-name h200 --candidates 2");
  EXPECT_EQ(answer["level"], "exact");
  EXPECT_EQ(answer["candidates"].size(), 2u);
  EXPECT_FALSE(query_json("--shape 4096x4096x4096 --device-name h200").contains("candidates"));
  const CommandResult text = gemmforge("query --shape 1500x1500x1500 --device-name h200 --candidates 3");
  EXPECT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("best of"), std::string::npos) << text.output;
}

TEST_F(QueryCli, DeviceNameAnswersFromTheShippedResultsWithoutAGpu) {
  json answer = query_json("--shape 4096x4096x4096 --device-name 'NVIDIA H200'");
  EXPECT_EQ(answer["level"], "exact");
  EXPECT_EQ(answer["source"], "shipped results");
  EXPECT_EQ(answer["template"], "sgemm_simt");
  EXPECT_EQ(answer["config"], seed(1, {{"RASTER", 16}}).key());
  EXPECT_DOUBLE_EQ(answer["time_ms"].get<double>(), 2.5);
  EXPECT_NEAR(answer["ratio_vs_cublas"].get<double>(), 2.6 / 2.5, 1e-12);
  EXPECT_FALSE(answer["cublas_predicted"].get<bool>());  // timed while tuning: no error to weigh
  EXPECT_DOUBLE_EQ(answer["cublas_error"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(answer["time_error"].get<double>(), 1.0);
  EXPECT_EQ(answer["device"]["limits_from"], "shipped results");
  EXPECT_EQ(answer["launch"]["blocks"], answer["launch"]["tiles"]);  // a block per tile

  // Nobody tuned it: both times are predicted, each with the typical error serving weighs it by.
  answer = query_json("--shape 1500x1500x1500 --device-name h200");
  EXPECT_TRUE(answer["time_predicted"].get<bool>());
  EXPECT_GT(answer["time_error"].get<double>(), 1.0);
  EXPECT_TRUE(answer["cublas_predicted"].get<bool>());
  EXPECT_GE(answer["cublas_error"].get<double>(), 1.0);

  // Part of the name finds the model; a shape nobody tuned gets the model's prediction.
  answer = query_json("--shape 1500x1500x1500 --device-name h200 --no-vendor");
  EXPECT_EQ(answer["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(answer["level"], "model");
  EXPECT_TRUE(answer["time_predicted"].get<bool>());
  EXPECT_GT(answer["time_ms"].get<double>(), 0);

  // A model nothing is known of gets the analytic model over the seeds, from nominal limits.
  answer = query_json("--shape 4096x4096x4096 --device-name 'NVIDIA A100-SXM4-80GB' --no-vendor");
  EXPECT_EQ(answer["level"], "model");
  EXPECT_EQ(answer["device"]["limits_from"], "nominal sm_80 limits");
  EXPECT_NE(answer["source"].get<std::string>().find("no measurements of sm_80 GPUs"), std::string::npos);

  const CommandResult text = gemmforge("query --shape 4096x4096x4096 --device-name 'NVIDIA H200'");
  EXPECT_EQ(text.status, 0) << text.output;
  EXPECT_NE(text.output.find("level     exact"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("cuBLAS    2.6000 ms measured"), std::string::npos) << text.output;
  EXPECT_NE(text.output.find("source    shipped results"), std::string::npos) << text.output;
}

// Pedantic FP32 is a problem of its own: the FP32 result of the same shape does not serve it, and only the
// plain FFMA templates, or cuBLAS, may.
TEST_F(QueryCli, PedanticFp32IsServedByFfmaKernelsOrCublasOnly) {
  for (const char* shape : {"4096x4096x4096", "1x4096x4096", "1500x1500x1500"}) {
    const json answer =
        query_json(std::string("--dtype ffma --shape ") + shape + " --device-name 'NVIDIA H200' --no-vendor");
    EXPECT_EQ(answer["level"], "model") << shape;
    const std::string served = answer["template"].get<std::string>();
    EXPECT_TRUE(served == "sgemm_simt" || served == "sgemm_skinny") << shape << ": " << served;
  }
  const json vendor = query_json("--dtype f32-pedantic --shape 1500x1500x1500 --device-name 'NVIDIA H200'");
  EXPECT_TRUE(vendor["level"] == "model" || vendor["level"] == "vendor") << vendor.dump();
}

TEST_F(QueryCli, TheUsersDatabaseAnswersFirst) {
  const std::string path = folder_.file("user.db");
  {
    db::Database database = db::Database::open(path);
    const int64_t h200 = database.upsert_device(model("NVIDIA H200", "sm_90", "GPU-mine"));
    record(database, h200, problem(4096, 4096, 4096), seed(0), 2.25, 2.5);
  }
  const json answer = query_json("--shape 4096x4096x4096 --device-name 'NVIDIA H200' --db '" + path + "'");
  EXPECT_EQ(answer["level"], "exact");
  EXPECT_EQ(answer["config"], seed(0).key());
  EXPECT_DOUBLE_EQ(answer["time_ms"].get<double>(), 2.25);
  // Column-major storage of the same call is the row-major problem of C^T: same tuned result.
  const json col =
      query_json("--shape 4096x4096x4096 --order col --device-name 'NVIDIA H200' --db '" + path + "'");
  EXPECT_EQ(col["level"], "exact");
}

TEST_F(QueryCli, WithoutAGpuOrADeviceNameTheQuerySaysWhatToPass) {
  if (cuda::unavailable_reason().empty()) GTEST_SKIP() << "this machine has a GPU";
  const CommandResult r = gemmforge("query --shape 64x64x64");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("--device-name"), std::string::npos) << r.output;
}

TEST_F(QueryCli, BadQueriesExitWithAnError) {
  EXPECT_EQ(gemmforge("query --shape 0x64x64 --device-name H200").status, 2);
  EXPECT_EQ(gemmforge("query --shape 64x64x64 --device-name 'Voodoo 5'").status, 2);
  EXPECT_EQ(
      gemmforge("query --shape 64x64x64 --device-name H200 --db '" + folder_.file("nope.db") + "'").status,
      2);
  EXPECT_EQ(gemmforge("query --shape 64x64x64 --device-name H200 --layout xx").status, 2);
}

TEST_F(QueryCli, ExportThenImportReproducesTheDatabase) {
  const std::string source = folder_.file("source.db");
  {
    db::Database database = db::Database::open(source);
    const int64_t gpu = database.upsert_device(model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-source"));
    record(database, gpu, problem(4096, 4096, 4096), seed(0), 2.0, 2.2);
    record(database, gpu, problem(4096, 4096, 4096), seed(1), 2.5);
    record(database, gpu, problem(333, 444, 555, "tt", 1, 4, 1), seed(4), 0.01);
  }
  const std::string file = folder_.file("export.json");
  CommandResult r = gemmforge("export --all-trials --db '" + source + "' -o '" + file + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string target = folder_.file("target.db");
  r = gemmforge("import '" + file + "' --db '" + target + "'");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 imported"), std::string::npos) << r.output;

  EXPECT_EQ(transferable_contents(db::Database::open(target)),
            transferable_contents(db::Database::open(source)));

  r = gemmforge("export --format csv --db '" + target + "'");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 3) << r.output;  // header and two bests
  EXPECT_EQ(gemmforge("export --db '" + folder_.file("absent.db") + "'").status, 2);
}

TEST_F(QueryCli, ARejectedImportExitsWithAnErrorAndChangesNothing) {
  const std::string path = folder_.file("user.db");
  {
    db::Database database = db::Database::open(path);
    const int64_t gpu = database.upsert_device(model("NVIDIA H200", "sm_90", "GPU-mine"));
    record(database, gpu, problem(4096, 4096, 4096), seed(0), 2.25);
  }
  const json before = contents(db::Database::open(path));
  json bad = json::parse(std::ifstream(current_results("shipped_h200.json")));
  bad["results"][2]["config"] = seed(0, {{"BK", 16}, {"UNROLL_K", 8}}).key();  // 8 unrolled groups of 4 > 16
  const std::string file = folder_.file("bad.json");
  std::ofstream(file) << bad.dump();
  const CommandResult r = gemmforge("import '" + file + "' --db '" + path + "'");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unroll_within_stage"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("nothing was imported"), std::string::npos) << r.output;
  EXPECT_EQ(contents(db::Database::open(path)), before);
  EXPECT_EQ(gemmforge("import '" + file + "' --policy newest --db '" + path + "'").status, 2);
}

}  // namespace
}  // namespace gemmforge::testing
