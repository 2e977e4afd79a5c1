// Export files on disk: writing a database's JSON or CSV export, and reading, checking and importing a
// JSON export (the `export` and `import` commands, and the results shipped inside gemmforge).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "core/template_library.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"

namespace gemmforge::runtime {

/// Largest export an import reads; real exports of every trial of a big tuning run stay far below.
inline constexpr std::uintmax_t kMaxImportBytes = 256u << 20;
/// Deepest JSON nesting an import accepts; an export nests four levels.
inline constexpr int kMaxImportDepth = 16;

/// The database a command works on: `option` when given, else db::Database::default_path().
std::string database_path_or_default(const std::string& option);

/// Opens the database at `path` when it exists (":memory:" always does); nullopt when there is no such
/// file, so that reading commands never leave an empty database behind.
std::optional<db::Database> open_existing(const std::string& path);

enum class ExportFormat { kJson, kCsv };
/// "json" or "csv"; throws InvalidArgumentError.
ExportFormat parse_export_format(const std::string& text);

/// Writes the export of `database` to `path` ("-": standard output). Throws InvalidArgumentError when the
/// file cannot be written, NotFoundError when options.device matches no device.
void export_file(const db::Database& database, const std::string& path, ExportFormat format,
                 const db::ExportOptions& options);

/// Parses the text of a JSON export; throws InvalidArgumentError naming `origin` for text that is not
/// JSON or nests deeper than kMaxImportDepth.
nlohmann::json parse_export_text(const std::string& text, const std::string& origin);

/// Reads the JSON export at `path` and merges it into `database` under `policy`, every config checked
/// against the manifests of `library` (manifest_validator). Throws InvalidArgumentError naming the file
/// and the first fault for an unreadable, oversized, malformed or invalid document; a failed import
/// changes nothing.
db::ImportReport import_file(db::Database& database, const std::string& path, db::ImportPolicy policy,
                             const TemplateLibrary& library);

}  // namespace gemmforge::runtime
