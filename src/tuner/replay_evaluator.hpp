// Strategies replayed on recorded trials: the trial tables of an exhaustive run, read from a gemmforge
// export, answer for the GPU. Used by the replay test and by the CLI to compare strategies without a GPU.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "db/records.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

/// Every trial recorded for one problem on one device.
struct RecordedTable {
  DeviceInfo device;  ///< as the export describes it: its limits rebuild the space that was searched
  KernelProblem problem;
  std::vector<db::TrialRecord> trials;  ///< ok and failed ones
};

/// The tables of an export document written with all trials ("gemmforge export --all-trials"), one per
/// device and problem. The document goes through db::import_json into an in-memory database, so it is
/// validated exactly as an import is, configs included against the manifests of `library`. Throws
/// InvalidArgumentError naming the fault.
std::vector<RecordedTable> load_recorded_tables(const nlohmann::json& document,
                                                const TemplateLibrary& library);

/// The space a table was recorded over, rebuilt from the manifests (with their pruning rules) for its
/// device and problem: the templates that appear in it, each parameter that took a single value there
/// pinned to it. An exhaustive run over a pinned space gives back exactly that space.
SearchSpace recorded_space(const RecordedTable& table, const TemplateLibrary& library);

/// Answers from a recorded table: an ok trial gives its median time, registers and occupancy, a failed
/// one its status; a candidate missing from the table counts as failed (Outcome::kInvalid).
class ReplayEvaluator : public Evaluator {
 public:
  explicit ReplayEvaluator(const RecordedTable& table);

  std::vector<Observation> evaluate(const SearchSpace& space, const std::vector<size_t>& candidates) override;

  /// What the table says of candidate i of `space`.
  Observation lookup(const SearchSpace& space, size_t candidate) const;
  /// Candidates of `space` the table holds; fewer than space.size() means the run was not exhaustive.
  size_t covered(const SearchSpace& space) const;
  /// The fastest ok time of a candidate of `space`: what an exhaustive run over it finds.
  std::optional<double> best_time_ms(const SearchSpace& space) const;

 private:
  struct Entry {
    Outcome outcome = Outcome::kOk;
    double time_ms = 0;
    int registers = 0;
    int occupancy_blocks = 0;
  };
  std::unordered_map<std::string, Entry> entries_;  // by "template/config key"
};

/// The outcome a trial status stands for.
Outcome outcome_of(db::TrialStatus status);

}  // namespace gemmforge::tuner
