// tune() on two GPUs of one model without a GPU: two simulated workers, one compile pool, one database.
// Each problem is tuned once between the GPUs, each kernel compiled once for all problems, every GPU has
// its run, and a second run on either GPU resumes what both measured.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "db/database.hpp"
#include "support/tuner_fixtures.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::tuner {
namespace {

class TuneDevicesTest : public ::testing::Test {
 protected:
  TuneDevicesTest()
      : library_(TemplateLibrary::from_directory(fixtures::write_faulty_templates(folder_))),
        database_(db::Database::open(folder_.file("tune.db"))) {}

  TuneOptions options(std::vector<int> devices) const {
    TuneOptions o;
    for (int64_t m : {48, 64, 80, 96}) {  // the size is not compiled in: every problem shares the kernels
      KernelProblem p;
      p.m = m;
      p.n = 40;
      p.k = 24;
      p.align_c = 2;
      o.problems.push_back(p);
    }
    o.strategy = "exhaustive";
    o.max_evals = 0;
    o.quiet = true;
    o.compile_threads = 2;
    o.command = "tune_devices_test";
    o.library = &library_;
    o.worker.simulate = true;
    o.worker.template_dir = folder_.file("faulty_templates");
    o.devices = std::move(devices);
    return o;
  }

  fixtures::TempFolder folder_;
  TemplateLibrary library_;
  db::Database database_;
};

TEST_F(TuneDevicesTest, TwoGpusOfOneModelTuneEachProblemOnceAndCompileEachKernelOnce) {
  const TuneReport report = tune(database_, options({0, 1}));
  ASSERT_EQ(report.gpus.size(), 2u);
  EXPECT_NE(report.gpus[0].device.uuid, report.gpus[1].device.uuid);
  EXPECT_EQ(report.gpus[0].device.name, report.gpus[1].device.name);
  ASSERT_EQ(report.problems.size(), 4u);
  EXPECT_EQ(report.kernels_compiled, 8u) << "eight kernels serve all four problems";
  std::set<int> gpus_used;
  for (const ProblemSummary& p : report.problems) {
    EXPECT_EQ(p.evaluations, 8u);
    EXPECT_EQ(p.measured, 6u) << "each candidate measured once, on one GPU";
    ASSERT_TRUE(p.best);
    gpus_used.insert(p.gpus.begin(), p.gpus.end());
  }
  EXPECT_EQ(gpus_used, (std::set<int>{0, 1})) << "both GPUs measured";
  // What the summary reports about where the time went.
  double measured_s = 0;
  for (const ProblemSummary& p : report.problems) measured_s += p.measure_s;
  EXPECT_GT(report.measure_s, 0);
  EXPECT_DOUBLE_EQ(report.measure_s, measured_s) << "the GPUs' measuring time, every problem added up";
  EXPECT_GT(report.compile_cpu_s, 0) << "NVRTC's CPU time";
  EXPECT_LE(report.compile_cpu_s, report.compile_sum_s * 1.05) << "a thread's CPU time within its wall time";
  EXPECT_GE(report.process.user_s, report.compile_cpu_s * 0.5);

  // Every candidate of every problem was recorded once, on one GPU or the other.
  std::map<std::string, int> recorded;
  for (const db::DeviceRecord& device : database_.devices()) {
    EXPECT_EQ(database_.runs(device.id).size(), 1u) << device.info.uuid;
    for (const ProblemSummary& p : report.problems) {
      for (const db::TrialRecord& t : database_.trials(device.id, *database_.find_problem(p.problem))) {
        if (t.template_name == db::kVendorTemplate) continue;
        ++recorded[p.problem.to_string() + " " + t.config_key];
      }
    }
  }
  EXPECT_EQ(recorded.size(), 4u * 8u);
  for (const auto& [trial, count] : recorded) EXPECT_EQ(count, 1) << trial;

  // One GPU alone resumes what both measured: nothing is compiled or measured again.
  const TuneReport again = tune(database_, options({1}));
  for (const ProblemSummary& p : again.problems) {
    EXPECT_EQ(p.measured, 0u) << p.problem.to_string();
    EXPECT_EQ(p.resumed, 8u) << p.problem.to_string();
  }
  EXPECT_EQ(again.kernels_compiled, 0u);
}

TEST_F(TuneDevicesTest, SearchesSharingOneGpuTuneEachProblemOnceAsOneSearchWould) {
  TuneOptions shared = options({0});
  shared.searches_per_gpu = 2;
  const TuneReport report = tune(database_, shared);
  EXPECT_EQ(report.searches_per_gpu, 2u);
  ASSERT_EQ(report.gpus.size(), 1u) << "two searches, one GPU";
  EXPECT_EQ(report.kernels_compiled, 8u);
  const std::vector<db::DeviceRecord> devices = database_.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(database_.runs(devices.front().id).size(), 1u) << "the searches share the GPU's run";

  // One search at a time finds the same best configs after measuring the same candidates.
  db::Database alone_database = db::Database::open(folder_.file("alone.db"));
  TuneOptions alone = options({0});
  alone.searches_per_gpu = 1;
  const TuneReport one = tune(alone_database, alone);
  EXPECT_EQ(one.searches_per_gpu, 1u);
  ASSERT_EQ(report.problems.size(), one.problems.size());
  for (size_t i = 0; i < report.problems.size(); ++i) {
    const ProblemSummary& p = report.problems[i];
    EXPECT_EQ(p.problem, one.problems[i].problem);
    EXPECT_EQ(p.measured, 6u) << p.problem.to_string();
    EXPECT_EQ(p.gpus, std::vector<int>{0}) << "a search never helps another on its own GPU";
    ASSERT_TRUE(p.best && one.problems[i].best);
    EXPECT_EQ(p.best->config_key, one.problems[i].best->config_key) << p.problem.to_string();
  }
}

TEST(AutoSearchesPerGpu, OnePerFourCoresOfEachGpuFromTwoToSix) {
  EXPECT_EQ(auto_searches_per_gpu(2, 1), 2u);  // a small machine still overlaps compiling and measuring
  EXPECT_EQ(auto_searches_per_gpu(16, 1), 5u);
  EXPECT_EQ(auto_searches_per_gpu(32, 2), 5u);  // the cores are shared by the GPUs
  EXPECT_EQ(auto_searches_per_gpu(32, 1), 6u);  // more searches would wait for the one GPU
  EXPECT_EQ(auto_searches_per_gpu(128, 8), 5u);
  EXPECT_EQ(auto_searches_per_gpu(8, 0), 2u);  // no GPU counted: as one
}

TEST_F(TuneDevicesTest, ASingleProblemGetsOneSearchPerGpu) {
  TuneOptions o = options({0});
  o.problems.resize(1);
  o.searches_per_gpu = 4;
  const TuneReport report = tune(database_, o);
  EXPECT_EQ(report.searches_per_gpu, 1u) << "no worker is started for searches without a problem";
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems.front().measured, 6u);
}

}  // namespace
}  // namespace gemmforge::tuner
