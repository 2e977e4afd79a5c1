// WorkerClient against the real gemmforge-worker in its --simulate mode: a worker that crashes, exits,
// hangs, loses its context or garbles its reply becomes a crashed or timed-out measurement with a reason,
// and the next request is served by a restarted worker. Needs no GPU.
#include "tuner/worker_client.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "support/scoped_env.hpp"

namespace gemmforge::tuner {
namespace {

class WorkerClientTest : public ::testing::Test {
 protected:
  static WorkerOptions simulated() {
    WorkerOptions options;
    options.simulate = true;
    options.evaluate_timeout_s = 5;
    return options;
  }

  static SetProblemRequest problem() {
    SetProblemRequest request;
    request.problem.m = 256;
    request.problem.n = 128;
    request.problem.k = 64;
    return request;
  }

  // An evaluate request of a built-in template whose "cubin" scripts the simulated worker.
  static EvaluateRequest scripted(const std::string& script) {
    const KernelTemplate& t = TemplateLibrary::instance().get("sgemm_simt");
    EvaluateRequest request;
    request.template_name = t.manifest.name();
    request.template_hash = t.hash;
    request.config_key = t.manifest.seeds().front().key();
    request.cubin.assign(script.begin(), script.end());
    return request;
  }
};

TEST_F(WorkerClientTest, HelloAndProblemComeFromTheWorker) {
  WorkerClient client(simulated());
  const HelloReply& hello = client.start();
  EXPECT_TRUE(hello.simulated);
  EXPECT_EQ(hello.device.name, "simulated sm_90");
  EXPECT_EQ(hello.protocol, kWorkerProtocolVersion);
  EXPECT_GT(hello.pid, 0);
  EXPECT_THROW(client.evaluate(scripted("sim:ok 1")), InternalError);  // no problem set yet

  const Timing cublas = client.set_problem(problem());
  EXPECT_NEAR(cublas.median_ms, problem().problem.flops() / 20e9, 1e-12);
  ASSERT_TRUE(client.cublas());
  const Measurement m = client.evaluate(scripted("sim:ok 1.5"));
  EXPECT_EQ(m.outcome, Outcome::kOk);
  EXPECT_DOUBLE_EQ(m.timing.median_ms, 1.5);
  EXPECT_EQ(m.registers, 96);
  EXPECT_EQ(client.restarts(), 0);
  EXPECT_EQ(client.requests(), 3u);
}

TEST_F(WorkerClientTest, CrashBecomesCrashedWithTheSignalAndStderrThenTheWorkerRestarts) {
  WorkerClient client(simulated());
  client.set_problem(problem());
  const int64_t first_pid = client.start().pid;

  const Measurement crashed = client.evaluate(scripted("sim:crash"));
  EXPECT_EQ(crashed.outcome, Outcome::kCrashed);
  EXPECT_NE(crashed.reason.find("signal 11"), std::string::npos) << crashed.reason;
  EXPECT_NE(crashed.reason.find("simulated fault in sgemm_simt"), std::string::npos) << crashed.reason;

  const Measurement next = client.evaluate(scripted("sim:ok 2"));
  EXPECT_EQ(next.outcome, Outcome::kOk);
  EXPECT_DOUBLE_EQ(next.timing.median_ms, 2.0);
  EXPECT_EQ(client.restarts(), 1);
  EXPECT_NE(client.start().pid, first_pid);
  // The restarted worker was given the problem again (hello + set_problem before the evaluate).
  EXPECT_EQ(client.requests(), 2u + 1u + 3u);
}

TEST_F(WorkerClientTest, HangIsKilledAtTheDeadlineAndReportedAsTimeout) {
  WorkerOptions options = simulated();
  options.evaluate_timeout_s = 0.5;
  WorkerClient client(options);
  client.set_problem(problem());
  const pid_t hung = static_cast<pid_t>(client.start().pid);

  const auto start = std::chrono::steady_clock::now();
  const Measurement m = client.evaluate(scripted("sim:hang"));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(m.outcome, Outcome::kTimeout);
  EXPECT_NE(m.reason.find("no reply within 0.5 s"), std::string::npos) << m.reason;
  EXPECT_NE(m.reason.find("signal 9"), std::string::npos) << m.reason;
  EXPECT_GE(waited, 0.5);
  EXPECT_LT(waited, 5.0);
  EXPECT_NE(::kill(hung, 0), 0) << "the hung worker is still alive";

  EXPECT_EQ(client.evaluate(scripted("sim:ok 3")).outcome, Outcome::kOk);
  EXPECT_EQ(client.restarts(), 1);
}

TEST_F(WorkerClientTest, ExitWithoutReplyAndLostContextAreCrashes) {
  WorkerClient client(simulated());
  client.set_problem(problem());

  const Measurement exited = client.evaluate(scripted("sim:exit 7"));
  EXPECT_EQ(exited.outcome, Outcome::kCrashed);
  EXPECT_NE(exited.reason.find("exited with code 7"), std::string::npos) << exited.reason;

  // A fatal reply carries the worker's own explanation; the worker then exits by itself.
  const Measurement sticky = client.evaluate(scripted("sim:sticky"));
  EXPECT_EQ(sticky.outcome, Outcome::kCrashed);
  EXPECT_NE(sticky.reason.find("cudaErrorIllegalAddress"), std::string::npos) << sticky.reason;

  const Measurement garbled = client.evaluate(scripted("sim:garbage"));
  EXPECT_EQ(garbled.outcome, Outcome::kCrashed);
  EXPECT_NE(garbled.reason.find("unreadable"), std::string::npos) << garbled.reason;

  EXPECT_EQ(client.evaluate(scripted("sim:ok 1")).outcome, Outcome::kOk);
  EXPECT_EQ(client.restarts(), 3);
}

TEST_F(WorkerClientTest, TemplateMismatchIsRefusedAndTheWorkerKeepsServing) {
  WorkerClient client(simulated());
  client.set_problem(problem());
  EvaluateRequest stale = scripted("sim:ok 1");
  stale.template_hash = "0000000000000000";
  try {
    client.evaluate(stale);
    FAIL() << "a template hash mismatch was measured";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("differs between the tuner"), std::string::npos) << e.what();
  }
  EvaluateRequest unknown = scripted("sim:ok 1");
  unknown.template_name = "no_such_template";
  EXPECT_THROW(client.evaluate(unknown), NotFoundError);

  EXPECT_EQ(client.evaluate(scripted("sim:ok 1")).outcome, Outcome::kOk);
  EXPECT_EQ(client.restarts(), 0);
}

TEST_F(WorkerClientTest, DestructorEndsTheWorker) {
  pid_t pid = 0;
  {
    WorkerClient client(simulated());
    pid = static_cast<pid_t>(client.start().pid);
    EXPECT_EQ(::kill(pid, 0), 0);
  }
  EXPECT_NE(::kill(pid, 0), 0) << "the worker outlived its client";
}

TEST_F(WorkerClientTest, EvaluateDeadlineScalesWithCublasTime) {
  WorkerOptions options = simulated();
  options.evaluate_timeout_s = 0;
  options.min_evaluate_timeout_s = 0;
  WorkerClient client(options);
  TimingOptions timing;
  // Before a problem is set only the fixed allowance is left: the timing budget twice and 5 s.
  EXPECT_DOUBLE_EQ(client.evaluate_timeout_s(timing), 2 * timing.budget_ms / 1e3 + 5.0);
  SetProblemRequest big = problem();
  big.problem.m = big.problem.n = big.problem.k = 4096;  // 6.9 ms of simulated cuBLAS
  client.set_problem(big);
  const double cublas_s = client.cublas()->median_ms / 1e3;
  const int launches = 2 + timing.warmup + timing.min_repetitions + 8;
  EXPECT_DOUBLE_EQ(client.evaluate_timeout_s(timing),
                   launches * 50 * cublas_s + 2 * timing.budget_ms / 1e3 + 5.0);

  options.min_evaluate_timeout_s = 10;
  EXPECT_DOUBLE_EQ(WorkerClient(options).evaluate_timeout_s(timing), 10.0);
}

TEST(WorkerExecutable, MissingOrWrongPathsAreReportedWithWhatToDo) {
  WorkerOptions options;
  options.executable = "/nonexistent/gemmforge-worker";
  WorkerClient client(options);
  try {
    client.start();
    FAIL() << "a missing worker started";
  } catch (const NotFoundError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/gemmforge-worker"), std::string::npos) << e.what();
  }

  {
    const test_support::ScopedEnv missing("GEMMFORGE_WORKER", "/nonexistent/worker");
    try {
      find_worker_executable();
      ADD_FAILURE() << "a GEMMFORGE_WORKER that does not exist was accepted";
    } catch (const NotFoundError& e) {
      EXPECT_NE(std::string(e.what()).find("GEMMFORGE_WORKER"), std::string::npos) << e.what();
    }
  }
  const test_support::ScopedEnv unset("GEMMFORGE_WORKER", nullptr);
  EXPECT_NE(find_worker_executable().find("gemmforge-worker"), std::string::npos);
}

}  // namespace
}  // namespace gemmforge::tuner
