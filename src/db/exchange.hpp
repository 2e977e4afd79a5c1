// Sharing tuning results between machines: export a database to JSON (to import elsewhere) or CSV (to
// analyse), import JSON exports under a merge policy, all or nothing, and merge databases and exports.
// Every path streams: memory holds one entry at a time whatever the size of a database or a file.
//
// JSON document, format_version 2 (an export writes its members in this order, one entry per line):
//   {"format": "gemmforge-tuning", "format_version": 2, "gemmforge_version": "0.1.0",
//    "exported_at": "2025-01-31T12:00:00.000Z",
//    "devices": [{"uuid", "name", "cc_major", "cc_minor", "sm_count", "memory_bytes", ... every DeviceInfo
//                 field but the ordinal ..., "first_seen", "last_seen"}],
//    "results": [{"device": uuid, "problem": {"dtype", ["c_dtype" where C's type differs,] "layout", "m",
//                 "n", "k", "align_a", "align_b", "align_c" (in elements)}, "template", "template_hash",
//                 "config", "measurement": {"time_median_ms", "time_min_ms", "time_max_ms", "repetitions",
//                 "cublas_ms", "tflops", "ratio_vs_cublas", "registers", "smem_bytes", "spill_bytes",
//                 "occupancy_blocks", "occupancy_pct", "compile_ms", "rel_error"}, "created_at",
//                 "gemmforge_version"}],   one per (device, problem): its best trial
//    "vendor": [{"device": uuid, "problem": {...}, "cublas_ms"}],   one per (GPU model, problem) with an
//                 ok trial that carries a cuBLAS time: the fastest of those times on the model's devices,
//                 naming the device that took it, so that a reader knows cuBLAS's fastest time on record
//                 without reading the trials
//    "trials": [{... as a result ..., "status", "reason"}]}      only with all_trials: every trial
// Unknown measurements are null. A reader refuses members it does not know, and reads "devices" before
// the entries that refer to them. Version 1 is version 2 without "vendor"; it is still read.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/problem.hpp"
#include "db/database.hpp"

namespace SQLite {
class Database;
class Statement;
}  // namespace SQLite

namespace gemmforge::db {

inline constexpr const char* kExportFormat = "gemmforge-tuning";
inline constexpr int kExportFormatVersion = 2;
/// The oldest version this build reads.
inline constexpr int kOldestExportFormatVersion = 1;
/// The version that brought "vendor": every document of it or later has one, no earlier document does.
inline constexpr int kVendorExportFormatVersion = 2;

/// Called now and then with the work done and the total (0 when unknown), in bytes for documents and in
/// entries for databases, so that a terminal can show progress.
using Progress = std::function<void(int64_t done, int64_t total)>;

struct ExportOptions {
  /// Only these devices: a uuid or a name, matched as Database::devices_matching does. Empty: all.
  std::optional<std::string> device;
  /// Also export every trial, failed ones included with their status and reason.
  bool all_trials = false;
};

/// What an export wrote.
struct ExportSummary {
  int64_t devices = 0;
  int64_t results = 0;
  int64_t trials = 0;
};

/// What an import does where the database already has a best config for an imported result's problem.
enum class ImportPolicy {
  kFaster,   ///< keep whichever is faster (default)
  kKeep,     ///< never replace an existing best
  kReplace,  ///< the imported result always becomes the best
  /// `gemmforge merge`: results and trials are pooled; of two measurements of one config the better one
  /// stays (ok before failed, then faster), and every problem's best becomes its fastest verified trial
  /// (Database::elect_verified_bests), whatever the order of the inputs.
  kMerge,
};

/// "faster", "keep", "replace" (merge is a command of its own); throws InvalidArgumentError otherwise.
ImportPolicy parse_import_policy(const std::string& text);
const char* to_string(ImportPolicy policy) noexcept;

/// Checks that a template is known and that a config is valid for it on a problem; throws
/// InvalidArgumentError (or NotFoundError) otherwise. The caller wires it to the template manifests,
/// which the database does not know, and may leave the config of another source of the template (its
/// hash) unchecked: that source's manifest may have had other parameters and values. An empty function
/// accepts everything.
using ConfigValidator = std::function<void(const std::string& template_name, const std::string& template_hash,
                                           const std::string& config_key, const KernelProblem& problem)>;
/// Whether `hash` is the source hash of template `name` in this gemmforge. Results measured with another
/// source are stored but never served. An empty function knows every source.
using SourceCheck = std::function<bool(const std::string& template_name, const std::string& hash)>;

/// What an import checks beyond the document's own structure.
struct ImportChecks {
  ConfigValidator validate;
  SourceCheck known_source;
  /// Whether a trial of this template source may be served here; others are kept only for the record.
  bool servable(const std::string& template_name, const std::string& template_hash) const {
    return !known_source || known_source(template_name, template_hash);
  }
  /// Largest rel_error an ok result may show where its types' own verification tolerance is tighter
  /// (verified_error_bound): what `gemmforge tune` verifies against by default.
  double error_bound = 1e-5;
};

/// Rejections an ImportReport lists; more are only counted.
inline constexpr size_t kMaxListedRejections = 50;

struct ImportReport {
  int64_t devices_added = 0;     ///< devices the database did not know
  int64_t devices_known = 0;     ///< devices it knew already (their local description is kept)
  int64_t results_imported = 0;  ///< results stored, each a trial and (as the policy allowed) a best
  int64_t results_skipped = 0;   ///< results the policy turned away because the local best stays
  int64_t trials_imported = 0;   ///< entries of "trials" stored
  int64_t trials_skipped = 0;    ///< entries of "trials" the database already had (local measurements win)
  int64_t unservable = 0;        ///< entries stored but never served: their template source is unknown here
  int64_t rejected = 0;          ///< entries refused; one refusal and nothing is imported
  /// "<origin>: results[3].measurement.rel_error: ..." for the first kMaxListedRejections refusals.
  std::vector<std::string> rejections;
  bool committed = false;  ///< whether the import was applied (nothing rejected)
};

/// Writes the JSON document above to `out`, one entry at a time, entries in a fixed order (equal
/// contents give equal text but for exported_at). Throws NotFoundError when options.device matches no
/// device.
ExportSummary write_export_json(const Database& database, std::ostream& out,
                                const ExportOptions& options = {}, const Progress& progress = {});

/// One row per trial (every trial with all_trials, else the best ones), a header line first, fields
/// quoted as RFC 4180 says (config keys hold commas), lines ended by CRLF.
ExportSummary write_export_csv(const Database& database, std::ostream& out, const ExportOptions& options = {},
                               const Progress& progress = {});

/// The document as a value, for small databases and tests.
nlohmann::json export_json(const Database& database, const ExportOptions& options = {});
std::string export_csv(const Database& database, const ExportOptions& options = {});

/// Imports export documents, and the contents of other databases, into a database in one transaction.
/// Each entry is checked as it is read (members and their types, unknown members, the meaning and
/// consistency of every value, device references, duplicates, the config through checks.validate, an ok
/// result's error within checks.error_bound) and applied at once; an entry whose template source is
/// unknown (checks.known_source) is stored but never served. A fault in one entry does not stop the
/// reading, so that one run reports every fault; but then finish() applies nothing. Destroying an
/// Importer before finish() rolls everything back.
class Importer {
 public:
  /// Opens the write transaction (waiting for other writers as Database::busy_timeout_ms() allows).
  Importer(Database& database, ImportPolicy policy, ImportChecks checks);
  ~Importer();
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;

  /// Reads one document. Throws InvalidArgumentError naming `origin` for text that is not a gemmforge
  /// export at all (not JSON, another format or version, a broken structure): nothing is imported then.
  /// `size` is the document's size in bytes when known, for progress.
  void read(std::istream& in, const std::string& origin, const Progress& progress = {}, int64_t size = 0);
  /// Reads every device and trial of another database (merge), checked as entries of a document are.
  void read(const Database& source, const Progress& progress = {});

  /// Commits when nothing was rejected and `apply` (and, for kMerge, elects the bests first); else rolls
  /// back, as a check that writes nothing does. Returns the report; committed says which happened.
  ImportReport finish(bool apply = true);

 private:
  class State;
  static SQLite::Database& connection(Database& database);
  static SQLite::Statement& cached(Database& database, const char* sql);
  std::unique_ptr<State> state_;
};

/// An in-memory document imported at once (shipped results, tests). Throws InvalidArgumentError naming
/// the JSON path of the first fault; a failed import changes nothing.
ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ConfigValidator& validate);
ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ImportChecks& checks);

}  // namespace gemmforge::db
