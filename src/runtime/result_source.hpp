// A place tuning results come from when serving: the user's database or the results shipped inside
// gemmforge. The selector asks each for exact results and for the measurements its models learn from.
#pragma once

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

  /// Best results of exactly `problem` on devices of `device`'s model (same name, ignoring case), the
  /// device itself first. Always current.
  virtual std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) = 0;

  /// Adds every ok trial of devices of compute capability `cc` to `data`: kernel measurements of the
  /// templates `library` knows (configs normalized by their manifest; others are skipped), and the cuBLAS
  /// time recorded with each problem.
  virtual void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) = 0;

  /// Every device the source recorded.
  virtual std::vector<DeviceInfo> devices() = 0;
};

/// Adds one ok trial of `device` to `data` (see ResultSource::add_measurements).
void add_trial(const db::TrialRecord& trial, const DeviceInfo& device, const TemplateLibrary& library,
               model::TrainingData& data);

}  // namespace gemmforge::runtime
