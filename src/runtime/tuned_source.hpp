// A tuning database (the user's) as the selector reads it: exact results, live, and the measurements of an
// architecture, read once.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/result_source.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class TunedSource : public ResultSource {
 public:
  /// `label` names the source in explanations, e.g. "database /home/me/.cache/gemmforge/gemmforge.db".
  TunedSource(SharedDatabase& database, std::string label);
  TunedSource(const TunedSource&) = delete;
  TunedSource& operator=(const TunedSource&) = delete;

  const std::string& label() const override { return label_; }
  SharedDatabase& database() { return database_; }

  std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) override;
  void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override;
  std::vector<DeviceInfo> devices() override;

 private:
  SharedDatabase& database_;
  std::string label_;
};

/// Devices of the database whose name equals `name` ignoring case: one GPU model.
std::vector<db::DeviceRecord> model_devices(const db::Database& database, const std::string& name);

}  // namespace gemmforge::runtime
