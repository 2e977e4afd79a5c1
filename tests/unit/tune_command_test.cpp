// `gemmforge tune` and `gemmforge report` run as a user runs them. Without a GPU, tune fails with exit
// code 3, says why and writes nothing; report reads a database and prints the table or JSON.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cuda/device.hpp"
#include "db/database.hpp"
#include "support/tuner_fixtures.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::tuner {
namespace {

struct Ran {
  int status = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A trial of `template_name` on `device_id` taking 0.125 ms against cuBLAS's 0.1, its figures consistent.
db::TrialRecord timed_trial(int64_t device_id, const KernelProblem& problem, const std::string& template_name,
                            const std::string& template_hash, const std::string& config_key) {
  db::TrialRecord t;
  t.device_id = device_id;
  t.problem = problem;
  t.template_name = template_name;
  t.template_hash = template_hash;
  t.config_key = config_key;
  t.time_median_ms = 0.125;
  t.tflops = problem.flops() / 0.125 / 1e9;
  t.cublas_ms = 0.1;
  t.ratio_vs_cublas = 0.8;
  return t;
}

class TuneCommandTest : public ::testing::Test {
 protected:
  // Runs the tool with GEMMFORGE_DB pointing into the test's folder.
  Ran gemmforge(const std::string& arguments) const {
    const std::string out = folder_.file("stdout");
    const std::string err = folder_.file("stderr");
    const std::string command = "GEMMFORGE_DB='" + folder_.file("default.db") + "' " +
                                std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge " + arguments + " > '" +
                                out + "' 2> '" + err + "'";
    const int raw = std::system(command.c_str());
    return Ran{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, read_file(out), read_file(err)};
  }

  fixtures::TempFolder folder_;
};

TEST_F(TuneCommandTest, WithoutAGpuTuneFailsClearlyAndWritesNothing) {
  if (cuda::unavailable_reason().empty()) GTEST_SKIP() << "this machine has a GPU; the GPU tests cover tune";
  const std::string db = folder_.file("new/folder/tune.db");
  const Ran r = gemmforge("tune --db '" + db + "' --shape 256x256x256 --quiet");
  EXPECT_EQ(r.status, 3) << r.err;  // the tool's exit code for "no device"
  EXPECT_NE(r.err.find("GPU"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was written"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("new"))) << "tune created the database folder";

  // The default database (GEMMFORGE_DB) is left alone too.
  EXPECT_EQ(gemmforge("tune --shape 256x256x256 --quiet").status, 3);
  EXPECT_FALSE(std::filesystem::exists(folder_.file("default.db")));
}

TEST_F(TuneCommandTest, ArgumentErrorsComeBeforeTheDeviceCheck) {
  const Ran strategy =
      gemmforge("tune --db '" + folder_.file("x.db") + "' --shape 64x64x64 --strategy annealing");
  EXPECT_EQ(strategy.status, 2) << strategy.err;
  EXPECT_NE(strategy.err.find("annealing"), std::string::npos) << strategy.err;

  const Ran nothing = gemmforge("tune --db '" + folder_.file("x.db") + "'");
  EXPECT_EQ(nothing.status, 2) << nothing.err;
  EXPECT_NE(nothing.err.find("--shape"), std::string::npos) << nothing.err;

  const Ran pin = gemmforge("tune --db '" + folder_.file("x.db") + "' --shape 64x64x64 --pin BK");
  EXPECT_EQ(pin.status, 2) << pin.err;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("x.db")));
}

TEST_F(TuneCommandTest, AlignStatesTheOperandsWidthsAndPrintProblemsShowsTheCanonicalProblems) {
  // Tight leading dimensions of 300x200x100 nn give widths 4/4/4; --align asks for others. Of a
  // column-major call, --align names the call's own A, B and C: its canonical left operand is B.
  const Ran row = gemmforge("tune --shape 300x200x100 --align 1,2,1 --print-problems");
  EXPECT_EQ(row.status, 0) << row.err;
  EXPECT_EQ(row.out, "f32 nn 300x200x100 align 1/2/1\n");
  const Ran col = gemmforge("tune --shape 30x20x10 --layout nt --order col --align 1,2,4 --print-problems");
  EXPECT_EQ(col.status, 0) << col.err;
  EXPECT_EQ(col.out, "f32 tn 20x30x10 align 2/1/4\n");
  const Ran tight = gemmforge("tune --shape 30x20x10 --shape 31x20x9 --print-problems");
  EXPECT_EQ(tight.out, "f32 nn 30x20x10 align 2/4/4\nf32 nn 31x20x9 align 1/4/4\n");
  EXPECT_FALSE(std::filesystem::exists(folder_.file("default.db"))) << "--print-problems opened the database";

  for (const char* bad : {"3,4,4", "4,4", "4;4;4", "4,4,4,4"}) {
    const Ran refused =
        gemmforge(std::string("tune --shape 30x20x10 --print-problems --align '") + bad + "'");
    EXPECT_EQ(refused.status, 2) << bad;
    EXPECT_NE(refused.err.find("--align"), std::string::npos) << refused.err;
    EXPECT_TRUE(refused.out.empty()) << bad;
  }
  const Ran misses = gemmforge("tune --from-misses --print-problems");
  EXPECT_EQ(misses.status, 2) << misses.err;
}

// --retune TEMPLATE tunes a template again on every problem it has results on for the GPU's model, as after
// a change of its source: --print-problems lists them without a GPU for the model --device names, from the
// shipped results and the database (which it reads and does not create), each problem once.
TEST_F(TuneCommandTest, RetuneListsTheProblemsATemplateHasResultsOnForAGpuModel) {
  const Ran shipped = gemmforge("tune --retune gemm_tma --print-problems --device h200");
  ASSERT_EQ(shipped.status, 0) << shipped.err;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("default.db")))
      << "--print-problems created the database";
  std::vector<std::string> lines;
  std::istringstream in(shipped.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_GE(lines.size(), 40u) << shipped.out;
  EXPECT_EQ(std::set<std::string>(lines.begin(), lines.end()).size(), lines.size()) << "listed twice";
  const auto listed = [&](const std::string& problem) {
    return std::find(lines.begin(), lines.end(), problem) != lines.end();
  };
  EXPECT_TRUE(listed("bf16 nn 4103x4105x4104 align 8/1/1")) << shipped.out;  // gemm_tma's 5x problem
  EXPECT_TRUE(listed("f32 nn 4096x4096x4096 align 4/4/4")) << shipped.out;
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind("ffma ", 0), std::string::npos) << line << ": gemm_tma never computes plain FFMA";
  }

  // A problem of the user's own, tuned with gemm_tma on an H200 (another card of the model), joins the list;
  // one tuned with another template, or on another model, does not.
  const std::string path = folder_.file("own.db");
  {
    db::Database database = db::Database::open(path);
    const auto record = [&](const std::string& gpu, const std::string& template_name, int64_t m) {
      DeviceInfo device = DeviceInfo::nominal("sm_90");
      device.name = gpu;
      device.uuid = "GPU-" + gpu.substr(gpu.size() - 4);
      db::TrialRecord t = timed_trial(database.upsert_device(device),
                                      test_support::typed_problem(m, 1000, 1000, "nn", "bf16"), template_name,
                                      "0123456789abcdef", "WGM=2");
      t.servable = false;  // measured with a source of gemm_tma this gemmforge does not know
      database.record_trial(t);
    };
    record("NVIDIA H200", "gemm_tma", 1111);
    record("NVIDIA H200", "hgemm_mma", 2222);
    record("NVIDIA H100 80GB HBM3", "gemm_tma", 3333);
  }
  const Ran own = gemmforge("tune --retune gemm_tma --print-problems --device h200 --db '" + path + "'");
  ASSERT_EQ(own.status, 0) << own.err;
  EXPECT_NE(own.out.find("bf16 nn 1111x1000x1000 align 8/8/8\n"), std::string::npos) << own.out;
  EXPECT_EQ(own.out.find("2222x1000x1000"), std::string::npos) << own.out;
  EXPECT_EQ(own.out.find("3333x1000x1000"), std::string::npos) << own.out;
  EXPECT_EQ(own.out.size(), shipped.out.size() + std::string("bf16 nn 1111x1000x1000 align 8/8/8\n").size());

  // The template is named, alone, and the model must be one.
  const Ran unknown = gemmforge("tune --retune gemm_tmb --print-problems --device h200");
  EXPECT_EQ(unknown.status, 2) << unknown.err;
  EXPECT_NE(unknown.err.find("gemm_tma"), std::string::npos)
      << "the known templates are named: " << unknown.err;
  const Ran other = gemmforge("tune --retune gemm_tma --template sgemm_simt --print-problems --device h200");
  EXPECT_EQ(other.status, 2) << other.err;
  const Ran unnamed = gemmforge("tune --retune gemm_tma --print-problems");
  EXPECT_EQ(unnamed.status, 2) << unnamed.err;
  EXPECT_NE(unnamed.err.find("--device"), std::string::npos) << unnamed.err;
  const Ran several = gemmforge("tune --retune gemm_tma --print-problems --device nvidia");
  EXPECT_EQ(several.status, 2) << several.err;
  EXPECT_NE(several.err.find("several GPU models"), std::string::npos) << several.err;
  const Ran none = gemmforge("tune --retune gemm_tma --print-problems --device a100");
  EXPECT_EQ(none.status, 2) << none.err;
  EXPECT_NE(none.err.find("NVIDIA H200"), std::string::npos) << "the known models are named: " << none.err;
  const Ran ranks = gemmforge("tune --retune gemm_tma --print-problems --device h200 --rank 0/2");
  EXPECT_EQ(ranks.status, 2) << ranks.err;
}

TEST_F(TuneCommandTest, ReportReadsTheDatabase) {
  const std::string path = folder_.file("tuned.db");
  {
    db::Database database = db::Database::open(path);
    DeviceInfo device = DeviceInfo::nominal("sm_90");
    device.name = "NVIDIA H200";
    device.uuid = "GPU-cafe";
    KernelProblem square;
    square.m = square.n = square.k = 1024;
    database.record_trial(
        timed_trial(database.upsert_device(device), square, "sgemm_simt", "h", "BM=128,BN=64,BK=8"));
  }
  const Ran table = gemmforge("report --db '" + path + "'");
  EXPECT_EQ(table.status, 0) << table.err;
  EXPECT_NE(table.out.find("BM=128,BN=64,BK=8"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("NVIDIA H200"), std::string::npos) << table.out;

  const Ran json =
      gemmforge("report --json --db '" + path + "' --shape 1024x1024x1024 --device h200 --top 1");
  ASSERT_EQ(json.status, 0) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_TRUE(parsed.is_array()) << json.out;
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0]["best"]["config"], "BM=128,BN=64,BK=8");
  EXPECT_NEAR(parsed[0]["best"]["flops_per_byte"].get<double>(), 2.0 * 128 * 64 / (4.0 * 192), 1e-12);

  const Ran other_shape = gemmforge("report --json --db '" + path + "' --shape 64x64x64");
  EXPECT_EQ(other_shape.status, 0) << other_shape.err;
  EXPECT_EQ(nlohmann::json::parse(other_shape.out, nullptr, false).size(), 0u) << other_shape.out;
}

TEST_F(TuneCommandTest, ReportOfAMissingDatabaseSaysSoAndCreatesNothing) {
  const std::string path = folder_.file("missing.db");
  const Ran r = gemmforge("report --db '" + path + "'");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no tuning database"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace gemmforge::tuner
