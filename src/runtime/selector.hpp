// Problem -> kernel, the serving journey's choice: the problem's own tuned result on this GPU model (the
// user's database, then the shipped results); else, for a 16-bit problem, its twin's in the other 16-bit
// type; else the portfolio ranked by the performance model; and cuBLAS in any case where it is measured or
// predicted faster by more than a margin. Every config is
// re-checked against its manifest for the asked problem and device. Needs no GPU: the device may carry
// nominal limits.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "runtime/result_source.hpp"
#include "runtime/selection.hpp"
#include "runtime/serving_model.hpp"

namespace gemmforge::runtime {

/// How much faster than a GPU model's own tuned result another model's result of the problem, scaled to
/// this device, must be predicted to serve instead. Cards of one model differ by a few percent and the
/// scaling by more: only a clear gap counts.
inline constexpr double kElsewhereFactor = 1.25;

struct SelectorOptions {
  /// Serve cuBLAS where it is faster (else only generated kernels).
  bool vendor = true;
  /// A measured generated kernel serves only where it is faster than cuBLAS by this fraction: a tie goes
  /// to cuBLAS, since either's speed moves by a few percent between runs (on an H200, two kernels measured
  /// level while tuning ran 0.89 and 0.91 of cuBLAS in a benchmark)...
  double measured_margin = 0.02;
  /// ...or when a predicted one, one typical error above its prediction, is not faster than it by at least
  /// this fraction. The typical error already makes the comparison pessimistic; a further margin only hands
  /// cuBLAS problems where the generated kernel is faster (held-out runs show it), so none by default.
  double predicted_margin = 0.0;
  /// Start fitting the serving model as the selector is made, so that the first problem nobody tuned finds
  /// it ready (the runtime); false fits it when a choice first needs it, so a single choice that a tuned
  /// result makes never waits for the fit (`gemmforge query`).
  bool model_ahead = true;
};

class Selector {
 public:
  /// `sources` in order of trust (the user's database first); none may be null. Starts building the
  /// serving model in the background (unless options.model_ahead is false): the first choice that needs it
  /// waits for it.
  Selector(const TemplateLibrary& library, const DeviceInfo& device, std::vector<ResultSource*> sources,
           SelectorOptions options = {});
  ~Selector();
  Selector(const Selector&) = delete;
  Selector& operator=(const Selector&) = delete;

  /// The choice for a problem some template computes on the device. Throws ArchMismatchError or
  /// NotFoundError when none does and cuBLAS may not serve it.
  Selection select(const KernelProblem& problem) const;

  /// The fitted models (waiting for them); they stay valid while the caller holds them.
  std::shared_ptr<const ServingModel> model() const { return current_model(); }
  /// Builds the serving model again from the sources, so results tuned since are seen.
  void refresh();

  const DeviceInfo& device() const { return device_; }

 private:
  /// A tuned result of the problem that serves on this device, and the source that holds it.
  struct Servable {
    db::TrialRecord result;
    CheckedConfig config;
    std::string source;  ///< the source's label
  };
  /// The first of `source`'s exact results of `tuned` for GPU model `model` whose config passes its
  /// manifest's checks for `problem` on this device: the result that GPU model serves from that source
  /// (`tuned` is `problem` itself, or its sixteen_bit_twin).
  std::optional<Servable> first_servable(ResultSource& source, const DeviceInfo& model,
                                         const KernelProblem& tuned, const KernelProblem& problem) const;
  std::optional<Selection> exact(const KernelProblem& problem) const;
  /// An untuned 16-bit problem whose twin in the other 16-bit type is tuned on this GPU model: the twin's
  /// result, its config, its time and its cuBLAS time, measured there. Both types run at one speed within a
  /// few percent, kernels and cuBLAS alike, while the model's predictions for a problem nobody tuned are off
  /// by more (an H200's FP16 16x4096x14336 nt: 0.0367 ms predicted, 0.0503 run).
  std::optional<Selection> twin_result(const KernelProblem& problem) const;
  /// The problem's result on another GPU model of this architecture and SM count (an H100's for an H200),
  /// scaled to this device by the model, where it beats this GPU model's own result `own` by
  /// kElsewhereFactor: this model's tune missed what the other found (a template tuned since, or one whose
  /// results here were retired by a new source).
  std::optional<Selection> faster_elsewhere(const KernelProblem& problem, const Selection& own) const;
  Selection ranked(const KernelProblem& problem) const;
  /// Hands the choice to cuBLAS when the options say it is faster.
  Selection with_vendor_check(Selection selection, const KernelProblem& problem) const;
  // cuBLAS's fastest time on record for `problem` on this GPU model, from the sources alone (in
  // `fastest`, left empty where none is on record); false where a source knows it only from its trials.
  bool recorded_vendor_ms(const KernelProblem& problem, std::optional<double>& fastest) const;

  std::shared_ptr<const ServingModel> current_model() const;

  const TemplateLibrary& library_;
  DeviceInfo device_;
  std::vector<ResultSource*> sources_;
  SelectorOptions options_;
  mutable std::mutex model_mutex_;  // guards model_ itself; the model is immutable
  mutable std::shared_future<std::shared_ptr<const ServingModel>> model_;  // none yet: not started
};

}  // namespace gemmforge::runtime
