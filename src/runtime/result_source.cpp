// Ordering the stored results of a problem for serving, and turning stored trials into the models'
// measurements.
#include "runtime/result_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/eligibility.hpp"

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

std::vector<db::TrialRecord> order_exact_results(std::vector<std::pair<bool, db::TrialRecord>> results) {
  const auto time = [](const db::TrialRecord& r) {
    return r.time_median_ms.value_or(std::numeric_limits<double>::infinity());
  };
  double fastest = std::numeric_limits<double>::infinity();
  for (const auto& [own, result] : results) fastest = std::min(fastest, time(result));
  // Rank 0: the card's own results near the fastest; rank 1: everything else. Then by time.
  std::vector<std::pair<int, const db::TrialRecord*>> ranked;
  for (const auto& [own, result] : results)
    ranked.emplace_back(own && time(result) <= fastest * kOwnCardMargin ? 0 : 1, &result);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return time(*a.second) < time(*b.second);
  });
  std::vector<db::TrialRecord> ordered;
  for (const auto& [rank, result] : ranked) ordered.push_back(*result);
  return ordered;
}

std::vector<DeviceInfo> gpu_models_named(const std::vector<ResultSource*>& sources,
                                         const std::string& wanted) {
  std::vector<DeviceInfo> models;
  std::vector<std::string> known;
  for (ResultSource* source : sources) {
    for (const DeviceInfo& d : source->devices()) {
      if (std::find(known.begin(), known.end(), d.name) == known.end()) known.push_back(d.name);
      const bool listed = std::any_of(models.begin(), models.end(),
                                      [&](const DeviceInfo& m) { return same_gpu_model(m.name, d.name); });
      if (!listed && gpu_name_contains(d.name, wanted)) models.push_back(d);
    }
  }
  if (models.empty()) {
    throw NotFoundError(fmt::format("no GPU model named like '{}' has results; the results know: {}", wanted,
                                    known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
  }
  return models;
}

void add_trial(const db::TrialRecord& trial, const DeviceInfo& device, const TemplateLibrary& library,
               model::TrainingData& data) {
  if (trial.status != db::TrialStatus::kOk || !trial.time_median_ms) return;
  const size_t index = data.add_device(device);
  if (db::counts_cublas_time(trial)) {
    data.vendor.push_back(model::VendorMeasurement{trial.problem, index, *trial.cublas_ms});
  }
  // A result kept only for the record (its template source is unknown to this build) is never served.
  if (!trial.servable) return;
  const KernelTemplate* kernel_template = library.find(trial.template_name);
  if (kernel_template == nullptr || !can_serve(*kernel_template, trial.problem)) return;
  try {
    model::KernelMeasurement m;
    m.kernel_template = kernel_template;
    m.config = kernel_template->manifest.normalize(Config::parse_key(trial.template_name, trial.config_key));
    m.problem = trial.problem;
    m.device = index;
    m.time_ms = *trial.time_median_ms;
    data.kernels.push_back(std::move(m));
  } catch (const InvalidArgumentError&) {
    // A config this gemmforge's manifest no longer reads: its measurement describes other code.
  }
}

}  // namespace gemmforge::runtime
