// Tuning databases (the user's, perhaps over a site-wide read-only one) as the selector reads them: exact
// results, live, and the measurements of an architecture, read once. The first database answers first.
#pragma once

#include <string>
#include <vector>

#include "runtime/result_source.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class TunedSource : public ResultSource {
 public:
  /// `label` names the source in explanations, e.g. "database /home/me/.cache/gemmforge/gemmforge.db".
  TunedSource(SharedDatabase& database, std::string label);
  /// Several databases, consulted in order; `layers` must not be empty.
  TunedSource(std::vector<SharedDatabase*> layers, std::string label);
  TunedSource(const TunedSource&) = delete;
  TunedSource& operator=(const TunedSource&) = delete;

  const std::string& label() const override { return label_; }
  /// The first database.
  SharedDatabase& database() { return *layers_.front(); }

  std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) override;
  void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override;
  bool knows_vendor_times() override { return true; }
  /// The fastest of every layer's.
  std::optional<double> vendor_ms(const DeviceInfo& model, const KernelProblem& problem) override;
  std::vector<DeviceInfo> devices() override;
  std::vector<KernelProblem> problems_of(const DeviceInfo& model, const std::string& template_name) override;

 private:
  std::vector<SharedDatabase*> layers_;
  std::string label_;
};

/// Devices of the database whose name equals `name` ignoring case: one GPU model.
std::vector<db::DeviceRecord> model_devices(const db::Database& database, const std::string& name);

}  // namespace gemmforge::runtime
