// Tuning results in files: exports written to disk or standard output, exports and databases imported
// or merged (each checked against this gemmforge's templates), and either kind of file opened for reading
// (the `export`, `import`, `merge`, `report` and `query` commands, and the results shipped inside
// gemmforge).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/template_library.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "runtime/shared_database.hpp"
#include "runtime/tuned_source.hpp"

namespace gemmforge::runtime {

/// The database a command works on: `option` when given, else db::Database::default_path().
std::string database_path_or_default(const std::string& option);

/// Opens the database at `path` when it exists (":memory:" always does), read-only where the file or its
/// folder is not writable (Access::kAuto); nullopt when there is no such file, so that reading commands
/// never leave an empty database behind.
std::optional<db::Database> open_existing(const std::string& path,
                                          const db::OpenOptions& options = {db::Access::kAuto, false, {}});

/// What a file holds, from its first bytes: an SQLite database, JSON (an export), gzip data (an export
/// compressed, as db/tuned/ keeps them), or none of these.
enum class FileKind { kDatabase, kJson, kGzip, kOther };
FileKind file_kind(const std::string& path);

/// Results to read from `path`: a database opened as open_existing does, or a JSON export (compressed with
/// gzip or not) imported into a private in-memory database (checked as `gemmforge import` checks it), so
/// that `report` and `query` read shipped results and exports directly. nullopt when there is no such file.
std::optional<db::Database> open_results(const std::string& path, const TemplateLibrary& library);

/// The results a reading command (`query`) consults, in order.
struct ResultSources {
  std::vector<std::unique_ptr<SharedDatabase>> databases;
  std::unique_ptr<TunedSource> source;  ///< over every database, first first; null when there is none
};

/// Opens, for reading only, the database or export at `path` (the default database when empty; skipped
/// when that does not exist, while a named file that does not exist is NotFoundError), then the site
/// database of $GEMMFORGE_SITE_DB (a warning when it cannot be read).
ResultSources open_result_sources(const std::string& path, const TemplateLibrary& library);

enum class ExportFormat { kJson, kCsv };
/// "json" or "csv"; throws InvalidArgumentError.
ExportFormat parse_export_format(const std::string& text);

/// Writes the export of `database` to `path` ("-": standard output), compressed with gzip where the name
/// ends in ".gz". A file is written beside its destination under a temporary name and renamed into place
/// when complete, so a failed export leaves nothing behind and never a truncated file. Throws
/// InvalidArgumentError when the file cannot be written, NotFoundError when options.device matches no
/// device.
db::ExportSummary export_file(const db::Database& database, const std::string& path, ExportFormat format,
                              const db::ExportOptions& options, const db::Progress& progress = {});

/// Checks of imports wired to the manifests of `library`: configs valid for their template and problem
/// (manifest_validator), sources known by their hash, ok results within `error_bound`.
db::ImportChecks import_checks(const TemplateLibrary& library, double error_bound = 1e-5);

/// Reads the JSON exports at `paths` ("-": standard input) into `importer`, each streamed, and inflated as
/// it is read where it is gzip. Throws InvalidArgumentError naming the file for one that cannot be read, is
/// not an export, or whose gzip data is damaged or cut short.
void read_exports(db::Importer& importer, const std::vector<std::string>& paths,
                  const std::function<db::Progress(const std::string& path)>& progress = {});

/// Imports the exports at `paths` into `database` under `policy`, all or nothing; returns the report,
/// whose `committed` says whether it was applied (false when an entry was rejected).
db::ImportReport import_files(db::Database& database, const std::vector<std::string>& paths,
                              db::ImportPolicy policy, const db::ImportChecks& checks,
                              const std::function<db::Progress(const std::string& path)>& progress = {});

/// One file, throwing InvalidArgumentError "<path>: <first fault>; nothing was imported" when rejected.
db::ImportReport import_file(db::Database& database, const std::string& path, db::ImportPolicy policy,
                             const TemplateLibrary& library);

/// Runs read(stream) over an export held in memory, `bytes` (JSON text, or gzip data inflated as it is
/// read), without a copy of it. Where gzip data is damaged or cut short, throws InvalidArgumentError naming
/// `origin` and that fault, rather than what read made of the text's early end.
void read_export_bytes(const std::string& bytes, const std::string& origin,
                       const std::function<void(std::istream& stream)>& read);

/// Merges databases and exports (told apart by their content) into `database`: ImportPolicy::kMerge, all
/// or nothing. The inputs are only read.
db::ImportReport merge_files(db::Database& database, const std::vector<std::string>& inputs,
                             const db::ImportChecks& checks,
                             const std::function<db::Progress(const std::string& path)>& progress = {});

}  // namespace gemmforge::runtime
