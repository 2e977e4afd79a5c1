// Sharing tuning results between machines: export a database to JSON (to import elsewhere) or CSV (to
// analyse), and import a JSON export under a merge policy, all or nothing.
//
// JSON document, format_version 1:
//   {"format": "gemmforge-tuning", "format_version": 1, "gemmforge_version": "0.1.0",
//    "exported_at": "2025-01-31T12:00:00.000Z",
//    "devices": [{"uuid", "name", "cc_major", "cc_minor", "sm_count", "memory_bytes", ... every DeviceInfo
//                 field but the ordinal ..., "first_seen", "last_seen"}],
//    "results": [{"device": uuid, "problem": {"dtype", "layout", "m", "n", "k", "align_a", "align_b",
//    "align_c"},
//                 "template", "template_hash", "config", "measurement": {"time_median_ms", "time_min_ms",
//                 "time_max_ms", "repetitions", "cublas_ms", "tflops", "ratio_vs_cublas", "registers",
//                 "smem_bytes", "spill_bytes", "occupancy_blocks", "occupancy_pct", "compile_ms",
//                 "rel_error"}, "created_at", "gemmforge_version"}],            one per (device, problem):
//                 its best trial
//    "trials": [{... as a result ..., "status", "reason"}]}      only with all_trials: every trial
// Unknown measurements are null. Readers ignore members they do not know.
#pragma once

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "core/problem.hpp"
#include "db/database.hpp"

namespace gemmforge::db {

inline constexpr const char* kExportFormat = "gemmforge-tuning";
inline constexpr int kExportFormatVersion = 1;

struct ExportOptions {
  /// Only these devices: a uuid or a name, matched as Database::devices_matching does. Empty: all.
  std::optional<std::string> device;
  /// Also export every trial, failed ones included with their status and reason.
  bool all_trials = false;
};

/// What an import does where the database already has a best config for an imported result's problem.
enum class ImportPolicy {
  kFaster,   ///< keep whichever is faster (default)
  kKeep,     ///< never replace an existing best
  kReplace,  ///< the imported result always becomes the best
};

/// "faster", "keep", "replace"; throws InvalidArgumentError otherwise.
ImportPolicy parse_import_policy(const std::string& text);
const char* to_string(ImportPolicy policy) noexcept;

/// Checks that a template is known and that a config is valid for it on a problem; throws
/// InvalidArgumentError (or NotFoundError) otherwise. The caller wires it to the template manifests,
/// which the database does not know. An empty function accepts everything.
using ConfigValidator = std::function<void(const std::string& template_name, const std::string& config_key,
                                           const KernelProblem& problem)>;

struct ImportReport {
  int devices_added = 0;     ///< devices the database did not know
  int devices_known = 0;     ///< devices it knew already (their local description is kept)
  int results_imported = 0;  ///< results stored, each a trial and (as the policy allowed) a best
  int results_skipped = 0;   ///< results the policy turned away because the local best stays
  int trials_imported = 0;   ///< entries of "trials" stored
  int trials_skipped = 0;    ///< entries of "trials" the database already had (local measurements win)
};

/// The document described above. Throws NotFoundError when options.device matches no device.
nlohmann::json export_json(const Database& database, const ExportOptions& options = {});

/// One row per trial (every trial with all_trials, else the best ones), a header line first, fields
/// quoted as RFC 4180 says (config keys hold commas), lines ended by CRLF.
std::string export_csv(const Database& database, const ExportOptions& options = {});

/// Validates the whole document first (format, version, required members and their types, sizes,
/// finite non-negative times, device references, string lengths, each config through `validate`) and
/// throws InvalidArgumentError naming the JSON path of the first fault ("results[3].problem.m: 0 is not
/// a size in 1..2147483647"). Then applies it in one transaction: results become ok trials without a
/// run, and bests as `policy` says; then "trials" entries the database lacks are added without
/// displacing any best. A failed import changes nothing.
ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ConfigValidator& validate);

}  // namespace gemmforge::db
