// The first-use tuning queue with fake tunes, no GPU: each problem is tuned once, one at a time, in the order
// queued; a failed tune is recorded and not retried; stopping kills the tune in flight and drops the queue;
// tuners sharing a lock file take turns, and a stop ends a wait for the lock.
#include "runtime/first_use_tuner.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gemmforge/error.hpp"
#include "support/polling.hpp"
#include "support/temp_folder.hpp"
#include "support/tune_problem.hpp"

namespace gemmforge::runtime {
namespace {

using Clock = std::chrono::steady_clock;
using Status = TuneOutcome::Status;

using test_support::problem;
using test_support::wait_until;

// What fake tunes did, shared by every job of one or more tuners.
struct Script {
  std::mutex mutex;
  std::vector<KernelProblem> launched;
  std::vector<std::pair<KernelProblem, Status>> finished;
  int active = 0;
  int max_active = 0;
  std::atomic<bool> open{true};  // jobs end only while this is set...
  double run_s = 0;              // ...and once they ran this long
  Status result = Status::kTuned;
  std::atomic<int> killed{0};

  std::vector<KernelProblem> launches() {
    std::lock_guard<std::mutex> lock(mutex);
    return launched;
  }
  std::vector<std::pair<KernelProblem, Status>> finishes() {
    std::lock_guard<std::mutex> lock(mutex);
    return finished;
  }
};

class FakeJob : public TuneJob {
 public:
  explicit FakeJob(Script& script) : script_(script), started_(Clock::now()) {}
  ~FakeJob() override { end(); }

  std::optional<TuneOutcome> poll() override {
    if (!script_.open || Clock::now() - started_ < std::chrono::duration<double>(script_.run_s)) {
      return std::nullopt;
    }
    end();
    return TuneOutcome{script_.result, script_.result == Status::kFailed ? "the fake tune failed" : ""};
  }
  void kill() override {
    ++script_.killed;
    end();
  }

 private:
  void end() {
    if (ended_) return;
    ended_ = true;
    std::lock_guard<std::mutex> lock(script_.mutex);
    --script_.active;
  }

  Script& script_;
  Clock::time_point started_;
  bool ended_ = false;
};

FirstUseTunerOptions fake_options(Script& script) {
  FirstUseTunerOptions options;
  options.poll_interval_s = 0.002;
  options.launch = [&script](const KernelProblem& p) {
    std::lock_guard<std::mutex> lock(script.mutex);
    script.launched.push_back(p);
    script.max_active = std::max(script.max_active, ++script.active);
    return std::make_unique<FakeJob>(script);
  };
  options.finished = [&script](const KernelProblem& p, const TuneOutcome& outcome) {
    std::lock_guard<std::mutex> lock(script.mutex);
    script.finished.emplace_back(p, outcome.status);
  };
  return options;
}

TEST(FirstUseTuner, AProblemIsTunedOnceAndNeverQueuedAgain) {
  Script script;
  FirstUseTuner tuner(fake_options(script));
  EXPECT_TRUE(tuner.enqueue(problem(100)));
  EXPECT_FALSE(tuner.enqueue(problem(100))) << "queued twice";
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 1; }));
  EXPECT_FALSE(tuner.enqueue(problem(100))) << "a tuned problem was queued again";
  EXPECT_FALSE(tuner.pending(problem(100)));
  ASSERT_EQ(script.launches().size(), 1u);
  EXPECT_EQ(script.launches()[0], problem(100));
  ASSERT_EQ(script.finishes().size(), 1u);
  EXPECT_EQ(script.finishes()[0].second, Status::kTuned);
  EXPECT_TRUE(tuner.enqueue(problem(100, true))) << "another layout is another problem";
  EXPECT_TRUE(wait_until([&] { return tuner.stats().finished == 2; }));
}

TEST(FirstUseTuner, OneTuneRunsAtATimeInTheOrderQueued) {
  Script script;
  script.open = false;
  FirstUseTuner tuner(fake_options(script));
  for (int64_t m : {1, 2, 3}) ASSERT_TRUE(tuner.enqueue(problem(m)));
  ASSERT_TRUE(wait_until([&] { return script.launches().size() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // room for a wrong second launch
  EXPECT_EQ(script.launches().size(), 1u) << "a second tune started while the first ran";
  const FirstUseStats waiting = tuner.stats();
  EXPECT_EQ(waiting.running, 1u);
  EXPECT_EQ(waiting.queued, 2u);
  EXPECT_TRUE(tuner.pending(problem(1)));
  EXPECT_TRUE(tuner.pending(problem(3)));
  EXPECT_FALSE(tuner.pending(problem(4)));

  script.open = true;
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 3; }));
  EXPECT_EQ(script.max_active, 1);
  EXPECT_EQ(script.launches(), (std::vector<KernelProblem>{problem(1), problem(2), problem(3)}));
  const FirstUseStats done = tuner.stats();
  EXPECT_EQ(done.queued, 0u);
  EXPECT_EQ(done.running, 0u);
  EXPECT_EQ(done.failed, 0u);
}

TEST(FirstUseTuner, AFailedTuneIsRecordedAndNotRetried) {
  Script script;
  script.result = Status::kFailed;
  FirstUseTuner tuner(fake_options(script));
  ASSERT_TRUE(tuner.enqueue(problem(7)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().failed == 1; }));
  EXPECT_FALSE(tuner.enqueue(problem(7))) << "a failed tune would be retried";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(script.launches().size(), 1u);
  EXPECT_EQ(tuner.stats().finished, 0u);
  EXPECT_TRUE(script.finishes().empty()) << "a failed tune has no result to load";
}

TEST(FirstUseTuner, ALaunchThatThrowsFailsThatTuneOnly) {
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  auto launch = options.launch;
  options.launch = [launch](const KernelProblem& p) -> std::unique_ptr<TuneJob> {
    if (p.m == 1) throw NotFoundError("cannot find the gemmforge tool");
    return launch(p);
  };
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(tuner.enqueue(problem(2)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 1 && tuner.stats().failed == 1; }));
  EXPECT_EQ(script.launches(), std::vector<KernelProblem>{problem(2)});
}

TEST(FirstUseTuner, AResultThatCannotBeLoadedCountsAsAFailure) {
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  options.finished = [](const KernelProblem&, const TuneOutcome&) {
    throw NotFoundError("no stored result serves the problem");
  };
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(5)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().failed == 1; }));
  EXPECT_EQ(tuner.stats().finished, 0u);
}

TEST(FirstUseTuner, StopKillsTheTuneInFlightAndDropsTheQueue) {
  Script script;
  script.open = false;  // a tune that would never end
  FirstUseTuner tuner(fake_options(script));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(tuner.enqueue(problem(2)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().running == 1; }));

  const auto start = Clock::now();
  tuner.stop();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_EQ(script.killed, 1);
  const FirstUseStats after = tuner.stats();
  EXPECT_EQ(after.running, 0u);
  EXPECT_EQ(after.queued, 0u);
  EXPECT_EQ(after.finished, 0u);
  EXPECT_EQ(after.failed, 0u) << "a stopped tune is not a failure";
  EXPECT_FALSE(tuner.pending(problem(1)));
  EXPECT_TRUE(script.finishes().empty());

  // Neither was tuned: both may be queued again, and a new thread tunes them.
  script.open = true;
  EXPECT_TRUE(tuner.enqueue(problem(2)));
  EXPECT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 2; }));
  EXPECT_EQ(script.launches(), (std::vector<KernelProblem>{problem(1), problem(2), problem(1)}));
}

// A stopped tune stored some trials, which select a result for its problem as a finished tune's would: asked
// whether the problem still needs its tune, the runtime would say no. The tune queued again resumes them
// all the same, and once it has run to its end the problem is no longer marked.
TEST(FirstUseTuner, ATuneAStopCutShortIsResumedThoughItsTrialsSelectAResult) {
  Script script;
  script.open = false;
  FirstUseTunerOptions options = fake_options(script);
  std::atomic<int> asked{0};
  options.still_needed = [&](const KernelProblem&) { return ++asked == 1; };
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return script.launches().size() == 1; }));
  EXPECT_FALSE(tuner.interrupted(problem(1)));
  tuner.stop();
  EXPECT_TRUE(tuner.interrupted(problem(1)));
  EXPECT_FALSE(tuner.interrupted(problem(2)));

  script.open = true;
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 1; }));
  EXPECT_EQ(script.launches(), (std::vector<KernelProblem>{problem(1), problem(1)}));
  EXPECT_EQ(asked, 1) << "the resumed tune asked whether it was still needed";
  ASSERT_EQ(script.finishes().size(), 1u);
  EXPECT_EQ(script.finishes()[0].second, Status::kTuned);
  EXPECT_FALSE(tuner.interrupted(problem(1)));
}

TEST(FirstUseTuner, ATunePastItsTimeLimitIsEndedAndFails) {
  Script script;
  script.open = false;
  FirstUseTunerOptions options = fake_options(script);
  options.time_limit_s = 0.05;
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().failed == 1; }));
  EXPECT_EQ(script.killed, 1);
}

TEST(FirstUseTuner, AProblemTunedMeanwhileIsNotTunedAgain) {
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  options.still_needed = [](const KernelProblem& p) { return p.m != 1; };
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(tuner.enqueue(problem(2)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().finished == 2; }));
  EXPECT_EQ(script.launches(), std::vector<KernelProblem>{problem(2)});
  const auto finishes = script.finishes();
  ASSERT_EQ(finishes.size(), 2u);
  EXPECT_EQ(finishes[0], std::pair(problem(1), Status::kSkipped)) << "its result is loaded all the same";
  EXPECT_EQ(finishes[1], std::pair(problem(2), Status::kTuned));
}

class FirstUseLock : public ::testing::Test {
 protected:
  test_support::TempFolder folder_;
  std::string lock_path_ = folder_.file("gemmforge.db.tune-GPU-test.lock");
};

TEST_F(FirstUseLock, ATuneWaitsForTheLockAnotherProcessHolds) {
  const int held = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  options.lock_path = lock_path_;
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(script.launches().empty()) << "tuned while another holder had the lock";
  EXPECT_TRUE(tuner.pending(problem(1)));
  ::close(held);
  EXPECT_TRUE(wait_until([&] { return tuner.stats().finished == 1; }));
}

TEST_F(FirstUseLock, StopEndsTheWaitForTheLock) {
  const int held = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  options.lock_path = lock_path_;
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().running == 1; }));
  const auto start = Clock::now();
  tuner.stop();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 2.0);
  EXPECT_TRUE(script.launches().empty());
  EXPECT_EQ(tuner.stats().failed, 0u);
  ::close(held);
}

TEST_F(FirstUseLock, TunersSharingALockFileTakeTurns) {
  Script script;  // shared: it counts the tunes running in both tuners
  script.run_s = 0.02;
  FirstUseTunerOptions options = fake_options(script);
  options.lock_path = lock_path_;
  FirstUseTuner first(options);
  FirstUseTuner second(options);
  for (int64_t m : {1, 2, 3}) {
    ASSERT_TRUE(first.enqueue(problem(m)));
    ASSERT_TRUE(second.enqueue(problem(m + 10)));
  }
  ASSERT_TRUE(wait_until([&] { return first.stats().finished + second.stats().finished == 6; }));
  EXPECT_EQ(script.max_active, 1) << "two tunes of one GPU ran at once";
}

TEST_F(FirstUseLock, AnUnusableLockFileFailsTheTune) {
  Script script;
  FirstUseTunerOptions options = fake_options(script);
  options.lock_path = folder_.file("no/such/folder/tune.lock");
  FirstUseTuner tuner(std::move(options));
  ASSERT_TRUE(tuner.enqueue(problem(1)));
  ASSERT_TRUE(wait_until([&] { return tuner.stats().failed == 1; }));
  EXPECT_TRUE(script.launches().empty());
}

}  // namespace
}  // namespace gemmforge::runtime
