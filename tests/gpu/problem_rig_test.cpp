// ProblemRig's measurement of a candidate on a real GPU: a long candidate whose two verification launches
// both ran clearly slower than the time to beat is timed by those launches alone; one that may win is timed,
// the minimum count shrunk for long launches; the phases of the measurement are reported.
#include <gtest/gtest.h>

#include "core/template_library.hpp"
#include "kernel_fixture.hpp"
#include "rtc/kernel_spec.hpp"
#include "tuner/problem_rig.hpp"

namespace gemmforge::testing {
namespace {

class RigTiming : public KernelTest {};

TEST_F(RigTiming, ALongCandidateClearlyBeatenAtVerificationIsTimedByItsVerificationLaunches) {
  KernelProblem p;
  p.m = p.n = p.k = 4096;  // FP32 FFMA: several milliseconds on any GPU
  const KernelTemplate& t = TemplateLibrary::instance().get("sgemm_simt");
  const Config seed = t.manifest.seeds().front();
  ASSERT_TRUE(t.manifest.violations(seed, &kernels().device(), &p).empty());
  const rtc::GemmKernel& kernel = kernels().get(rtc::make_spec(t, seed, p, kernels().device().arch()));
  tuner::ProblemRig rig(p, kernels().device());

  tuner::TimingOptions options;
  options.budget_ms = 50;
  options.beaten_above_ms = tuner::kLongLaunchMs;  // long enough to decide on, and far below the kernel
  const tuner::Measurement beaten = rig.evaluate(kernel, seed, options, 1e-5);
  ASSERT_EQ(beaten.outcome, tuner::Outcome::kOk) << beaten.reason;
  ASSERT_GT(beaten.timing.min_ms, options.beaten_above_ms)
      << "the premise: a kernel longer than the time to beat";
  EXPECT_EQ(beaten.timing.repetitions, 2) << "the two verification launches, nothing more";
  EXPECT_GT(beaten.phases.verify_ms, 0);
  EXPECT_EQ(beaten.phases.time_ms, 0) << "no timing";

  options.beaten_above_ms = 1e6;  // a thousand seconds: it may win
  const tuner::Measurement timed = rig.evaluate(kernel, seed, options, 1e-5);
  ASSERT_EQ(timed.outcome, tuner::Outcome::kOk) << timed.reason;
  EXPECT_GE(timed.timing.repetitions, options.min_repetitions_long);
  EXPECT_GT(timed.phases.time_ms, 0);
  // The two measurements of one kernel agree: the verification launches are a fair first look.
  EXPECT_NEAR(beaten.timing.median_ms / timed.timing.median_ms, 1.0, 0.2);
}

}  // namespace
}  // namespace gemmforge::testing
