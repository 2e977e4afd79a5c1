// Importing an export: validate the whole document, then merge it in one transaction under a policy.
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "db/exchange.hpp"
#include "db/import_document.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

ImportPolicy parse_import_policy(const std::string& text) {
  if (text == "faster") return ImportPolicy::kFaster;
  if (text == "keep") return ImportPolicy::kKeep;
  if (text == "replace") return ImportPolicy::kReplace;
  throw InvalidArgumentError(fmt::format("import policy '{}' is not one of faster, keep, replace", text));
}

const char* to_string(ImportPolicy policy) noexcept {
  switch (policy) {
    case ImportPolicy::kFaster:
      return "faster";
    case ImportPolicy::kKeep:
      return "keep";
    case ImportPolicy::kReplace:
      return "replace";
  }
  return "unknown";
}

namespace {

BestUpdate best_update(ImportPolicy policy) {
  switch (policy) {
    case ImportPolicy::kKeep:
      return BestUpdate::kIfNone;
    case ImportPolicy::kReplace:
      return BestUpdate::kAlways;
    case ImportPolicy::kFaster:
      break;
  }
  return BestUpdate::kIfFaster;
}

// Whether the policy lets an imported result in, given the local best of its problem.
bool admits(ImportPolicy policy, const TrialRecord& incoming, const std::optional<TrialRecord>& local_best) {
  if (!local_best) return true;
  switch (policy) {
    case ImportPolicy::kKeep:
      return false;
    case ImportPolicy::kReplace:
      return true;
    case ImportPolicy::kFaster:
      break;
  }
  return *incoming.time_median_ms < *local_best->time_median_ms;
}

}  // namespace

ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ConfigValidator& validate) {
  const ImportDocument parsed = parse_import_document(document, validate);
  ImportReport report;
  auto transaction = database.transaction();

  // A device the database knows keeps its local description: it was read from the GPU itself.
  std::map<std::string, int64_t> device_ids;
  for (const DeviceInfo& device : parsed.devices) {
    if (std::optional<DeviceRecord> known = database.device_by_uuid(device.uuid)) {
      device_ids[device.uuid] = known->id;
      ++report.devices_known;
    } else {
      device_ids[device.uuid] = database.upsert_device(device);
      ++report.devices_added;
    }
  }

  for (const ImportedTrial& result : parsed.results) {
    TrialRecord trial = result.trial;
    trial.device_id = device_ids.at(result.device_uuid);
    const std::optional<int64_t> problem_id = database.find_problem(trial.problem);
    const std::optional<TrialRecord> local_best =
        problem_id ? database.best(trial.device_id, *problem_id) : std::nullopt;
    if (!admits(policy, trial, local_best)) {
      ++report.results_skipped;
      continue;
    }
    database.record_trial(trial, best_update(policy));
    ++report.results_imported;
  }

  // After the results, so that a problem's best comes from "results" and never from whichever of its
  // trials happened to be listed first.
  for (const ImportedTrial& entry : parsed.trials) {
    TrialRecord trial = entry.trial;
    trial.device_id = device_ids.at(entry.device_uuid);
    const std::optional<int64_t> problem_id = database.find_problem(trial.problem);
    if (problem_id &&
        database.has_trial(trial.device_id, *problem_id, trial.template_hash, trial.config_key)) {
      ++report.trials_skipped;
      continue;
    }
    database.record_trial(trial, BestUpdate::kIfNone);
    ++report.trials_imported;
  }

  transaction.commit();
  return report;
}

}  // namespace gemmforge::db
