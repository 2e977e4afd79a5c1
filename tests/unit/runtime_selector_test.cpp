// The selector on a small database and on test exports: exact results serve their problem, the model ranks
// proven configs for anything else, cuBLAS takes over where it is measured or predicted faster, and every
// answer is valid for the problem and device it is for.
#include "runtime/selector.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <map>

#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime/tuned_source.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

using runtime::ResultSource;
using runtime::Selection;
using runtime::Selector;
using runtime::SelectorOptions;
using runtime::SharedDatabase;
using runtime::TunedSource;

// Functions, not constants: the template library must not be read during static initialization.
Config big() {
  return seed(1, {{"RASTER", 16}});
}
Config mid() {
  return seed(2, {{"RASTER", 4}});
}
Config narrow() {
  return seed(4);
}  // vector widths 1: fits any alignment

void expect_valid(const Selection& s, const DeviceInfo& device, const KernelProblem& p) {
  if (!s.choice) return;
  EXPECT_NO_THROW(rtc::make_spec(*s.choice->kernel_template, s.choice->config, p, device.arch(), &device))
      << s.choice->config.key() << " for " << p.to_string() << " on " << device.name;
}

class RuntimeSelector : public ::testing::Test {
 protected:
  void SetUp() override {
    h100_ = database_.with([&](db::Database& d) { return d.upsert_device(h100_card_); });
    database_.with([&](db::Database& d) {
      record(d, h100_, problem(4096, 4096, 4096), big(), 2.0, 2.1);
      record(d, h100_, problem(4096, 4096, 4096), mid(), 2.2, 2.1);
      record(d, h100_, problem(1024, 1024, 1024), mid(), 0.10, 0.12);
      record(d, h100_, problem(2048, 2048, 2048, "nn", 1, 1, 1), narrow(), 1.0, 0.5);  // cuBLAS twice as fast
      record(d, h100_, problem(3072, 3072, 3072), big(), 1.0, 1.01);                   // a tie: 1% apart
    });
  }

  Selection select(const DeviceInfo& device, const KernelProblem& p, std::vector<ResultSource*> extra = {},
                   bool vendor = true) {
    std::vector<ResultSource*> sources{&user_};
    sources.insert(sources.end(), extra.begin(), extra.end());
    SelectorOptions options;
    options.vendor = vendor;
    const Selection s = Selector(TemplateLibrary::instance(), device, sources, options).select(p);
    expect_valid(s, device, p);
    return s;
  }

  const DeviceInfo h100_card_ = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
  SharedDatabase database_{db::Database::open(":memory:")};
  TunedSource user_{database_, "test database"};
  int64_t h100_ = 0;
};

TEST_F(RuntimeSelector, ExactMatchServesTheTunedConfigWithItsMeasurement) {
  const Selection s = select(h100_card_, problem(4096, 4096, 4096));
  EXPECT_EQ(s.level, PlanLevel::kExact);
  ASSERT_TRUE(s.choice);
  EXPECT_EQ(s.choice->config, big());
  ASSERT_TRUE(s.time_ms && s.vendor_ms && s.tuned_problem);
  EXPECT_DOUBLE_EQ(*s.time_ms, 2.0);
  EXPECT_DOUBLE_EQ(*s.vendor_ms, 2.1);
  EXPECT_FALSE(s.time_predicted);
  EXPECT_EQ(*s.tuned_problem, problem(4096, 4096, 4096));
  EXPECT_EQ(s.source, "test database");
}

TEST_F(RuntimeSelector, AnotherCardOfTheSameModelCountsAsExact) {
  const DeviceInfo twin = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-22222222-bbbb");
  const Selection s = select(twin, problem(1024, 1024, 1024));
  EXPECT_EQ(s.level, PlanLevel::kExact);
  EXPECT_EQ(s.choice->config, mid());
  EXPECT_NE(s.basis.find("GPU-11111111-aaaa"), std::string::npos) << s.basis;
}

TEST_F(RuntimeSelector, TheFastestResultOfTheModelServesAndACardsOwnWhenAsFast) {
  // A second card tuned 1024^3 faster than the first (0.08 ms against 0.10), with another config.
  const DeviceInfo second = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-22222222-bbbb");
  database_.with([&](db::Database& d) {
    record(d, d.upsert_device(second), problem(1024, 1024, 1024), big(), 0.08, 0.12);
  });
  const DeviceInfo third = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-33333333-cccc");
  const Selection s = select(third, problem(1024, 1024, 1024));
  EXPECT_EQ(s.level, PlanLevel::kExact);
  EXPECT_EQ(s.choice->config, big());
  EXPECT_NE(s.basis.find("GPU-22222222-bbbb"), std::string::npos) << s.basis;
  // The first card's own measurement is 25% slower, more than cards of a model differ: the faster serves.
  EXPECT_EQ(select(h100_card_, problem(1024, 1024, 1024)).choice->config, big());
  // A card whose own result is within 5% of the fastest keeps it.
  database_.with([&](db::Database& d) {
    record(d, d.upsert_device(third), problem(1024, 1024, 1024), mid(), 0.083, 0.12);
  });
  EXPECT_EQ(select(third, problem(1024, 1024, 1024)).choice->config, mid());
}

TEST_F(RuntimeSelector, ATieGoesToCuBlasAndAClearWinToTheGeneratedKernel) {
  const Selection tie = select(h100_card_, problem(3072, 3072, 3072));
  EXPECT_EQ(tie.level, PlanLevel::kVendor) << tie.basis;
  ASSERT_TRUE(tie.choice);
  EXPECT_EQ(tie.choice->config, big());
  // 4096^3: the generated kernel measured 5% faster than cuBLAS serves.
  EXPECT_EQ(select(h100_card_, problem(4096, 4096, 4096)).level, PlanLevel::kExact);
}

TEST_F(RuntimeSelector, CuBlasServesWhereItWasMeasuredFasterUnlessTurnedOff) {
  const KernelProblem p = problem(2048, 2048, 2048, "nn", 1, 1, 1);
  const Selection vendor = select(h100_card_, p);
  EXPECT_EQ(vendor.level, PlanLevel::kVendor);
  ASSERT_TRUE(vendor.choice) << "the generated kernel it beat is still reported";
  EXPECT_EQ(vendor.choice->config, narrow());
  EXPECT_NE(vendor.basis.find("cuBLAS measured"), std::string::npos) << vendor.basis;
  const Selection generated = select(h100_card_, p, {}, false);
  EXPECT_EQ(generated.level, PlanLevel::kExact);
  EXPECT_EQ(generated.choice->config, narrow());
}

// A tune's cuBLAS timing can come out slow (4x4096x4096 BF16 read 0.067 ms in one tune, 0.019 in others):
// a tuned result must beat the fastest cuBLAS time recorded for its problem on the GPU model, not only its
// own tune's.
TEST_F(RuntimeSelector, ATunedResultMustBeatTheFastestCuBlasTimeOfItsProblem) {
  const KernelProblem p = problem(512, 4096, 4096);
  database_.with([&](db::Database& d) {
    record(d, h100_, p, mid(), 0.030, 0.0191);   // an earlier tune: cuBLAS at its usual time
    record(d, h100_, p, big(), 0.0216, 0.0669);  // a later tune, whose cuBLAS timing came out slow
  });
  const Selection s = select(h100_card_, p);
  EXPECT_EQ(s.level, PlanLevel::kVendor) << s.basis;
  ASSERT_TRUE(s.choice && s.vendor_ms);
  EXPECT_EQ(s.choice->config, big());
  EXPECT_DOUBLE_EQ(*s.vendor_ms, 0.0191);
  // Where the generated kernel beats that time too, it serves.
  database_.with([&](db::Database& d) { record(d, h100_, p, narrow(), 0.015, 0.0669); });
  EXPECT_EQ(select(h100_card_, p).level, PlanLevel::kExact);
}

// A source whose measurements (what the model is fitted on) come only once the test opens its gate, and
// which may say it knows no cuBLAS times without them, as an export of format_version 1.
class GatedSource : public ResultSource {
 public:
  GatedSource(ResultSource& inner, std::shared_future<void> gate, bool knows_vendor_times)
      : inner_(inner), gate_(std::move(gate)), knows_(knows_vendor_times) {}
  const std::string& label() const override { return inner_.label(); }
  std::vector<db::TrialRecord> exact(const DeviceInfo& d, const KernelProblem& p) override {
    return inner_.exact(d, p);
  }
  void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override {
    gate_.wait();
    inner_.add_measurements(cc, library, data);
  }
  bool knows_vendor_times() override { return knows_; }
  std::optional<double> vendor_ms(const DeviceInfo& d, const KernelProblem& p) override {
    return knows_ ? inner_.vendor_ms(d, p) : std::nullopt;
  }
  std::vector<DeviceInfo> devices() override { return inner_.devices(); }
  std::vector<KernelProblem> problems_of(const DeviceInfo& d, const std::string& t) override {
    return inner_.problems_of(d, t);
  }

 private:
  ResultSource& inner_;
  std::shared_future<void> gate_;
  bool knows_;
};

// A tuned problem's check against cuBLAS reads cuBLAS's fastest time from the sources, so its first call
// waits for no model and decides as the model would (the fastest time of every tune, not its own tune's).
TEST_F(RuntimeSelector, ATunedProblemIsDecidedWithoutWaitingForTheModel) {
  const KernelProblem p = problem(512, 4096, 4096);
  database_.with([&](db::Database& d) {
    record(d, h100_, p, mid(), 0.030, 0.0191);
    record(d, h100_, p, big(), 0.0216, 0.0669);
  });
  for (const bool knows : {true, false}) {
    std::promise<void> open;
    GatedSource gated(user_, open.get_future().share(), knows);
    SelectorOptions options;
    Selector selector(TemplateLibrary::instance(), h100_card_, {&gated}, options);
    std::future<Selection> answer = std::async(std::launch::async, [&] { return selector.select(p); });
    // Knowing the times, the answer comes with the gate shut (a generous bound); else not while it is.
    const auto wait = knows ? std::chrono::milliseconds(20000) : std::chrono::milliseconds(300);
    const bool ready = answer.wait_for(wait) == std::future_status::ready;
    EXPECT_EQ(ready, knows) << (knows ? "the sources know cuBLAS's times: no wait for the model"
                                      : "without the times the check waits for the model");
    open.set_value();
    const Selection s = answer.get();
    EXPECT_EQ(s.level, PlanLevel::kVendor) << s.basis;
    ASSERT_TRUE(s.vendor_ms);
    EXPECT_DOUBLE_EQ(*s.vendor_ms, 0.0191);
  }
}

// Without the model ahead (`gemmforge query`), a tuned problem is answered and the selector gone without the
// model ever being fitted (its measurements are never read: here they never come); an untuned problem fits
// it when asked, and gets the model's answer.
TEST_F(RuntimeSelector, WithoutTheModelAheadATunedAnswerNeverFitsIt) {
  const KernelProblem p = problem(1024, 1024, 1024);
  std::promise<void> open;
  GatedSource gated(user_, open.get_future().share(), true);
  SelectorOptions options;
  options.model_ahead = false;
  std::future<Selection> answer = std::async(std::launch::async, [&] {
    const Selector selector(TemplateLibrary::instance(), h100_card_, {&gated}, options);
    return selector.select(p);  // and the selector goes, which would wait for a fit under way
  });
  const bool ready = answer.wait_for(std::chrono::milliseconds(20000)) == std::future_status::ready;
  EXPECT_TRUE(ready) << "the tuned answer waited for the model's measurements";
  open.set_value();
  const Selection s = answer.get();
  EXPECT_EQ(s.level, PlanLevel::kExact) << s.basis;
  ASSERT_TRUE(s.choice);
  EXPECT_EQ(s.choice->config, mid());

  const Selector lazy(TemplateLibrary::instance(), h100_card_, {&gated},
                      SelectorOptions{.vendor = false, .model_ahead = false});
  const Selection untuned = lazy.select(problem(1000, 1000, 1000));
  EXPECT_EQ(untuned.level, PlanLevel::kModel);
  EXPECT_TRUE(untuned.time_predicted);
}

TEST_F(RuntimeSelector, TheModelServesUntunedProblemsWithPredictions) {
  const Selection s = select(h100_card_, problem(1000, 1000, 1000), {}, false);
  EXPECT_EQ(s.level, PlanLevel::kModel);
  ASSERT_TRUE(s.choice && s.time_ms && s.vendor_ms == std::nullopt);
  EXPECT_TRUE(s.time_predicted);
  EXPECT_GT(*s.time_ms, 0);
  EXPECT_NE(s.source.find("test database"), std::string::npos) << s.source;
  const Selection with_vendor = select(h100_card_, problem(1000, 1000, 1000));
  ASSERT_TRUE(with_vendor.vendor_ms);
  EXPECT_TRUE(with_vendor.level == PlanLevel::kModel || with_vendor.level == PlanLevel::kVendor);
}

TEST_F(RuntimeSelector, TheModelFitsTheAlignmentOfTheAskedProblem) {
  // A padded lda allows only scalar loads of A: configs tuned with 4-wide ones are repaired or passed over.
  const KernelProblem p = problem(1024, 1024, 1024, "nn", 1, 4, 4);
  const Selection s = select(h100_card_, p, {}, false);
  EXPECT_EQ(s.level, PlanLevel::kModel);
  ASSERT_TRUE(s.choice);
  EXPECT_TRUE(s.choice->kernel_template->manifest.violations(s.choice->config, &h100_card_, &p).empty());
}

TEST_F(RuntimeSelector, AnotherGpuModelsMeasurementOfTheProblemIsScaledNotServedAsExact) {
  runtime::ShippedResults shipped(runtime::result_files_in(current_results()), "tests/data",
                                  TemplateLibrary::instance());
  model::TrainingData data;
  shipped.add_measurements(90, TemplateLibrary::instance(), data);
  const auto tt = std::find_if(data.kernels.begin(), data.kernels.end(),
                               [](const model::KernelMeasurement& m) { return m.problem.a_trans; });
  ASSERT_NE(tt, data.kernels.end()) << "the test export tunes a tt problem the user database lacks";
  const KernelProblem tuned_on_h200 = tt->problem;
  const DeviceInfo h200 = model("NVIDIA H200", "sm_90", "GPU-33333333-cccc");
  EXPECT_EQ(select(h200, tuned_on_h200, {&shipped}).level == PlanLevel::kExact ||
                select(h200, tuned_on_h200, {&shipped}).level == PlanLevel::kVendor,
            true);
  const Selector selector(TemplateLibrary::instance(), h100_card_, {&user_, &shipped},
                          SelectorOptions{.vendor = false});
  EXPECT_EQ(selector.select(tuned_on_h200).level, PlanLevel::kModel);
  const model::Prediction p =
      selector.model()->kernels.predict(*tt->kernel_template, tt->config, tuned_on_h200);
  EXPECT_EQ(p.basis, model::Basis::kMeasuredElsewhere);
  EXPECT_EQ(p.measured_on, "NVIDIA H200");
  EXPECT_GT(p.time_ms, 0);
}

// A GPU model's own result of a problem against another model's of the architecture: where the other's,
// scaled to this device, is far faster (its tune found what this model's missed, such as a template tuned
// since or one whose results here a new source retired), the other's config serves, as the model's choice
// with its scaled time; a little faster is within what cards and the scaling differ by, and the own result
// serves.
TEST_F(RuntimeSelector, AnotherGpuModelsFarFasterResultOfTheProblemServesOverTheOwn) {
  const DeviceInfo h200 = model("NVIDIA H200", "sm_90", "GPU-44444444-dddd");
  database_.with([&](db::Database& d) {
    const int64_t id = d.upsert_device(h200);
    record(d, id, problem(1024, 1024, 1024), big(), 0.03, 0.12);  // the H100 measured mid() at 0.10 ms
    record(d, id, problem(4096, 4096, 4096), mid(), 1.8, 2.1);    // ... and big() at 2.0 ms
  });
  const Selection far = select(h100_card_, problem(1024, 1024, 1024), {}, false);
  EXPECT_EQ(far.level, PlanLevel::kModel) << far.basis;
  ASSERT_TRUE(far.choice && far.time_ms);
  EXPECT_EQ(far.choice->config, big());
  EXPECT_TRUE(far.time_predicted);
  EXPECT_LT(*far.time_ms * runtime::kElsewhereFactor, 0.10);
  EXPECT_NE(far.basis.find("NVIDIA H200"), std::string::npos) << far.basis;
  EXPECT_NE(far.basis.find("own result"), std::string::npos) << far.basis;
  EXPECT_EQ(far.source, "test database");

  // The other model's result held by a second source: the source line names both.
  SharedDatabase second{db::Database::open(":memory:")};
  TunedSource elsewhere{second, "second database"};
  second.with([&](db::Database& d) {
    record(d, d.upsert_device(h200), problem(2048, 1024, 1024), big(), 0.05, 0.2);
  });
  database_.with([&](db::Database& d) { record(d, h100_, problem(2048, 1024, 1024), mid(), 0.2, 0.2); });
  const Selection across = select(h100_card_, problem(2048, 1024, 1024), {&elsewhere}, false);
  EXPECT_EQ(across.level, PlanLevel::kModel) << across.basis;
  EXPECT_EQ(across.choice->config, big());
  EXPECT_EQ(across.source, "second database (this GPU model's own result: test database)");

  const Selection near = select(h100_card_, problem(4096, 4096, 4096), {}, false);
  EXPECT_EQ(near.level, PlanLevel::kExact) << near.basis;
  EXPECT_EQ(near.choice->config, big());
  // The H200 keeps its own result of 1024^3: the H100's is slower.
  const Selection own = select(h200, problem(1024, 1024, 1024), {}, false);
  EXPECT_EQ(own.level, PlanLevel::kExact) << own.basis;
  EXPECT_EQ(own.choice->config, big());
  // Where the H100 measured the H200's config on the problem itself, slower than its own, its own serves.
  database_.with([&](db::Database& d) { record(d, h100_, problem(1024, 1024, 1024), big(), 0.25, 0.12); });
  const Selection measured = select(h100_card_, problem(1024, 1024, 1024), {}, false);
  EXPECT_EQ(measured.level, PlanLevel::kExact) << measured.basis;
  EXPECT_EQ(measured.choice->config, mid());
}

TEST_F(RuntimeSelector, ResultsOfAnUnknownTemplateArePassedOver) {
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
  const Selection s = select(h100_card_, problem(8192, 8192, 8192), {}, false);
  EXPECT_EQ(s.level, PlanLevel::kModel);
  ASSERT_TRUE(s.choice);
}

TEST_F(RuntimeSelector, WithoutMeasurementsTheAnalyticModelRanksTheSeeds) {
  const DeviceInfo l4 = model("NVIDIA L4", "sm_89", "GPU-55555555-eeee");
  const Selection s = select(l4, problem(4096, 4096, 4096), {}, false);
  EXPECT_EQ(s.level, PlanLevel::kModel);
  EXPECT_NE(s.source.find("no measurements of sm_89 GPUs"), std::string::npos) << s.source;
  EXPECT_NE(s.basis.find("seed"), std::string::npos) << s.basis;
}

TEST_F(RuntimeSelector, EveryAnswerIsValidForTheAskedShape) {
  runtime::ShippedResults shipped(runtime::result_files_in(current_results()), "tests/data",
                                  TemplateLibrary::instance());
  const std::vector<DeviceInfo> devices = {h100_card_, model("NVIDIA H200", "sm_90", "GPU-h200"),
                                           model("NVIDIA A100-SXM4-40GB", "sm_80", "GPU-a100"),
                                           model("NVIDIA GeForce RTX 3090", "sm_86", "GPU-3090")};
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1},          {17, 33, 65},       {127, 129, 255},
                                                      {1, 4096, 4096},    {4096, 1, 4096},    {64, 64, 8},
                                                      {1000, 1000, 1000}, {4103, 4105, 4104}, {3, 5000, 7},
                                                      {1024, 1024, 1024}, {4096, 4096, 4096}};
  std::map<PlanLevel, int> levels;
  for (const DeviceInfo& device : devices) {
    std::vector<ResultSource*> sources{&user_, &shipped};
    const Selector selector(TemplateLibrary::instance(), device, sources, SelectorOptions{.vendor = false});
    for (const auto& [m, n, k] : shapes) {
      for (const char* layout : {"nn", "nt", "tn", "tt"}) {
        for (int align : {1, 2, 4}) {
          const KernelProblem p = problem(m, n, k, layout, align, align == 2 ? 4 : align, align);
          const Selection s = selector.select(p);
          ASSERT_TRUE(s.choice) << p.to_string() << " on " << device.name;
          expect_valid(s, device, p);
          ++levels[s.level];
        }
      }
    }
  }
  EXPECT_EQ(levels.size(), 2u) << "the sweep meets exact results and the model";
}

TEST_F(RuntimeSelector, ADeviceNoTemplateRunsOnIsAnArchMismatchUnlessCuBlasServes) {
  DeviceInfo turing = model("Tesla T4", "sm_80", "GPU-t4");
  turing.cc_major = 7, turing.cc_minor = 5;
  EXPECT_THROW(select(turing, problem(256, 256, 256), {}, false), ArchMismatchError);
  EXPECT_EQ(select(turing, problem(256, 256, 256)).level, PlanLevel::kVendor);
  // TF32 products run on mma.sync from sm_80 on, and on Hopper also on the wgmma templates (which of them
  // serves is the model's choice, here without results to fit).
  KernelProblem tf32 = problem(256, 256, 256);
  tf32.dtype = Dtype::kTf32;
  EXPECT_THROW(select(turing, tf32, {}, false), ArchMismatchError);
  const DeviceInfo a100 = model("NVIDIA A100-SXM4-80GB", "sm_80", "GPU-a100");
  const Selection on_ampere = select(a100, tf32, {}, false);
  ASSERT_TRUE(on_ampere.choice);
  EXPECT_EQ(on_ampere.choice->kernel_template->manifest.name(), "tf32gemm_mma");
  EXPECT_TRUE(select(h100_card_, tf32, {}, false).choice);
}

// The 16-bit templates: mma.sync (sm_80 and newer) and wgmma (sm_90a).
bool tensor_core_template(const KernelTemplate& t) {
  return t.manifest.name() == "hgemm_mma" || t.manifest.name() == "gemm_wgmma" ||
         t.manifest.name() == "gemm_tma";
}

// `p` in the types `type` names ("bf16", "f16>f32"); an FP32 C aligned to 4 floats at most.
KernelProblem typed(const char* type, KernelProblem p) {
  parse_type_name(type, p.dtype, p.c_dtype);
  if (p.c_dtype == Dtype::kF32) p.align_c = std::min(p.align_c, 4);
  return p;
}

// A 16-bit problem nobody tuned whose twin in the other 16-bit type is tuned serves the twin's config, with
// both of the twin's measured times (cuBLAS's included), not the model's predictions; C's type must match.
TEST_F(RuntimeSelector, AnUntunedSixteenBitProblemServesItsTwinsTunedResult) {
  const Config tuned = seed(0, {}, "hgemm_mma");
  const KernelProblem shape = problem(2048, 2048, 2048, "nt", 8, 8, 8);
  database_.with([&](db::Database& d) {
    record(d, h100_, typed("bf16", shape), tuned, 0.050, 0.060);
    record(d, h100_, typed("f16>f32", shape), tuned, 0.070, 0.060);  // cuBLAS faster by 14%
  });
  const Selection s = select(h100_card_, typed("f16", shape));
  EXPECT_EQ(s.level, PlanLevel::kModel) << s.basis;
  ASSERT_TRUE(s.choice && s.time_ms && s.vendor_ms && s.tuned_problem);
  EXPECT_EQ(s.choice->config, tuned);
  EXPECT_EQ(*s.tuned_problem, typed("bf16", shape));
  EXPECT_FALSE(s.time_predicted);
  EXPECT_DOUBLE_EQ(*s.time_ms, 0.050);
  EXPECT_DOUBLE_EQ(*s.vendor_ms, 0.060);
  EXPECT_NE(s.basis.find("bf16 twin"), std::string::npos) << s.basis;

  // An FP32 C: the twin of bf16>f32 is f16>f32, whose cuBLAS measured faster serves.
  const Selection wide = select(h100_card_, typed("bf16>f32", shape));
  EXPECT_EQ(wide.level, PlanLevel::kVendor) << wide.basis;
  EXPECT_NE(wide.basis.find("cuBLAS measured"), std::string::npos) << wide.basis;
  ASSERT_TRUE(wide.tuned_problem);
  EXPECT_EQ(*wide.tuned_problem, typed("f16>f32", shape));

  // The problem's own result comes first, and a twin of another C type or layout is no twin.
  database_.with(
      [&](db::Database& d) { record(d, h100_, typed("f16", shape), seed(1, {}, "hgemm_mma"), 0.045, 0.06); });
  EXPECT_EQ(select(h100_card_, typed("f16", shape)).level, PlanLevel::kExact);
  const Selection other_c = select(h100_card_, typed("f16>f32", problem(2048, 2048, 2048, "nn", 8, 8, 4)));
  EXPECT_TRUE(other_c.time_predicted) << other_c.basis;
  EXPECT_FALSE(sixteen_bit_twin(problem(2048, 2048, 2048)).has_value()) << "FP32 has no twin";
}

TEST_F(RuntimeSelector, SixteenBitProblemsOfEveryAlignmentAndShapeGetAValidTensorCoreConfig) {
  for (const char* type : {"bf16", "f16>f32"}) {
    for (int align : {1, 2, 4, 8}) {
      for (const auto& [m, n, k] : {std::tuple{1, 4096, 4096}, std::tuple{16, 4096, 14336},
                                    std::tuple{4103, 4105, 4104}, std::tuple{1024, 50257, 768}}) {
        for (const char* layout : {"nn", "nt", "tn", "tt"}) {
          KernelProblem p = problem(m, n, k, layout, align, align, align);
          parse_type_name(type, p.dtype, p.c_dtype);
          if (p.c_dtype == Dtype::kF32) p.align_c = std::min(align, 4);
          const Selection s = select(h100_card_, p, {}, false);
          ASSERT_TRUE(s.choice) << p.to_string();
          EXPECT_TRUE(tensor_core_template(*s.choice->kernel_template)) << p.to_string();
          expect_valid(s, h100_card_, p);
        }
      }
    }
  }
}

TEST_F(RuntimeSelector, SixteenBitProblemsGetTheTensorCoreTemplate) {
  for (const char* type : {"bf16", "f16", "bf16>f32", "f16>f32"}) {
    KernelProblem half = problem(1000, 1000, 1000, "nt", 8, 8, 8);
    parse_type_name(type, half.dtype, half.c_dtype);
    if (half.c_dtype == Dtype::kF32) half.align_c = 4;
    const Selection s = select(h100_card_, half, {}, false);
    ASSERT_TRUE(s.choice) << type;
    EXPECT_TRUE(tensor_core_template(*s.choice->kernel_template)) << type;
    expect_valid(s, h100_card_, half);
  }
}

}  // namespace
}  // namespace gemmforge::testing
