// Tuning results (the user's databases, or the shipped ones) as the fallback chain reads them: the exact
// result of a problem, and the results of a GPU model, loaded once per model. A source may stack several
// databases (a per-user one over a site-wide read-only one); the first answers first.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "db/records.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class TunedSource {
 public:
  /// `label` names the source in explanations, e.g. "database /home/me/.cache/gemmforge/gemmforge.db".
  TunedSource(SharedDatabase& database, std::string label);
  /// Several databases, consulted in order; `layers` must not be empty.
  TunedSource(std::vector<SharedDatabase*> layers, std::string label);
  TunedSource(const TunedSource&) = delete;
  TunedSource& operator=(const TunedSource&) = delete;

  const std::string& label() const { return label_; }
  /// The first database.
  SharedDatabase& database() { return *layers_.front(); }
  /// Devices of every layer devices_matching(text) finds, first layer first.
  std::vector<db::DeviceRecord> devices_matching(const std::string& text);

  /// Best results of exactly `problem`: the device's own (found by uuid) first, then those of other
  /// devices of its model (same name, ignoring case). Always a live query.
  std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem);

  /// Best results of every problem tuned on devices of the model named `device_name`.
  const std::vector<db::TrialRecord>& model_bests(const std::string& device_name);
  /// Every ok trial on devices of that model that may be served.
  const std::vector<db::TrialRecord>& model_trials(const std::string& device_name);

  /// Forgets what was loaded per model, so results tuned since are seen.
  void forget();

 private:
  using Records = std::vector<db::TrialRecord>;
  /// The records of a model in `cache`, read with `load` the first time.
  template <typename Load>
  const Records& cached(std::map<std::string, Records>& cache, const std::string& device_name, Load&& load);

  std::vector<SharedDatabase*> layers_;
  std::string label_;
  std::mutex mutex_;
  // By lower-case model name; nodes stay put while others are added. Trials are read only when a
  // device default is needed: they are many more than the bests.
  std::map<std::string, Records> bests_;
  std::map<std::string, Records> trials_;
};

/// Devices of the database whose name equals `name` ignoring case: one GPU model.
std::vector<db::DeviceRecord> model_devices(const db::Database& database, const std::string& name);

}  // namespace gemmforge::runtime
