// Isolation on a real GPU: a candidate that writes far outside C is recorded as crashed, one that never
// finishes as timeout, one that does not compile as compile_error, and after each the worker is
// restarted and the next good candidate still verifies and times correctly.
#include <gtest/gtest.h>

#include "core/space.hpp"
#include "db/database.hpp"
#include "gpu_fixture.hpp"
#include "support/tuner_fixtures.hpp"
#include "tuner/gpu_evaluator.hpp"

namespace gemmforge::testing {
namespace {

using tuner::Outcome;

class FaultyCandidate : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    library_.emplace(TemplateLibrary::from_directory(tuner::fixtures::write_faulty_templates(folder_)));
    tuner::WorkerOptions options;
    options.template_dir = folder_.file("faulty_templates");
    options.evaluate_timeout_s = 4;  // what the hanging candidate costs
    worker_.emplace(options);
    device_ = worker_->start().device;
    device_id_ = database_.upsert_device(device_);
    problem_.m = 256;
    problem_.n = 192;
    problem_.k = 128;
    std::vector<Space> spaces;
    spaces.push_back(Space::build(library_->get("faulty"), device_, problem_));
    space_.emplace(std::move(spaces), device_, problem_);
  }

  size_t candidate(int mode, int bm) const {
    const int64_t index = space_->find(Config("faulty", {{"MODE", mode}, {"BM", bm}, {"BN", 16}}));
    EXPECT_GE(index, 0) << "MODE=" << mode << " BM=" << bm;
    return static_cast<size_t>(index);
  }

  tuner::fixtures::TempFolder folder_;
  std::optional<TemplateLibrary> library_;
  db::Database database_ = db::Database::open(":memory:");
  std::optional<tuner::WorkerClient> worker_;
  DeviceInfo device_;
  int64_t device_id_ = 0;
  KernelProblem problem_;
  std::optional<tuner::SearchSpace> space_;
};

TEST_F(FaultyCandidate, CrashAndHangAreRecordedAndTheNextGoodCandidateStillMeasures) {
  tuner::GpuEvaluator evaluator(database_, *worker_, *library_, device_id_, device_, problem_, {});
  auto evaluate = [&](int mode, int bm) {
    const size_t c = candidate(mode, bm);
    const tuner::Observation o = evaluator.evaluate(*space_, {c}).at(0);
    const db::TrialRecord* trial = evaluator.trial(c);
    EXPECT_NE(trial, nullptr);
    return std::pair{o, trial != nullptr ? *trial : db::TrialRecord{}};
  };

  const auto [crashed, crash_trial] = evaluate(1, 16);
  EXPECT_EQ(crashed.outcome, Outcome::kCrashed) << crash_trial.reason;
  EXPECT_NE(crash_trial.reason.find("cudaErrorIllegalAddress"), std::string::npos) << crash_trial.reason;

  const auto [good, good_trial] = evaluate(0, 16);
  EXPECT_EQ(good.outcome, Outcome::kOk) << good_trial.reason;
  EXPECT_GT(good.time_ms, 0);
  ASSERT_TRUE(good_trial.rel_error);
  EXPECT_LT(*good_trial.rel_error, 1e-5);
  EXPECT_GT(good_trial.occupancy_blocks.value_or(0), 0);
  EXPECT_EQ(worker_->restarts(), 1);

  const auto [hung, hang_trial] = evaluate(2, 16);
  EXPECT_EQ(hung.outcome, Outcome::kTimeout) << hang_trial.reason;
  EXPECT_NE(hang_trial.reason.find("no reply within 4.0 s"), std::string::npos) << hang_trial.reason;

  const auto [good_again, good_again_trial] = evaluate(0, 32);
  EXPECT_EQ(good_again.outcome, Outcome::kOk) << good_again_trial.reason;
  EXPECT_EQ(worker_->restarts(), 2);

  const auto [broken, broken_trial] = evaluate(3, 16);
  EXPECT_EQ(broken.outcome, Outcome::kCompileError);
  EXPECT_NE(broken_trial.reason.find("compile-failure case"), std::string::npos) << broken_trial.reason;

  // Every outcome is stored, and only a correct candidate can be served.
  const int64_t problem_id = *database_.find_problem(problem_);
  EXPECT_EQ(database_.trials(device_id_, problem_id).size(), 5u);
  const std::optional<db::TrialRecord> best = database_.best(device_id_, problem_id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->status, db::TrialStatus::kOk);
  EXPECT_EQ(best->config_key.rfind("MODE=0,", 0), 0u) << best->config_key;
}

}  // namespace
}  // namespace gemmforge::testing
