// GpuEvaluator without a GPU: the simulated worker answers as each cached "cubin" scripts it, and NVRTC
// compiles what is missing. Pins down that every candidate ends as a recorded trial with its reason,
// that a rerun measures and compiles nothing it already has, that cubins are shared by the problems
// that can use them, and that spilling configs are skipped unless allowed.
#include "tuner/gpu_evaluator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/space.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"
#include "support/tuner_fixtures.hpp"

namespace gemmforge::tuner {
namespace {

class GpuEvaluatorTest : public ::testing::Test {
 protected:
  GpuEvaluatorTest()
      : library_(TemplateLibrary::from_directory(fixtures::write_faulty_templates(folder_))),
        database_(db::Database::open(":memory:")) {
    WorkerOptions options;
    options.simulate = true;
    options.template_dir = folder_.file("faulty_templates");
    options.evaluate_timeout_s = 1;  // the scripted hang costs one second
    worker_.emplace(options);
    device_ = worker_->start().device;
    device_id_ = database_.upsert_device(device_);
  }

  static KernelProblem problem(int64_t m = 64) {
    KernelProblem p;
    p.m = m;
    p.n = 64;
    p.k = 32;
    return p;
  }

  SearchSpace space(const KernelProblem& p) const {
    std::vector<Space> spaces;
    spaces.push_back(Space::build(library_.get("faulty"), device_, p));
    return SearchSpace(std::move(spaces), device_, p);
  }

  Config config(int mode, int bm) const { return Config("faulty", {{"MODE", mode}, {"BM", bm}, {"BN", 16}}); }

  size_t candidate(const SearchSpace& s, int mode, int bm) const {
    const int64_t index = s.find(config(mode, bm));
    EXPECT_GE(index, 0);
    return static_cast<size_t>(index);
  }

  // Stores a "cubin" that scripts the simulated worker (see tools/worker/simulated_backend.hpp).
  void put_script(const KernelProblem& p, int mode, int bm, const std::string& script,
                  int64_t spill_bytes = 0) {
    const rtc::KernelSpec spec = rtc::make_spec(library_.get("faulty"), config(mode, bm), p, device_.arch());
    db::CubinRecord record;
    record.key = spec.cubin_key(library_);
    record.template_name = "faulty";
    record.template_hash = library_.get("faulty").hash;
    record.arch = device_.arch();
    record.nvrtc_version = "test";
    record.config_key = spec.config.key();
    record.cubin.assign(script.begin(), script.end());
    record.registers = 40;
    record.spill_bytes = spill_bytes;
    database_.put_cubin(record);
  }

  GpuEvaluator evaluator(const KernelProblem& p, EvaluatorOptions options = {}) {
    return GpuEvaluator(database_, *worker_, library_, device_id_, device_, p, options);
  }

  fixtures::TempFolder folder_;
  TemplateLibrary library_;
  db::Database database_;
  std::optional<WorkerClient> worker_;
  DeviceInfo device_;
  int64_t device_id_ = 0;
};

TEST_F(GpuEvaluatorTest, EveryCandidateIsRecordedWithItsOutcomeAndAFaultNeverStopsTheBatch) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  ASSERT_EQ(s.size(), 8u);  // MODE 0..3 x BM 16, 32
  put_script(p, 0, 16, "sim:ok 0.5");
  put_script(p, 0, 32, "sim:ok 0.25");
  put_script(p, 1, 16, "sim:crash");
  put_script(p, 1, 32, "sim:sticky");
  put_script(p, 2, 16, "sim:hang");
  put_script(p, 2, 32, "sim:wrong");
  // MODE 3 has no cubin: NVRTC compiles it here and fails on its #error.

  GpuEvaluator e = evaluator(p);
  size_t events = 0;
  e.on_trial([&](const TrialEvent& event) {
    ++events;
    EXPECT_FALSE(event.resumed);
  });
  std::vector<size_t> all(s.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<Observation> observations = e.evaluate(s, all);

  ASSERT_EQ(observations.size(), 8u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(observations[i].candidate, i);
  EXPECT_EQ(observations[candidate(s, 0, 16)].outcome, Outcome::kOk);
  EXPECT_DOUBLE_EQ(observations[candidate(s, 0, 16)].time_ms, 0.5);
  EXPECT_EQ(observations[candidate(s, 0, 32)].outcome, Outcome::kOk);
  EXPECT_EQ(observations[candidate(s, 1, 16)].outcome, Outcome::kCrashed);
  EXPECT_EQ(observations[candidate(s, 1, 32)].outcome, Outcome::kCrashed);
  EXPECT_EQ(observations[candidate(s, 2, 16)].outcome, Outcome::kTimeout);
  EXPECT_EQ(observations[candidate(s, 2, 32)].outcome, Outcome::kWrongResult);
  EXPECT_EQ(observations[candidate(s, 3, 16)].outcome, Outcome::kCompileError);
  EXPECT_EQ(observations[candidate(s, 3, 32)].outcome, Outcome::kCompileError);
  EXPECT_EQ(events, 8u);
  EXPECT_EQ(worker_->restarts(), 3);  // crash, lost context, hang

  const EvaluatorStats& stats = e.stats();
  EXPECT_EQ(stats.cubins_cached, 6u);
  EXPECT_EQ(stats.compiled, 2u);
  EXPECT_EQ(stats.compile_failures, 2u);
  EXPECT_EQ(stats.measured, 6u);
  EXPECT_EQ(stats.resumed, 0u);

  // The database holds all eight, failures with their reasons, and serves the fastest ok one.
  const int64_t problem_id = *database_.find_problem(p);
  const std::vector<db::TrialRecord> trials = database_.trials(device_id_, problem_id);
  ASSERT_EQ(trials.size(), 8u);
  for (const db::TrialRecord& t : trials) {
    EXPECT_EQ(t.status == db::TrialStatus::kOk, t.reason.empty()) << t.config_key << ": " << t.reason;
    EXPECT_TRUE(t.cublas_ms) << t.config_key;
  }
  const db::TrialRecord* compile_error = e.trial(candidate(s, 3, 16));
  ASSERT_NE(compile_error, nullptr);
  EXPECT_NE(compile_error->reason.find("MODE 3 is the compile-failure case"), std::string::npos)
      << compile_error->reason;
  const db::TrialRecord* timeout = e.trial(candidate(s, 2, 16));
  ASSERT_NE(timeout, nullptr);
  EXPECT_NE(timeout->reason.find("no reply within"), std::string::npos) << timeout->reason;
  const std::optional<db::TrialRecord> best = database_.best(device_id_, problem_id);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->config_key, config(0, 32).key());
  EXPECT_DOUBLE_EQ(*best->time_median_ms, 0.25);
  EXPECT_NEAR(*best->ratio_vs_cublas, *best->cublas_ms / 0.25, 1e-12);
  EXPECT_NEAR(*best->tflops, p.flops() / 0.25 / 1e9, 1e-9);
  EXPECT_EQ(best->occupancy_blocks, 2);
  EXPECT_EQ(best->registers, 96);
}

TEST_F(GpuEvaluatorTest, ACandidateClearlySlowerThanTheBestIsTimedBriefly) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  put_script(p, 0, 32, "sim:ok 0.4");
  put_script(p, 0, 16, "sim:ok 0.6");   // 1.5x the best: clearly beaten
  put_script(p, 2, 32, "sim:ok 0.45");  // within 25% of the best: may still win, timed in full
  GpuEvaluator e = evaluator(p);
  e.evaluate(s, {candidate(s, 0, 32)});  // the first has nothing to beat
  e.evaluate(s, {candidate(s, 0, 16)});
  e.evaluate(s, {candidate(s, 2, 32)});
  const TimingOptions full;
  EXPECT_GE(e.trial(candidate(s, 0, 32))->repetitions, full.min_repetitions);
  EXPECT_EQ(e.trial(candidate(s, 0, 16))->repetitions, full.beaten_repetitions);
  EXPECT_GE(e.trial(candidate(s, 2, 32))->repetitions, full.min_repetitions);
  EXPECT_DOUBLE_EQ(*e.trial(candidate(s, 0, 16))->time_median_ms, 0.6);  // still recorded with its time
}

TEST_F(GpuEvaluatorTest, ALongCandidateClearlyBeatenAtVerificationIsNotTimed) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  put_script(p, 0, 32, "sim:ok 40");
  put_script(p, 0, 16, "sim:ok 60");  // 1.5x the best: its two verification launches tell
  put_script(p, 2, 32, "sim:ok 45");  // may still win: timed, the minimum count shrunk for long launches
  GpuEvaluator e = evaluator(p);
  e.evaluate(s, {candidate(s, 0, 32)});
  e.evaluate(s, {candidate(s, 0, 16)});
  e.evaluate(s, {candidate(s, 2, 32)});
  const TimingOptions full;
  EXPECT_EQ(e.trial(candidate(s, 0, 16))->repetitions, 2) << "timed by its verification launches";
  EXPECT_DOUBLE_EQ(*e.trial(candidate(s, 0, 16))->time_median_ms, 60.0);
  // Ten 45 ms launches would take over twice the budget: as many as twice the budget holds.
  ASSERT_GT(full.min_repetitions * 45.0, 2 * full.budget_ms);
  EXPECT_EQ(e.trial(candidate(s, 2, 32))->repetitions,
            std::max(full.min_repetitions_long, static_cast<int>(std::ceil(2 * full.budget_ms / 45.0))));
}

TEST_F(GpuEvaluatorTest, ARerunResumesFromTheDatabaseWithoutCompilingOrMeasuring) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  put_script(p, 0, 16, "sim:ok 0.5");
  put_script(p, 1, 16, "sim:crash");
  const std::vector<size_t> first = {candidate(s, 0, 16), candidate(s, 1, 16), candidate(s, 3, 16)};
  GpuEvaluator e = evaluator(p);
  e.evaluate(s, first);

  GpuEvaluator again = evaluator(p);

  // resume() turns the stored trials into the history a search continues from.
  const History history = again.resume(s);
  ASSERT_EQ(history.size(), 3u);
  EXPECT_TRUE(history.contains(candidate(s, 0, 16)));
  EXPECT_TRUE(history.contains(candidate(s, 1, 16)));
  ASSERT_NE(history.best(), nullptr);
  EXPECT_DOUBLE_EQ(history.best()->time_ms, 0.5);
  EXPECT_EQ(again.stats().resumed, 3u);

  // Asked directly, stored candidates are answered from the database too.
  GpuEvaluator third = evaluator(p);
  const size_t after_setup = worker_->requests();
  std::vector<bool> resumed;
  third.on_trial([&](const TrialEvent& event) { resumed.push_back(event.resumed); });
  const std::vector<Observation> observations = third.evaluate(s, first);
  EXPECT_EQ(observations[0].outcome, Outcome::kOk);
  EXPECT_EQ(observations[1].outcome, Outcome::kCrashed);
  EXPECT_EQ(observations[2].outcome, Outcome::kCompileError);
  EXPECT_EQ(resumed, std::vector<bool>(3, true));
  EXPECT_EQ(third.stats().compiled, 0u);
  EXPECT_EQ(third.stats().measured, 0u);
  EXPECT_EQ(worker_->requests(), after_setup);  // nothing was sent to the worker
}

TEST_F(GpuEvaluatorTest, TrialsRecordedByAnotherTunerMeanwhileAreNotMeasuredAgain) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  GpuEvaluator e = evaluator(p);
  db::TrialRecord other;
  other.device_id = device_id_;
  other.problem = p;
  other.template_name = "faulty";
  other.template_hash = library_.get("faulty").hash;
  other.config_key = config(0, 16).key();
  other.time_median_ms = 0.75;
  database_.record_trial(other);  // after e loaded the stored trials

  const size_t requests = worker_->requests();
  const std::vector<Observation> observations = e.evaluate(s, {candidate(s, 0, 16)});
  EXPECT_EQ(observations[0].outcome, Outcome::kOk);
  EXPECT_DOUBLE_EQ(observations[0].time_ms, 0.75);
  EXPECT_EQ(e.stats().resumed, 1u);
  EXPECT_EQ(worker_->requests(), requests);
}

TEST_F(GpuEvaluatorTest, CompiledCubinsAreCachedAcrossProblemsOfTheSameClass) {
  const KernelProblem small = problem(64);
  const SearchSpace s_small = space(small);
  GpuEvaluator first = evaluator(small);
  const std::vector<Observation> measured = first.evaluate(s_small, {candidate(s_small, 0, 16)});
  EXPECT_EQ(measured[0].outcome, Outcome::kOk);  // a real cubin: the simulation times it from its bytes
  EXPECT_EQ(first.stats().compiled, 1u);
  EXPECT_EQ(first.stats().cubins_cached, 0u);

  // Another size compiles to the same kernel: the cubin comes from the database.
  const KernelProblem larger = problem(96);
  const SearchSpace s_larger = space(larger);
  GpuEvaluator second = evaluator(larger);
  EXPECT_EQ(second.evaluate(s_larger, {candidate(s_larger, 0, 16)})[0].outcome, Outcome::kOk);
  EXPECT_EQ(second.stats().compiled, 0u);
  EXPECT_EQ(second.stats().cubins_cached, 1u);
  EXPECT_EQ(second.stats().measured, 1u);
}

TEST_F(GpuEvaluatorTest, SpillingConfigsAreSkippedUnlessAllowed) {
  const KernelProblem p = problem();
  const SearchSpace s = space(p);
  put_script(p, 0, 16, "sim:ok 0.5", /*spill_bytes=*/24);
  put_script(p, 0, 32, "sim:ok 0.4", /*spill_bytes=*/8);

  GpuEvaluator strict = evaluator(p);
  const size_t requests = worker_->requests();
  const std::vector<Observation> skipped = strict.evaluate(s, {candidate(s, 0, 16)});
  EXPECT_EQ(skipped[0].outcome, Outcome::kSpills);
  EXPECT_EQ(worker_->requests(), requests);
  const db::TrialRecord* trial = strict.trial(candidate(s, 0, 16));
  ASSERT_NE(trial, nullptr);
  EXPECT_EQ(trial->spill_bytes, 24);
  EXPECT_NE(trial->reason.find("--allow-spills"), std::string::npos) << trial->reason;

  EvaluatorOptions allow;
  allow.allow_spills = true;
  GpuEvaluator lenient = evaluator(p, allow);
  const std::vector<Observation> measured = lenient.evaluate(s, {candidate(s, 0, 32)});
  EXPECT_EQ(measured[0].outcome, Outcome::kOk);
  EXPECT_EQ(lenient.trial(candidate(s, 0, 32))->spill_bytes, 8);
}

TEST_F(GpuEvaluatorTest, RefusesASpaceOfAnotherProblem) {
  GpuEvaluator e = evaluator(problem(64));
  EXPECT_THROW(e.evaluate(space(problem(128)), {0}), InternalError);
}

}  // namespace
}  // namespace gemmforge::tuner
