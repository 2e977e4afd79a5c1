// The tuning report: the block tile's arithmetic intensity, the best and top-k trials per device and
// problem read from a database, and the table and JSON it prints. Needs no GPU.
#include "tuner/report.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

TEST(TileIntensity, IsTwoBmBnOverElementBytesTimesBmPlusBn) {
  // 128 x 128 FP32 tiles: 2·128·128·BK / (4·256·BK) = 32 FLOPs per byte, whatever BK.
  EXPECT_DOUBLE_EQ(*tile_flops_per_byte(Config("t", {{"BM", 128}, {"BN", 128}, {"BK", 8}}), Dtype::kF32),
                   32.0);
  EXPECT_DOUBLE_EQ(*tile_flops_per_byte(Config("t", {{"BM", 128}, {"BN", 128}}), Dtype::kF32), 32.0);
  EXPECT_DOUBLE_EQ(*tile_flops_per_byte(Config("t", {{"BM", 64}, {"BN", 256}, {"BK", 16}}), Dtype::kF32),
                   2.0 * 64 * 256 / (4.0 * 320));
  EXPECT_DOUBLE_EQ(*tile_flops_per_byte(Config("t", {{"BM", 128}, {"BN", 128}}), Dtype::kF16), 64.0);
  EXPECT_FALSE(tile_flops_per_byte(Config("t", {{"TILE", 128}}), Dtype::kF32));
}

class ReportTest : public ::testing::Test {
 protected:
  ReportTest() : database_(db::Database::open(":memory:")) {
    DeviceInfo h200 = DeviceInfo::nominal("sm_90");
    h200.name = "NVIDIA H200";
    h200.uuid = "GPU-aaaa";
    h200_ = database_.upsert_device(h200);
    DeviceInfo a100 = DeviceInfo::nominal("sm_80");
    a100.name = "NVIDIA A100";
    a100.uuid = "GPU-bbbb";
    a100_ = database_.upsert_device(a100);
    big_.m = big_.n = big_.k = 4096;
    small_.m = small_.n = small_.k = 512;
    for (int i = 0; i < 7; ++i) record(h200_, big_, 128 >> (i % 3), 2.0 + 0.1 * i, i);
    record(h200_, big_, 64, 0, 99, db::TrialStatus::kCrashed);
    record(h200_, small_, 32, 0.05, 0);
    record(a100_, big_, 128, 4.0, 0);
  }

  void record(int64_t device, const KernelProblem& problem, int64_t bm, double ms, int variant,
              db::TrialStatus status = db::TrialStatus::kOk) {
    db::TrialRecord t;
    t.device_id = device;
    t.problem = problem;
    t.template_name = "sgemm_simt";
    t.template_hash = "hash";
    t.config_key = fmt::format("BM={},BN=128,BK=8,V={}", bm, variant);
    t.status = status;
    t.cublas_ms = 2.5;
    if (status == db::TrialStatus::kOk) {
      t.time_median_ms = ms;
      t.tflops = problem.flops() / ms / 1e9;
      t.ratio_vs_cublas = 2.5 / ms;
      t.registers = 128;
      t.smem_bytes = 49152;
      t.occupancy_blocks = 1;
      t.occupancy_pct = 12.5;
    } else {
      t.reason = "the worker died";
    }
    database_.record_trial(t);
  }

  db::Database database_;
  int64_t h200_ = 0, a100_ = 0;
  KernelProblem big_, small_;
};

TEST_F(ReportTest, BestAndTopKPerDeviceAndProblem) {
  ReportFilter filter;
  filter.top = 3;
  const std::vector<ProblemReport> reports = build_report(database_, filter);
  ASSERT_EQ(reports.size(), 3u);  // H200 x 2 problems, A100 x 1
  const ProblemReport* h200_big = nullptr;
  for (const ProblemReport& r : reports) {
    if (r.device.info.uuid == "GPU-aaaa" && r.problem == big_) h200_big = &r;
  }
  ASSERT_NE(h200_big, nullptr);
  EXPECT_EQ(h200_big->trials, 8u);
  EXPECT_EQ(h200_big->by_status.at("ok"), 7u);
  EXPECT_EQ(h200_big->by_status.at("crashed"), 1u);
  ASSERT_EQ(h200_big->top.size(), 3u);
  EXPECT_DOUBLE_EQ(*h200_big->top[0].trial.time_median_ms, 2.0);
  EXPECT_DOUBLE_EQ(*h200_big->top[1].trial.time_median_ms, 2.1);
  ASSERT_TRUE(h200_big->best);
  EXPECT_TRUE(h200_big->best->trial.is_best);
  EXPECT_DOUBLE_EQ(*h200_big->best->trial.time_median_ms, 2.0);
  EXPECT_DOUBLE_EQ(*h200_big->top[0].flops_per_byte, 32.0);  // BM=128, BN=128
  EXPECT_DOUBLE_EQ(*h200_big->cublas_ms, 2.5);
}

TEST_F(ReportTest, FiltersByDeviceAndProblem) {
  ReportFilter filter;
  filter.device = "a100";
  std::vector<ProblemReport> reports = build_report(database_, filter);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].device.info.name, "NVIDIA A100");

  filter.device = "";
  filter.problem = [&](const KernelProblem& p) { return p == small_; };
  reports = build_report(database_, filter);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].problem, small_);

  filter.device = "V100";
  try {
    build_report(database_, filter);
    FAIL() << "an unknown device was accepted";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("NVIDIA H200"), std::string::npos) << e.what();
  }
}

TEST_F(ReportTest, TableAndJsonCarryTheColumns) {
  ReportFilter filter;
  filter.device = "GPU-aaaa";
  filter.problem = [&](const KernelProblem& p) { return p == big_; };
  filter.top = 2;
  const std::vector<ProblemReport> reports = build_report(database_, filter);

  const std::string table = format_report(reports);
  for (const char* column :
       {"time ms", "TFLOP/s", "vs cuBLAS", "blocks/SM", "occ %", "FLOP/B", "regs", "smem KiB"})
    EXPECT_NE(table.find(column), std::string::npos) << column << "\n" << table;
  EXPECT_NE(table.find("BM=128,BN=128,BK=8,V=0"), std::string::npos) << table;
  EXPECT_NE(table.find("7 ok"), std::string::npos) << table;
  EXPECT_NE(table.find("1.250x"), std::string::npos) << table;  // cuBLAS 2.5 ms / 2.0 ms

  const nlohmann::json json = nlohmann::json::parse(report_json(reports));
  ASSERT_TRUE(json.is_array());
  ASSERT_EQ(json.size(), 1u);
  EXPECT_EQ(json[0]["device"]["uuid"], "GPU-aaaa");
  EXPECT_EQ(json[0]["problem"]["m"], 4096);
  EXPECT_EQ(json[0]["top"].size(), 2u);
  EXPECT_DOUBLE_EQ(json[0]["top"][0]["time_ms"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(json[0]["top"][0]["flops_per_byte"].get<double>(), 32.0);
  EXPECT_EQ(json[0]["top"][0]["occupancy_blocks"], 1);
  EXPECT_EQ(json[0]["best"]["is_best"], true);
  EXPECT_EQ(json[0]["by_status"]["crashed"], 1);

  EXPECT_NE(format_report({}).find("nothing was tuned"), std::string::npos);
}

}  // namespace
}  // namespace gemmforge::tuner
