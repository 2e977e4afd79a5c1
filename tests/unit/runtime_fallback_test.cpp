// The fallback chain on a small database: each level is reached in its turn, candidates that do not fit
// the asked shape are passed over, and every answer is valid for the problem and device it is for.
#include <gtest/gtest.h>

#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/fallback_chain.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

using runtime::FallbackChain;
using runtime::Selection;
using runtime::SharedDatabase;
using runtime::TunedSource;

// Functions, not constants: the template library must not be read during static initialization.
// big() is seed 1 of sgemm_simt with a wider raster: not what the heuristic would pick.
Config big() {
  return seed(1, {{"RASTER", 16}});
}
Config mid() {
  return seed(2, {{"RASTER", 4}});
}
Config small_tt() {
  return seed(3);
}
Config narrow() {
  return seed(4);
}  // vector widths 1: fits any alignment
Config split() {
  return seed(3, {{"SPLIT_K", 16}});
}  // 16 slices of BK = 32 need k > 480

void expect_valid(const Selection& s, const DeviceInfo& device, const KernelProblem& p) {
  EXPECT_NO_THROW(rtc::make_spec(*s.choice.kernel_template, s.choice.config, p, device.arch(), &device))
      << s.choice.config.key() << " for " << p.to_string() << " on " << device.name;
}

class RuntimeFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    h100_ = database_.with([&](db::Database& d) { return d.upsert_device(h100_card_); });
    database_.with([&](db::Database& d) {
      record(d, h100_, problem(4096, 4096, 4096), big(), 2.0, 2.1);
      record(d, h100_, problem(4096, 4096, 4096), mid(), 2.2);  // 0.91 of the best there
      record(d, h100_, problem(1024, 1024, 1024), mid(), 0.10, 0.12);
      record(d, h100_, problem(512, 512, 512, "tt"), small_tt(), 0.05);
      record(d, h100_, problem(512, 512, 512, "tt"), mid(), 0.0526);  // 0.95 of the best there
      record(d, h100_, problem(2048, 2048, 2048, "nn", 1, 1, 1), narrow(), 1.0);
      record(d, h100_, problem(64, 64, 8192), split(), 0.03);
    });
  }

  Selection select(const DeviceInfo& device, const KernelProblem& p, TunedSource* shipped = nullptr) {
    const Selection s = FallbackChain(TemplateLibrary::instance(), &user_, shipped).select(device, p);
    expect_valid(s, device, p);
    return s;
  }

  const DeviceInfo h100_card_ = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
  SharedDatabase database_{db::Database::open(":memory:")};
  TunedSource user_{database_, "test database"};
  int64_t h100_ = 0;
};

TEST_F(RuntimeFallback, ExactMatchServesTheTunedConfigWithItsMeasurement) {
  const Selection s = select(h100_card_, problem(4096, 4096, 4096));
  EXPECT_EQ(s.level, PlanLevel::kExact);
  EXPECT_EQ(s.choice.config, big());
  ASSERT_TRUE(s.time_ms && s.ratio_vs_cublas && s.tuned_problem);
  EXPECT_DOUBLE_EQ(*s.time_ms, 2.0);
  EXPECT_DOUBLE_EQ(*s.ratio_vs_cublas, 2.1 / 2.0);
  EXPECT_EQ(*s.tuned_problem, problem(4096, 4096, 4096));
}

TEST_F(RuntimeFallback, AnotherCardOfTheSameModelCountsAsExact) {
  const DeviceInfo twin = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-22222222-bbbb");
  const Selection s = select(twin, problem(1024, 1024, 1024));
  EXPECT_EQ(s.level, PlanLevel::kExact);
  EXPECT_EQ(s.choice.config, mid());
  EXPECT_NE(s.basis.find("GPU-11111111-aaaa"), std::string::npos) << s.basis;
}

TEST_F(RuntimeFallback, NearestTunedProblemInLogSpace) {
  Selection s = select(h100_card_, problem(1000, 1000, 1000));
  EXPECT_EQ(s.level, PlanLevel::kNearest);
  EXPECT_EQ(s.choice.config, mid());
  EXPECT_EQ(*s.tuned_problem, problem(1024, 1024, 1024));
  // 3000 is 2.9x from 1024 but only 1.4x from 4096.
  s = select(h100_card_, problem(3000, 3000, 3000));
  EXPECT_EQ(s.level, PlanLevel::kNearest);
  EXPECT_EQ(s.choice.config, big());
  EXPECT_DOUBLE_EQ(*s.time_ms, 2.0);
}

TEST_F(RuntimeFallback, NearestPassesOverAConfigThatBreaksTheAskedShape) {
  // The nearest tuned problem (64x64x8192) splits K 16 ways; k = 256 holds only 8 stages of 32.
  const Selection s = select(h100_card_, problem(64, 64, 256));
  EXPECT_EQ(s.level, PlanLevel::kNearest);
  EXPECT_NE(s.choice.config, split());
}

TEST_F(RuntimeFallback, NearestRespectsTheAlignmentOfTheAskedProblem) {
  // A padded lda allows only scalar loads of A: every tuned config but the narrow one needs 4-wide ones.
  const Selection s = select(h100_card_, problem(1024, 1024, 1024, "nn", 1, 4, 4));
  EXPECT_EQ(s.level, PlanLevel::kNearest);
  EXPECT_EQ(s.choice.config, narrow());
  EXPECT_EQ(*s.tuned_problem, problem(2048, 2048, 2048, "nn", 1, 1, 1));
}

TEST_F(RuntimeFallback, DeviceDefaultServesALayoutNeverTuned) {
  // No "nt" problem is tuned. mid() is measured on 3 of the 5 tuned problems: best on average.
  const Selection s = select(h100_card_, problem(777, 333, 999, "nt"));
  EXPECT_EQ(s.level, PlanLevel::kDeviceDefault);
  EXPECT_EQ(s.choice.config, mid());
  EXPECT_FALSE(s.time_ms);
  EXPECT_FALSE(s.tuned_problem);
  EXPECT_NE(s.basis.find("5 tuned problems"), std::string::npos) << s.basis;
}

TEST_F(RuntimeFallback, ResultsOfAnUnknownTemplateArePassedOver) {
  database_.with([&](db::Database& d) {
    db::TrialRecord gone;
    gone.device_id = h100_;
    gone.problem = problem(8192, 8192, 8192);
    gone.template_name = "sgemm_retired";
    gone.template_hash = "0";
    gone.config_key = "BM=128";
    gone.time_median_ms = 1.0;
    d.record_trial(gone);
  });
  const Selection s = select(h100_card_, problem(8192, 8192, 8192));
  EXPECT_EQ(s.level, PlanLevel::kNearest);
  EXPECT_EQ(s.choice.config, big());
}

TEST_F(RuntimeFallback, ShippedResultsServeAModelTheUserDatabaseDoesNotKnow) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  SharedDatabase shipped_db(
      runtime::load_results(runtime::result_files_in(test_data("")), "tests/data", library));
  TunedSource shipped(shipped_db, "shipped results");
  const DeviceInfo h200 = model("NVIDIA H200", "sm_90", "GPU-33333333-cccc");

  Selection s = select(h200, problem(4096, 4096, 4096), &shipped);
  EXPECT_EQ(s.level, PlanLevel::kShipped);
  EXPECT_EQ(s.shipped_match, PlanLevel::kExact);
  EXPECT_EQ(s.choice.config, big());
  EXPECT_DOUBLE_EQ(*s.time_ms, 2.5);

  s = select(h200, problem(1500, 1500, 1500), &shipped);
  EXPECT_EQ(s.level, PlanLevel::kShipped);
  EXPECT_EQ(s.shipped_match, PlanLevel::kNearest);
  EXPECT_EQ(*s.tuned_problem, problem(1024, 1024, 1024));

  s = select(h200, problem(100, 200, 300, "tt"), &shipped);
  EXPECT_EQ(s.level, PlanLevel::kShipped);
  EXPECT_EQ(s.shipped_match, PlanLevel::kDeviceDefault);

  // The user's own results come first, and shipped ones never serve another model.
  s = select(h100_card_, problem(4096, 4096, 4096), &shipped);
  EXPECT_EQ(s.level, PlanLevel::kExact);
  const DeviceInfo a100 = model("NVIDIA A100-SXM4-80GB", "sm_80", "GPU-44444444-dddd");
  EXPECT_EQ(select(a100, problem(4096, 4096, 4096), &shipped).level, PlanLevel::kHeuristic);
}

TEST_F(RuntimeFallback, HeuristicWhenNothingIsKnownOfTheModel) {
  const DeviceInfo l4 = model("NVIDIA L4", "sm_89", "GPU-55555555-eeee");
  const Selection s = select(l4, problem(4096, 4096, 4096));
  EXPECT_EQ(s.level, PlanLevel::kHeuristic);
  EXPECT_FALSE(s.time_ms);
  const Selection without_sources = FallbackChain(TemplateLibrary::instance(), nullptr, nullptr)
                                        .select(h100_card_, problem(4096, 4096, 4096));
  EXPECT_EQ(without_sources.level, PlanLevel::kHeuristic);
}

TEST_F(RuntimeFallback, EveryAnswerIsValidForTheAskedShape) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  SharedDatabase shipped_db(
      runtime::load_results(runtime::result_files_in(test_data("")), "tests/data", library));
  TunedSource shipped(shipped_db, "shipped results");
  const std::vector<DeviceInfo> devices = {h100_card_, model("NVIDIA H200", "sm_90", "GPU-h200"),
                                           model("NVIDIA A100-SXM4-40GB", "sm_80", "GPU-a100"),
                                           model("NVIDIA GeForce RTX 3090", "sm_86", "GPU-3090")};
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},          {17, 33, 65},       {127, 129, 255},
                                                      {1, 4096, 4096},    {4096, 1, 4096},    {64, 64, 8},
                                                      {1000, 1000, 1000}, {4103, 4105, 4104}, {3, 5000, 7},
                                                      {1024, 1024, 1024}, {4096, 4096, 4096}};
  std::map<PlanLevel, int> levels;
  for (const DeviceInfo& device : devices) {
    for (const auto& [m, n, k] : shapes) {
      for (const char* layout : {"nn", "nt", "tn", "tt"}) {
        for (int align : {1, 2, 4}) {
          const KernelProblem p = problem(m, n, k, layout, align, align == 2 ? 4 : align, align);
          ++levels[select(device, p, &shipped).level];
        }
      }
    }
  }
  EXPECT_EQ(levels.size(), 5u) << "the sweep reaches every level of the chain";
}

TEST_F(RuntimeFallback, ADeviceNoTemplateRunsOnIsAnArchMismatch) {
  DeviceInfo turing = model("Tesla T4", "sm_80", "GPU-t4");
  turing.cc_major = 7, turing.cc_minor = 5;
  EXPECT_THROW(select(turing, problem(256, 256, 256)), ArchMismatchError);
  KernelProblem half = problem(256, 256, 256);
  half.dtype = Dtype::kF16;
  EXPECT_THROW(FallbackChain(TemplateLibrary::instance(), nullptr, nullptr).select(h100_card_, half),
               NotFoundError);
}

}  // namespace
}  // namespace gemmforge::testing
