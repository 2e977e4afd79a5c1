// Turning stored trials into the models' measurements.
#include "runtime/result_source.hpp"
#include "core/eligibility.hpp"

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

void add_trial(const db::TrialRecord& trial, const DeviceInfo& device, const TemplateLibrary& library,
               model::TrainingData& data) {
  if (trial.status != db::TrialStatus::kOk || !trial.time_median_ms) return;
  const size_t index = data.add_device(device);
  if (trial.cublas_ms && *trial.cublas_ms > 0) {
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
