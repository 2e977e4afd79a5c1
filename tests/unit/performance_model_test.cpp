// The performance model and the vendor model on recorded tables: the shipped H100 results (every trial of
// 37 problems), each problem left out in turn. Prints the table it scores, so a change to the model shows
// what it bought.
#include "model/performance_model.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/validation.hpp"
#include "model/vendor_model.hpp"
#include "runtime/shipped_results.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::model {
namespace {

// The shipped results, as db/tuned/ keeps them.
const std::string kRecorded = std::string(GEMMFORGE_SOURCE_DIR) + "/db/tuned";

TrainingData recorded_h100(DeviceInfo& h100) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults results(runtime::result_files_in(kRecorded), kRecorded, library);
  TrainingData data;
  for (const DeviceInfo& d : results.devices()) {
    if (d.name.find("H100") != std::string::npos) h100 = d;
  }
  results.add_measurements(90, library, data);
  return data;
}

TEST(PerformanceModel, RanksTheConfigsOfProblemsItWasNotFittedOn) {
  DeviceInfo h100;
  const TrainingData data = recorded_h100(h100);
  ASSERT_FALSE(h100.name.empty()) << "no H100 in " << kRecorded;
  LeftOutOptions options;
  options.predicted_margin = 0.05;
  const Validation v = validate_left_out(TemplateLibrary::instance(), h100, data, options);
  fmt::print("{}", format_left_out(v));
  ASSERT_GE(v.problems.size(), 30u);
  EXPECT_GE(v.median_rank_correlation, 0.6);
  EXPECT_LE(v.geomean_chosen_over_best, 1.15);
  // cuBLAS's unaligned 16-bit rows apart from FP32's: its time is predicted within 1.16x (1.30x when one
  // feature stood for both). Served, nothing left out fell below 0.98 of cuBLAS (0.52 then) until the
  // retune of gemm_tma whose FP32 stages hold both TF32 parts: on those results 777x1333x2049 BF16 (every
  // dimension odd) is served at 0.918, cuBLAS's time predicted 1.43x too slow from the two other
  // all-odd 16-bit problems, where cuBLAS is slower still. (511x2049x767 FP32 was served at 0.833 until
  // stream-K segments were charged their restarts.) With cuBLAS's predicted time weighed by its own
  // typical error as well as the kernel's, the lowest served rose from 0.947 (1x4096x4096 pedantic FP32 on
  // sgemm_skinny) to 0.967. Since gemm_tma's stream-K segments sum in parallel, stream-K is the fastest
  // config of 16x4096x4096 BF16 nn (0.0244 ms against 0.0251 split in two); left out, 16x4096x14336 nt
  // takes a stream-K config from it, predicted 0.80x its measured time while cuBLAS is predicted 1.28x
  // its own, and is served at 0.879 (its fastest, split in two, runs 0.977x cuBLAS); charged as parallel
  // sums (the last segment reading the others' partial tiles), 0.772x and still 0.879. With hgemm_skinny
  // retuned on loads that fetch 256 bytes into L2, it takes an hgemm_skinny config (served 1.059), and the
  // lowest served row is 64x5120x13824 FP32 at 0.984. FP32 on tensor cores was charged FFMA's rate until
  // the estimate read the units a template multiplies on (Manifest::math): on the H100 this changed little
  // (median correlation 0.867 -> 0.863, chosen 1.054x -> 1.058x); on the H200, whose left-out FP32
  // 128x4096x4096 was served at 0.794 (a gemm_tma config predicted at 0.585 of its time), it ranks
  // 0.801 -> 0.848 and serves that problem at 1.107 (its fastest config, predicted at 0.995 of its time).
  // Charging a TMA block's loads their latency over its stages in flight moved the H200's chosen configs
  // from 1.090x to 1.085x the best's time (BF16 128x4096x4096 nn 1.597x -> 1.232x, 1x4096x4096 nn 1.362x ->
  // 1.114x). Once the H100's results held gemm_tma's present source (the retune for held slices of C),
  // FP32 512x512x8192 tn left out took a stream-K config whose 132 blocks share all 32 tiles' K, predicted
  // at 0.85x its time and served at 0.897, while split in four it ran 1.06x cuBLAS. With a stream block's
  // second start charged to the kernel (its slowest blocks take two segments), not a quarter of it as the
  // blocks' average, and the fit weighing the segments a streamed tile gathers, the chosen configs ran
  // 1.066x -> 1.062x the best's time and nothing left out is served below cuBLAS. The retune for the
  // balanced wave (WAVE) left the model as it was (chosen 1.066x, served 1.288) but for one problem:
  // 16x4096x14336 BF16 nt, left out, takes a stream-K config of 16 tiles of 64 x 256, each cut into about
  // nine segments, predicted at 0.77 of its time while cuBLAS is predicted 1.23x its own, and is served at
  // 0.907 (split in two, it runs 1.06x cuBLAS). Its partial sums follow its reads of B from device memory,
  // which the estimate overlaps with them; charged after the reads (stream-K only), it took hgemm_skinny
  // (served 1.059), but FP32 512x512x8192 tn then took its stream-K config at 0.904, and the H200's
  // left-out choices ran 1.082x their best's time against 1.072x. That stream-K config, under ncu on the
  // H100, read 110 MB from device memory where the same tiles split in four read 67 MB: its blocks read
  // the shared panels at staggered K, and L2 (50 MB) cannot keep them for their later readers. Neither
  // the estimate nor its fitted features see that loss of reuse yet (charging it, analytic or fitted, left
  // 512x512x8192 at 0.904), so the floor stands where those two problems lie. The retune for clusters along
  // N (CLUSTER_N) left the model at a median correlation of 0.892, chosen configs 1.068x their best's time
  // and served 1.288, with the same stream-K choice for 16x4096x14336 nt served at 0.884 of cuBLAS.
  EXPECT_LE(v.geomean_vendor_error, 1.2);
  EXPECT_GE(v.min_served_vs_cublas, 0.88);
}

// A problem of far less work than any its template was fitted on lies outside the fit: fixed costs the
// training problems never showed (launch, prologue, pipeline fill) weigh on it, so its prediction carries a
// larger error, and serving prefers cuBLAS unless the kernel is predicted faster by more than that.
TEST(PerformanceModel, LessWorkThanItsTemplateWasFittedOnWidensThePredictionsError) {
  DeviceInfo h100;
  const TrainingData data = recorded_h100(h100);
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& tma = library.get("gemm_tma");
  // A config gemm_tma was measured with on a problem of the shipped results, and the model of that GPU
  // (whichever GPU model holds results of gemm_tma's present source).
  const auto trial = std::find_if(data.kernels.begin(), data.kernels.end(), [&](const KernelMeasurement& m) {
    return m.kernel_template == &tma && m.problem.to_string() == "bf16 nn 4096x4096x4096 align 8/8/8";
  });
  ASSERT_NE(trial, data.kernels.end());
  const PerformanceModel model(library, data.devices[trial->device], data);
  const Config& config = trial->config;
  const Prediction within =
      model.view(test_support::typed_problem(3072, 3072, 3072, "nn", "bf16")).predict(tma, config);
  const Prediction larger =
      model.view(test_support::typed_problem(6144, 6144, 6144, "nn", "bf16")).predict(tma, config);
  const Prediction below =
      model.view(test_support::typed_problem(64, 64, 64, "nn", "bf16")).predict(tma, config);
  for (const Prediction& p : {within, larger, below}) {
    ASSERT_EQ(p.basis, Basis::kFitted);
    ASSERT_TRUE(std::isfinite(p.time_ms));
  }
  EXPECT_GT(within.log_error, 0.0);
  EXPECT_DOUBLE_EQ(larger.log_error, within.log_error);  // the template's fitted error
  EXPECT_GT(below.log_error, within.log_error) << below.time_ms << " ms predicted";
}

// cuBLAS's time where it was timed on the problem is a measurement, without error; elsewhere the fitted
// prediction carries the fit's error on problems left out of it, which serving weighs against the kernel.
TEST(VendorModel, AFittedPredictionCarriesTheFitsLeftOutErrorAndAMeasurementNone) {
  DeviceInfo h100;
  const TrainingData data = recorded_h100(h100);
  const VendorModel vendor(h100, data);
  fmt::print("cuBLAS's fitted times: typical error {:.3f} (x{:.3f})\n", vendor.typical_log_error(),
             std::exp(vendor.typical_log_error()));
  EXPECT_GT(vendor.typical_log_error(), 0.02);
  EXPECT_LT(vendor.typical_log_error(), 0.5);
  const Prediction measured = vendor.predict(test_support::typed_problem(4096, 4096, 4096, "nn", "f32"));
  EXPECT_EQ(measured.basis, Basis::kMeasured);
  EXPECT_EQ(measured.log_error, 0.0);
  const Prediction fitted = vendor.predict(test_support::typed_problem(3000, 1000, 700, "nt", "f32"));
  EXPECT_EQ(fitted.basis, Basis::kFitted);
  EXPECT_DOUBLE_EQ(fitted.log_error, vendor.typical_log_error());
}

// A tensor-core family's cuBLAS kernels lose most of their speed where any operand's rows are unaligned.
// The recorded TF32 problems show it only where B and C are (4103x4105x4104 nn); a problem unaligned in A
// and C is charged it too, and is not predicted near the aligned speed.
TEST(VendorModel, AnyUnalignedOperandCostsATensorCoreFamilyItsSpeed) {
  DeviceInfo h100;
  const TrainingData data = recorded_h100(h100);
  const VendorModel vendor(h100, data);
  const KernelProblem aligned = test_support::typed_problem(4000, 4000, 4004, "tt", "tf32");
  const KernelProblem unaligned = test_support::typed_problem(4001, 4003, 4004, "tt", "tf32");
  ASSERT_EQ(unaligned.align_a, 1);
  ASSERT_EQ(unaligned.align_b, 4);
  ASSERT_EQ(unaligned.align_c, 1);
  const Prediction fast = vendor.predict(aligned);
  const Prediction slow = vendor.predict(unaligned);
  ASSERT_EQ(slow.basis, Basis::kFitted);
  fmt::print("cuBLAS TF32 tt: {:.4f} ms predicted aligned, {:.4f} ms with A and C unaligned\n", fast.time_ms,
             slow.time_ms);
  EXPECT_GT(slow.time_ms, 1.8 * fast.time_ms);  // on an H200: 3.5x (4103x4105x4104)
}

// A generated kernel serves only if it is faster than cuBLAS by the margin once their log ratio is taken
// one typical error against it; the two errors combine as independent ones (root sum of squares).
TEST(VendorModel, ServesCublasUnlessTheKernelWinsByTheTwoPredictionsCombinedError) {
  const auto prediction = [](double ms, double log_error) {
    Prediction p;
    p.time_ms = ms;
    p.log_error = log_error;
    return p;
  };
  EXPECT_FALSE(vendor_expected_faster(prediction(1.0, 0), prediction(1.05, 0), 0.0));   // both measured
  EXPECT_TRUE(vendor_expected_faster(prediction(1.0, 0), prediction(1.05, 0), 0.06));   // within the margin
  EXPECT_TRUE(vendor_expected_faster(prediction(1.0, 0), prediction(1.05, 0.1), 0.0));  // cuBLAS uncertain
  EXPECT_TRUE(
      vendor_expected_faster(prediction(1.0, 0.1), prediction(1.05, 0), 0.0));  // the kernel uncertain
  // Errors of 0.06 and 0.08 combine to 0.1, not 0.14: e^0.1 = 1.105.
  EXPECT_TRUE(vendor_expected_faster(prediction(1.0, 0.06), prediction(1.10, 0.08), 0.0));
  EXPECT_FALSE(vendor_expected_faster(prediction(1.0, 0.06), prediction(1.11, 0.08), 0.0));
}

}  // namespace
}  // namespace gemmforge::model
