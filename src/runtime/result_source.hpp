// A place tuning results come from when serving: the user's database or the results shipped inside
// gemmforge. The selector asks each for exact results and for the measurements its models learn from.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "db/records.hpp"
#include "model/training_data.hpp"

namespace gemmforge::runtime {

class ResultSource {
 public:
  virtual ~ResultSource() = default;

  /// Names the source in explanations, e.g. "database /home/me/.cache/gemmforge/gemmforge.db".
  virtual const std::string& label() const = 0;

  /// Best results of exactly `problem` on devices of `device`'s model (same name, ignoring case), in
  /// order_exact_results()'s order. Always current.
  virtual std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) = 0;

  /// Adds every ok trial of devices of compute capability `cc` to `data`: kernel measurements of the
  /// templates `library` knows (configs normalized by their manifest; others are skipped), and the cuBLAS
  /// time recorded with each problem.
  virtual void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) = 0;

  /// Whether vendor_ms answers without the source's trials (a database always; an export from
  /// format_version 2 on, which lists each problem's fastest cuBLAS time before its trials).
  virtual bool knows_vendor_times() = 0;
  /// The fastest cuBLAS time on record for exactly `problem` on devices of `model`'s GPU model (what the
  /// vendor model learns from the source's trials), if any; nullopt too where knows_vendor_times() is false.
  virtual std::optional<double> vendor_ms(const DeviceInfo& model, const KernelProblem& problem) = 0;

  /// Every device the source recorded.
  virtual std::vector<DeviceInfo> devices() = 0;

  /// The problems `template_name` has ok trials on for devices of `model`'s GPU model, with any source of
  /// the template, each once: what a retune of the template measures again after its source changed.
  virtual std::vector<KernelProblem> problems_of(const DeviceInfo& model,
                                                 const std::string& template_name) = 0;
};

/// One device of each GPU model the sources recorded whose name holds `wanted` (any case; empty: every
/// model), in the order the sources list them. Throws NotFoundError, naming the models they know, where
/// none does.
std::vector<DeviceInfo> gpu_models_named(const std::vector<ResultSource*>& sources,
                                         const std::string& wanted);

/// Results of one problem on cards of one model, each marked whether it was measured on the serving card
/// itself, put in the order to serve them: fastest first, except that the card's own result goes first
/// when it is within kOwnCardMargin of the fastest (cards of a model, and runs of one card, differ by a
/// few percent, and the card's own measurement is the one that holds here). A result several times faster
/// on another card (a later tune, a better template) is served over the card's own.
inline constexpr double kOwnCardMargin = 1.05;
std::vector<db::TrialRecord> order_exact_results(std::vector<std::pair<bool, db::TrialRecord>> results);

/// Adds one ok trial of `device` to `data` (see ResultSource::add_measurements).
void add_trial(const db::TrialRecord& trial, const DeviceInfo& device, const TemplateLibrary& library,
               model::TrainingData& data);

}  // namespace gemmforge::runtime
