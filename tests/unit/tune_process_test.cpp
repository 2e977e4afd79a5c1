// The `gemmforge tune` process of tuning at first use, without a GPU: its command line states exactly the
// problem (the tool itself reads it back), its failure is explained by what it wrote to stderr, its output
// is drained, stopping kills it, and the settings come from the options and the environment.
#include "runtime/tune_process.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "runtime/first_use_tuner.hpp"
#include "support/polling.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_folder.hpp"
#include "support/tune_problem.hpp"
#include "tuner/child_process.hpp"

namespace gemmforge::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using Status = TuneOutcome::Status;

using test_support::problem;
using test_support::ScopedEnv;
using test_support::wait_until;

// Runs a child with its output wired to this process to its end, keeping its stdout.
struct Finished {
  tuner::ExitStatus status;
  std::string out;
};

Finished run_to_end(const std::vector<std::string>& argv) {
  tuner::ChildProcess child = tuner::ChildProcess::spawn(argv);
  Finished result;
  char buffer[4096];
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    const ssize_t got = ::read(child.channel(), buffer, sizeof(buffer));
    if (got > 0) {
      result.out.append(buffer, static_cast<size_t>(got));
    } else if (got == 0) {
      break;
    } else {
      while (::read(child.error_output(), buffer, sizeof(buffer)) > 0) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  result.status = child.wait_or_kill(10);
  return result;
}

TuneOutcome run_job(TuneJob& job) {
  std::optional<TuneOutcome> outcome;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (!(outcome = job.poll()) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!outcome) {
    job.kill();
    return TuneOutcome{Status::kFailed, "the test's deadline passed"};
  }
  return *outcome;
}

std::string gemmforge_tool() {
  return std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge";
}

TEST(TuneCommandLine, StatesTheProblemExactlyAsTheToolReadsIt) {
  test_support::TempFolder folder;
  TuneCommand command;
  command.executable = gemmforge_tool();
  command.database = folder.file("gemmforge.db");
  command.device_uuid = "GPU-00000000-1111-2222-3333-444444444444";
  command.evaluations = 24;
  command.compile_threads = 3;
  // Alignments a tight leading dimension would not give (300x200x100 nn tight is 4/4/4) and ones it would.
  const std::vector<KernelProblem> problems = {
      [] {
        KernelProblem p = problem(300, false, false, 1, 1, 1);
        p.n = 200, p.k = 100;
        return p;
      }(),
      problem(64, true, false, 4, 2, 1),
      [] {
        KernelProblem p = problem(7, true, true, 1, 2, 4);
        p.n = 9, p.k = 11;
        return p;
      }(),
      [] {
        KernelProblem p = problem(1, false, true, 4, 4, 4);
        p.n = 4096, p.k = 4096;
        return p;
      }(),
      // 16-bit operands (vectors of 8 elements), with their own type or FP32 in C, and TF32.
      [] {
        KernelProblem p = problem(1024, false, true, 8, 8, 8);
        p.dtype = p.c_dtype = Dtype::kBf16;
        return p;
      }(),
      [] {
        KernelProblem p = problem(33, true, false, 2, 8, 1);
        p.dtype = Dtype::kF16, p.c_dtype = Dtype::kF32;
        return p;
      }(),
      [] {
        KernelProblem p = problem(256, false, true, 4, 4, 4);
        p.dtype = Dtype::kTf32, p.c_dtype = Dtype::kF32;
        return p;
      }(),
  };
  // As in an application started by srun as rank 1 of 4: the tune still takes its one problem.
  const ScopedEnv rank("SLURM_PROCID", "1");
  const ScopedEnv ranks("SLURM_NTASKS", "4");
  for (const KernelProblem& p : problems) {
    const Config first = TemplateLibrary::instance().get("sgemm_simt").manifest.seeds().front();
    std::vector<std::string> argv = tune_arguments(command, p, {first});
    ASSERT_FALSE(argv.empty());
    EXPECT_EQ(argv.front(), command.executable);
    const std::string line = fmt::format("{}", fmt::join(argv, " "));
    for (const std::string& expected :
         {std::string("--db ") + command.database, "--device " + command.device_uuid,
          std::string("--max-evals 24"), std::string("--threads 3"), std::string("--rank none"),
          std::string("--quiet"), "--first sgemm_simt:" + first.key()}) {
      EXPECT_NE(line.find(expected), std::string::npos) << line;
    }
    argv.push_back("--print-problems");  // the tool prints the problems it would tune and stops
    const Finished ran = run_to_end(argv);
    EXPECT_TRUE(ran.status.ok()) << line << ": " << ran.status.describe();
    EXPECT_EQ(ran.out, p.to_string() + "\n") << line;
  }
}

TEST(TuneProcess, AFailureIsExplainedByTheLastLinesOnStderr) {
  std::unique_ptr<TuneJob> job = start_tune_process(
      {"/bin/sh", "-c", "echo starting >&2; echo 'gemmforge: no device: none here' >&2; exit 3"});
  const TuneOutcome outcome = run_job(*job);
  EXPECT_EQ(outcome.status, Status::kFailed);
  EXPECT_NE(outcome.detail.find("exited with code 3"), std::string::npos) << outcome.detail;
  EXPECT_NE(outcome.detail.find("none here"), std::string::npos) << outcome.detail;
}

TEST(TuneProcess, AChattyProcessIsDrainedAndEndsTuned) {
  // More than a pipe and a socket hold: a process nobody read from would block forever.
  std::unique_ptr<TuneJob> job = start_tune_process(
      {"/bin/sh", "-c", "head -c 3000000 /dev/zero; head -c 3000000 /dev/zero >&2; exit 0"});
  const TuneOutcome outcome = run_job(*job);
  EXPECT_EQ(outcome.status, Status::kTuned) << outcome.detail;
}

TEST(TuneProcess, StoppingTheTunerKillsTheProcess) {
  FirstUseTunerOptions options;
  options.poll_interval_s = 0.005;
  options.launch = [](const KernelProblem&) { return start_tune_process({"/bin/sleep", "60"}); };
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().running == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = Clock::now();
  tuner.stop();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_EQ(tuner.stats().failed, 0u);
}

TEST(TuneProcess, AMissingExecutableCannotStart) {
  EXPECT_THROW(start_tune_process({"/no/such/gemmforge", "tune"}), Error);
}

TEST(TuneProcess, TheToolRefusingTheDeviceFailsTheTuneWithItsReason) {
  // No GPU here, or no GPU of this UUID on a GPU machine: the tool says which, and nothing is tuned.
  test_support::TempFolder folder;
  TuneCommand command;
  command.executable = gemmforge_tool();
  command.database = folder.file("gemmforge.db");
  command.device_uuid = "GPU-00000000-1111-2222-3333-444444444444";
  command.evaluations = 2;
  std::unique_ptr<TuneJob> job = start_tune_process(tune_arguments(command, problem(64)));
  const TuneOutcome outcome = run_job(*job);
  EXPECT_EQ(outcome.status, Status::kFailed);
  EXPECT_NE(outcome.detail.find("gemmforge tune exited with code"), std::string::npos) << outcome.detail;
  EXPECT_NE(outcome.detail.find("gemmforge: "), std::string::npos) << outcome.detail;
}

TEST(FirstUseSettings, TheEnvironmentTurnsTuningOnOrOffAndSetsTheBudget) {
  RuntimeOptions options;
  {
    ScopedEnv on("GEMMFORGE_TUNE_AT_FIRST_USE", nullptr);
    ScopedEnv budget("GEMMFORGE_TUNE_BUDGET", nullptr);
    const FirstUseSettings plain = first_use_settings(options);
    EXPECT_FALSE(plain.enabled);
    EXPECT_EQ(plain.evaluations, 24u);
    options.tune_at_first_use = true;
    options.first_use_evaluations = 10;
    EXPECT_TRUE(first_use_settings(options).enabled);
    EXPECT_EQ(first_use_settings(options).evaluations, 10u);
  }
  {
    ScopedEnv off("GEMMFORGE_TUNE_AT_FIRST_USE", "0");
    ScopedEnv budget("GEMMFORGE_TUNE_BUDGET", "40");
    EXPECT_FALSE(first_use_settings(options).enabled) << "=0 turns off what the options turned on";
    EXPECT_EQ(first_use_settings(options).evaluations, 40u);
  }
  options.tune_at_first_use = false;
  for (const char* bad : {"yes", "-3", "0", "12x"}) {
    ScopedEnv on("GEMMFORGE_TUNE_AT_FIRST_USE", "1");
    ScopedEnv budget("GEMMFORGE_TUNE_BUDGET", bad);
    EXPECT_TRUE(first_use_settings(options).enabled) << "=1 turns on what the options left off";
    EXPECT_EQ(first_use_settings(options).evaluations, 10u) << "a budget of '" << bad << "' is not used";
  }
  ScopedEnv unclear("GEMMFORGE_TUNE_AT_FIRST_USE", "yes");
  EXPECT_FALSE(first_use_settings(options).enabled) << "a value other than 0 or 1 is ignored";
}

TEST(FirstUseSettings, TheToolIsFoundThroughGemmforgeCliFirst) {
  {
    ScopedEnv cli("GEMMFORGE_CLI", "/bin/sh");
    EXPECT_EQ(find_cli_executable(), "/bin/sh");
  }
  {
    ScopedEnv cli("GEMMFORGE_CLI", "/no/such/gemmforge");
    try {
      find_cli_executable();
      ADD_FAILURE() << "a GEMMFORGE_CLI that is no executable was accepted";
    } catch (const NotFoundError& e) {
      EXPECT_NE(std::string(e.what()).find("GEMMFORGE_CLI"), std::string::npos) << e.what();
    }
  }
  ScopedEnv cli("GEMMFORGE_CLI", nullptr);
  const std::string found = find_cli_executable();  // beside this test, or the build tree's
  EXPECT_EQ(::access(found.c_str(), X_OK), 0) << found;
  EXPECT_EQ(std::filesystem::path(found).filename(), "gemmforge") << found;
}

}  // namespace
}  // namespace gemmforge::runtime
