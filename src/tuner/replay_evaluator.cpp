// Recorded trial tables: loading them from an export, rebuilding the space they cover, answering from them.
#include "tuner/replay_evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "db/database.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

// A config's identity whatever order its parameters were written in.
std::string canonical_key(const std::string& template_name, const Config& config) {
  Config::Values values = config.values();
  std::sort(values.begin(), values.end());
  return template_name + "/" + Config(template_name, std::move(values)).key();
}

}  // namespace

Outcome outcome_of(db::TrialStatus status) {
  switch (status) {
    case db::TrialStatus::kOk:
      return Outcome::kOk;
    case db::TrialStatus::kWrongResult:
      return Outcome::kWrongResult;
    case db::TrialStatus::kCompileError:
      return Outcome::kCompileError;
    case db::TrialStatus::kLaunchError:
      return Outcome::kLaunchError;
    case db::TrialStatus::kCrashed:
      return Outcome::kCrashed;
    case db::TrialStatus::kTimeout:
      return Outcome::kTimeout;
    case db::TrialStatus::kSpills:
      return Outcome::kSpills;
    case db::TrialStatus::kInvalid:
      break;
  }
  return Outcome::kInvalid;
}

std::vector<RecordedTable> load_recorded_tables(const nlohmann::json& document,
                                                const TemplateLibrary& library) {
  if (!document.is_object() || !document.contains("trials")) {
    throw InvalidArgumentError(
        "a replay needs every trial of the recorded run, and this document has no \"trials\": export it "
        "with all trials (gemmforge export --all-trials)");
  }
  db::Database database = db::Database::open(":memory:");
  db::ImportChecks checks;
  // Recorded configs are read with this build's manifests whatever source recorded them.
  checks.validate = [&](const std::string& template_name, const std::string& /*template_hash*/,
                        const std::string& config_key, const KernelProblem& problem) {
    const Manifest& manifest = library.get(template_name).manifest;
    manifest.check(Config::parse_key(template_name, config_key), nullptr, &problem);
  };
  // A replay judges search strategies on recorded times; whether each kernel was correct is not its
  // question, so ok trials need not show their error.
  checks.error_bound = std::numeric_limits<double>::infinity();
  db::import_json(database, document, db::ImportPolicy::kFaster, checks);

  std::vector<RecordedTable> tables;
  for (const db::DeviceRecord& device : database.devices()) {
    std::map<int64_t, RecordedTable> by_problem;
    for (db::TrialRecord& trial : database.trials(device.id)) {
      // Written out in full: parameters added since the recording take the value their manifest gives
      // configs that lack them.
      trial.config_key = library.get(trial.template_name)
                             .manifest.normalize(Config::parse_key(trial.template_name, trial.config_key))
                             .key();
      RecordedTable& table = by_problem[trial.problem_id];
      table.device = device.info;
      table.problem = trial.problem;
      table.trials.push_back(std::move(trial));
    }
    for (auto& [id, table] : by_problem) tables.push_back(std::move(table));
  }
  return tables;
}

SearchSpace recorded_space(const RecordedTable& table, const TemplateLibrary& library) {
  // Values each parameter took, per template, in name order so the flat numbering is reproducible.
  std::map<std::string, std::map<std::string, std::set<int64_t>>> seen;
  for (const db::TrialRecord& trial : table.trials) {
    const Config config = Config::parse_key(trial.template_name, trial.config_key);
    auto& values = seen[trial.template_name];
    for (const auto& [name, value] : config.values()) values[name].insert(value);
  }
  std::vector<Space> spaces;
  for (const auto& [template_name, values] : seen) {
    Pins pins;
    for (const auto& [name, taken] : values) {
      if (taken.size() == 1) pins[name] = *taken.begin();
    }
    spaces.push_back(Space::build(library.get(template_name), table.device, table.problem, pins));
  }
  return SearchSpace(std::move(spaces), table.device, table.problem);
}

ReplayEvaluator::ReplayEvaluator(const RecordedTable& table) {
  for (const db::TrialRecord& trial : table.trials) {
    Entry entry;
    entry.outcome = outcome_of(trial.status);
    entry.time_ms = entry.outcome == Outcome::kOk ? trial.time_median_ms.value_or(0)
                                                  : std::numeric_limits<double>::infinity();
    entry.registers = static_cast<int>(trial.registers.value_or(0));
    entry.occupancy_blocks = static_cast<int>(trial.occupancy_blocks.value_or(0));
    entries_[canonical_key(trial.template_name, Config::parse_key(trial.template_name, trial.config_key))] =
        entry;
  }
}

Observation ReplayEvaluator::lookup(const SearchSpace& space, size_t candidate) const {
  Observation o;
  o.candidate = candidate;
  const Config config = space.config(candidate);
  const auto it = entries_.find(canonical_key(config.template_name(), config));
  if (it == entries_.end()) {
    o.outcome = Outcome::kInvalid;
    return o;
  }
  o.outcome = it->second.outcome;
  o.time_ms = it->second.time_ms;
  o.registers = it->second.registers;
  o.occupancy_blocks = it->second.occupancy_blocks;
  return o;
}

std::vector<Observation> ReplayEvaluator::evaluate(const SearchSpace& space,
                                                   const std::vector<size_t>& candidates) {
  std::vector<Observation> observations;
  observations.reserve(candidates.size());
  for (size_t c : candidates) observations.push_back(lookup(space, c));
  return observations;
}

size_t ReplayEvaluator::covered(const SearchSpace& space) const {
  size_t count = 0;
  for (size_t c = 0; c < space.size(); ++c) {
    const Config config = space.config(c);
    count += entries_.count(canonical_key(config.template_name(), config));
  }
  return count;
}

std::optional<double> ReplayEvaluator::best_time_ms(const SearchSpace& space) const {
  std::optional<double> best;
  for (size_t c = 0; c < space.size(); ++c) {
    const Observation o = lookup(space, c);
    if (o.ok() && (!best || o.time_ms < *best)) best = o.time_ms;
  }
  return best;
}

}  // namespace gemmforge::tuner
