// tune() end to end without a GPU (the worker simulates the measurements, NVRTC compiles for real), and
// the pieces it is built from: the search space over templates and pins, and the progress line.
#include "tuner/tuner.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

#include <chrono>
#include <thread>

#include "gemmforge/error.hpp"
#include "support/tuner_fixtures.hpp"
#include "tuner/progress_line.hpp"

namespace gemmforge::tuner {
namespace {

class TunerTest : public ::testing::Test {
 protected:
  TunerTest()
      : library_(TemplateLibrary::from_directory(fixtures::write_faulty_templates(folder_))),
        database_(db::Database::open(folder_.file("tune.db"))) {}

  TuneOptions options() const {
    TuneOptions o;
    KernelProblem p;
    p.m = 48;
    p.n = 40;
    p.k = 24;
    p.align_c = 2;
    o.problems = {p};
    o.strategy = "exhaustive";
    o.max_evals = 0;
    o.quiet = true;
    o.compile_threads = 2;
    o.command = "tuner_test";
    o.library = &library_;
    o.worker.simulate = true;
    o.worker.template_dir = folder_.file("faulty_templates");
    return o;
  }

  fixtures::TempFolder folder_;
  TemplateLibrary library_;
  db::Database database_;
};

TEST_F(TunerTest, TunesEveryCandidateRecordsTheRunAndResumesOnASecondRun) {
  const TuneReport first = tune(database_, options());
  ASSERT_EQ(first.problems.size(), 1u);
  const ProblemSummary& p = first.problems[0];
  EXPECT_EQ(p.candidates, 8u);
  EXPECT_EQ(p.evaluations, 8u);
  EXPECT_EQ(p.compiled, 8u);  // MODE and BM are compile-time: eight cubins
  EXPECT_EQ(p.measured, 6u);  // the two MODE 3 configs do not compile
  EXPECT_EQ(p.failed, 2u);
  EXPECT_EQ(p.resumed, 0u);
  EXPECT_GT(p.cublas_ms, 0);
  ASSERT_TRUE(p.best);
  EXPECT_EQ(p.best->template_name, "faulty");
  EXPECT_EQ(p.best->status, db::TrialStatus::kOk);
  EXPECT_EQ(p.best->run_id, first.run_id);
  EXPECT_EQ(first.device.name, "simulated sm_90");

  const std::optional<db::DeviceRecord> device = database_.device_by_uuid(first.device.uuid);
  ASSERT_TRUE(device);
  const std::vector<db::RunRecord> runs = database_.runs(device->id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].finished_at);
  EXPECT_EQ(runs[0].strategy, "exhaustive");
  EXPECT_EQ(runs[0].command, "tuner_test");
  const int64_t problem_id = *database_.find_problem(p.problem);
  const std::vector<db::TrialRecord> trials = database_.trials(device->id, problem_id);
  EXPECT_EQ(trials.size(), 9u) << "eight candidates and cuBLAS";
  const auto vendor = std::find_if(trials.begin(), trials.end(), [](const db::TrialRecord& t) {
    return t.template_name == db::kVendorTemplate;
  });
  ASSERT_NE(vendor, trials.end());
  EXPECT_EQ(vendor->config_key, db::kVendorConfig);
  EXPECT_DOUBLE_EQ(*vendor->time_median_ms, p.cublas_ms);
  EXPECT_FALSE(vendor->is_best) << "cuBLAS's trial is a yardstick, never the best";
  const std::optional<db::TrialRecord> best = database_.best(device->id, problem_id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->config_key, p.best->config_key);

  // The same command again: everything is stored, so nothing is compiled or measured.
  const TuneReport second = tune(database_, options());
  const ProblemSummary& again = second.problems[0];
  EXPECT_EQ(again.evaluations, 8u);
  EXPECT_EQ(again.resumed, 8u);
  EXPECT_EQ(again.measured, 0u);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_DOUBLE_EQ(again.cublas_ms, p.cublas_ms);  // from the stored trials: the problem was never set up
  ASSERT_TRUE(again.best);
  EXPECT_EQ(again.best->config_key, p.best->config_key);
  EXPECT_EQ(database_.trials(device->id, problem_id).size(), 9u);
  EXPECT_EQ(database_.runs(device->id).size(), 2u);
}

TEST_F(TunerTest, WithoutTheVendorCandidateOnlyGeneratedKernelsAreRecorded) {
  TuneOptions o = options();
  o.vendor_candidate = false;
  const TuneReport report = tune(database_, o);
  const int64_t problem_id = *database_.find_problem(report.problems[0].problem);
  const int64_t device_id = database_.device_by_uuid(report.device.uuid)->id;
  for (const db::TrialRecord& t : database_.trials(device_id, problem_id))
    EXPECT_NE(t.template_name, "cublas");
}

TEST_F(TunerTest, EvaluationBudgetCountsStoredTrials) {
  TuneOptions o = options();
  o.max_evals = 3;
  const TuneReport first = tune(database_, o);
  EXPECT_EQ(first.problems[0].evaluations, 3u);
  EXPECT_EQ(first.problems[0].resumed, 0u);

  o.max_evals = 5;
  const TuneReport second = tune(database_, o);
  EXPECT_EQ(second.problems[0].evaluations, 5u);
  EXPECT_EQ(second.problems[0].resumed, 3u);
  // Two new evaluations: measured, or recorded as compile errors (the simulation measures every cubin ok).
  EXPECT_EQ(second.problems[0].measured + second.problems[0].failed, 2u);
}

// A tuner killed with SIGKILL (here a forked child running tune()) keeps every trial it committed, and
// the next run resumes them instead of measuring them again.
TEST_F(TunerTest, KilledRunKeepsItsTrialsAndTheNextRunResumesThem) {
  TuneOptions o = options();
  o.compile_threads = 1;  // slow enough to be killed half-way
  o.batch = 2;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 0;
    try {
      db::Database own = db::Database::open(folder_.file("tune.db"));
      tune(own, o);
    } catch (...) {
      code = 1;
    }
    std::_Exit(code);
  }
  auto stored = [&] {
    size_t count = 0;
    for (const db::DeviceRecord& d : database_.devices()) count += database_.trials(d.id).size();
    return count;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (stored() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  const size_t kept = stored();
  if (kept >= 8) GTEST_SKIP() << "the run finished before it could be killed";
  ASSERT_GE(kept, 2u) << "the child recorded no trials within a minute";

  const TuneReport resumed = tune(database_, options());
  EXPECT_EQ(resumed.problems[0].resumed, kept);
  EXPECT_EQ(resumed.problems[0].measured + resumed.problems[0].failed, 8u - kept);
  EXPECT_EQ(stored(), 9u) << "eight candidates and cuBLAS, recorded once the search is done";
  const std::vector<db::RunRecord> runs = database_.runs(database_.devices().at(0).id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].finished_at);  // the killed run never finished
}

TEST_F(TunerTest, UnknownStrategyFailsBeforeAnythingIsWritten) {
  TuneOptions o = options();
  o.strategy = "annealing";
  EXPECT_THROW(tune(database_, o), InvalidArgumentError);
  EXPECT_TRUE(database_.devices().empty());
}

TEST(SearchSpaceOfTemplates, PinsApplyWhereTheParameterExistsAndMustExistSomewhere) {
  fixtures::TempFolder folder;
  const TemplateLibrary library = TemplateLibrary::from_directory(fixtures::write_faulty_templates(folder));
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  KernelProblem problem;
  problem.m = problem.n = problem.k = 64;

  EXPECT_EQ(build_search_space(library, device, problem, {}, {}).size(), 8u);
  EXPECT_EQ(build_search_space(library, device, problem, {"faulty"}, {{"BM", 16}}).size(), 4u);
  try {
    build_search_space(library, device, problem, {}, {{"WARPS", 2}});
    FAIL() << "a pin no template has was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("WARPS"), std::string::npos) << e.what();
  }
  EXPECT_THROW(build_search_space(library, device, problem, {"sgemm_nonexistent"}, {}), NotFoundError);

  DeviceInfo old = device;
  old.cc_major = 7;
  old.cc_minor = 5;
  EXPECT_TRUE(build_search_space(library, old, problem, {}, {}).empty());  // faulty needs sm_80
}

TEST(SearchSpaceOfTemplates, BuiltInTemplatesJoinInOneSpace) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  KernelProblem problem;
  problem.m = problem.n = problem.k = 1024;
  const SearchSpace all = build_search_space(library, device, problem, {}, {});
  size_t sum = 0;
  for (const KernelTemplate* t : library.all()) {
    if (t->manifest.serves(problem.dtype, problem.c_dtype)) sum += Space::build(*t, device, problem).size();
  }
  EXPECT_EQ(all.size(), sum);
  EXPECT_GT(all.spaces().size(), 1u);
  const SearchSpace simt = build_search_space(library, device, problem, {"sgemm_simt"}, {{"BK", 8}});
  ASSERT_EQ(simt.spaces().size(), 1u);
  for (size_t i = 0; i < simt.size(); i += std::max<size_t>(1, simt.size() / 50)) {
    EXPECT_EQ(simt.config(i).at("BK"), 8);
  }
}

TEST(ProgressLineText, ShowsCountsBestAndTimes) {
  ProgressState s;
  s.title = "[1/2] f32 nn 64x64x64 align 4/4/4";
  s.done = 37;
  s.total = 128;
  s.elapsed_s = 21.4;
  EXPECT_EQ(format_progress(s),
            "[1/2] f32 nn 64x64x64 align 4/4/4  37/128  no correct kernel yet  0:21 elapsed");
  s.best_tflops = 24.314;
  s.best_ratio = 1.0249;
  s.eta_s = 3725;
  EXPECT_EQ(format_progress(s),
            "[1/2] f32 nn 64x64x64 align 4/4/4  37/128  best 24.31 TFLOP/s (1.02x cuBLAS)  0:21 elapsed, ETA "
            "1:02:05");
}

TEST(ProgressLineText, EtaFromMeasuredRateCappedByTheBudget) {
  EXPECT_FALSE(estimate_eta(0, 10, 5.0, 0));
  EXPECT_DOUBLE_EQ(*estimate_eta(4, 10, 8.0, 0), 20.0);
  EXPECT_DOUBLE_EQ(*estimate_eta(4, 10, 8.0, 12.0), 4.0);
  EXPECT_DOUBLE_EQ(*estimate_eta(0, 10, 8.0, 12.0), 4.0);
  EXPECT_DOUBLE_EQ(*estimate_eta(4, 0, 8.0, 0), 0.0);
}

}  // namespace
}  // namespace gemmforge::tuner
