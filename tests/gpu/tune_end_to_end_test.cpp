// Tuning a small problem on a real GPU with a small budget: trials, the run and the best config are
// recorded, a second run measures and compiles nothing, and `gemmforge tune` killed with SIGKILL loses at
// most the trial in flight and resumes where it stopped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "db/database.hpp"
#include "gpu_fixture.hpp"
#include "support/tuner_fixtures.hpp"
#include "tuner/child_process.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::testing {
namespace {

KernelProblem small_problem() {
  KernelProblem p;
  p.m = 512;
  p.n = 384;
  p.k = 256;
  return p;
}

// The gemmforge tool: beside this test binary (a staged copy) or in the build tree.
std::string gemmforge_tool() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error && std::filesystem::exists(self.parent_path() / "gemmforge"))
    return (self.parent_path() / "gemmforge").string();
  return std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge";
}

size_t trial_count(const db::Database& database) {
  size_t count = 0;
  for (const db::DeviceRecord& device : database.devices()) count += database.trials(device.id).size();
  return count;
}

// What a child wrote to stderr so far.
std::string error_output(const tuner::ChildProcess& child) {
  std::string text;
  char buffer[4096];
  ssize_t got = 0;
  while (child.error_output() >= 0 && (got = ::read(child.error_output(), buffer, sizeof(buffer))) > 0)
    text.append(buffer, static_cast<size_t>(got));
  return text;
}

class TuneEndToEnd : public GpuTest {};

TEST_F(TuneEndToEnd, SmallBudgetRecordsTrialsAndASecondRunMeasuresNothing) {
  tuner::fixtures::TempFolder folder;
  db::Database database = db::Database::open(folder.file("tune.db"));
  tuner::TuneOptions options;
  options.problems = {small_problem()};
  options.max_evals = 8;
  options.seed = 3;
  options.quiet = true;
  options.command = "tune_end_to_end_test";

  const tuner::TuneReport first = tuner::tune(database, options);
  ASSERT_EQ(first.problems.size(), 1u);
  const tuner::ProblemSummary& p = first.problems[0];
  EXPECT_EQ(p.evaluations, 8u);
  EXPECT_EQ(p.resumed, 0u);
  EXPECT_GT(p.measured, 0u);
  EXPECT_GT(p.compiled, 0u);
  EXPECT_GT(p.cublas_ms, 0);
  ASSERT_TRUE(p.best) << "no correct kernel among 8 guided candidates";
  EXPECT_GT(p.best->tflops.value_or(0), 0);
  EXPECT_GT(p.best->ratio_vs_cublas.value_or(0), 0);
  EXPECT_LT(p.best->rel_error.value_or(1), options.error_bound);
  EXPECT_EQ(trial_count(database), 9u) << "eight candidates and cuBLAS";

  const std::optional<db::DeviceRecord> device = database.device_by_uuid(first.device.uuid);
  ASSERT_TRUE(device);
  const std::vector<db::RunRecord> runs = database.runs(device->id);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_TRUE(runs[0].finished_at);
  EXPECT_GT(runs[0].clocks.clock_khz, 0);

  const tuner::TuneReport second = tuner::tune(database, options);
  const tuner::ProblemSummary& again = second.problems[0];
  EXPECT_EQ(again.evaluations, 8u);
  EXPECT_EQ(again.resumed, 8u);
  EXPECT_EQ(again.measured, 0u);
  EXPECT_EQ(again.compiled, 0u);
  EXPECT_EQ(trial_count(database), 9u);
  ASSERT_TRUE(again.best);
  EXPECT_EQ(again.best->config_key, p.best->config_key);
}

TEST_F(TuneEndToEnd, KilledTuneLosesAtMostTheTrialInFlightAndResumes) {
  tuner::fixtures::TempFolder folder;
  const std::string path = folder.file("killed.db");
  const std::vector<std::string> command = {gemmforge_tool(), "tune",        "--db",        path,
                                            "--shape",        "512x384x256", "--max-evals", "12",
                                            "--strategy",     "random",      "--quiet"};
  db::Database database = db::Database::open(path);  // the reader; tune writes through its own connection

  tuner::ChildProcess tune = tuner::ChildProcess::spawn(command);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  size_t seen = 0;
  std::optional<tuner::ExitStatus> ended;
  while ((seen = trial_count(database)) < 3 && std::chrono::steady_clock::now() < deadline &&
         !(ended = tune.try_wait())) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (ended && !ended->ok()) FAIL() << "gemmforge tune " << ended->describe() << ": " << error_output(tune);
  tune.kill();
  const size_t kept = trial_count(database);
  if (kept >= 13) GTEST_SKIP() << "the run finished before it could be killed";
  ASSERT_GE(seen, 3u) << "tune recorded no trials within a minute";
  EXPECT_GE(kept, seen);  // everything committed before the kill is there

  tuner::ChildProcess rerun = tuner::ChildProcess::spawn(command);
  const tuner::ExitStatus status = rerun.wait_or_kill(120);
  EXPECT_TRUE(status.ok()) << status.describe() << ": " << error_output(rerun);
  // The stored ones were resumed, the rest measured once; and cuBLAS's trial.
  EXPECT_EQ(trial_count(database), 13u);
  const std::vector<db::DeviceRecord> devices = database.devices();
  ASSERT_EQ(devices.size(), 1u);
  const std::vector<db::RunRecord> runs = database.runs(devices[0].id);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_FALSE(runs[0].finished_at);  // the killed run
  EXPECT_TRUE(runs[1].finished_at);
  size_t by_first = 0;
  for (const db::TrialRecord& t : database.trials(devices[0].id)) by_first += t.run_id == runs[0].id ? 1 : 0;
  EXPECT_EQ(by_first, kept);  // nothing of the first run was measured again
}

}  // namespace
}  // namespace gemmforge::testing
