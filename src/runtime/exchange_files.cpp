// Reading and writing export files, with limits that keep hostile input from exhausting memory or stack.
#include "runtime/exchange_files.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gemmforge/error.hpp"
#include "runtime/config_check.hpp"

namespace gemmforge::runtime {

std::string database_path_or_default(const std::string& option) {
  return option.empty() ? db::Database::default_path() : option;
}

std::optional<db::Database> open_existing(const std::string& path) {
  if (path != ":memory:" && !std::filesystem::exists(path)) return std::nullopt;
  return db::Database::open(path);
}

ExportFormat parse_export_format(const std::string& text) {
  if (text == "json") return ExportFormat::kJson;
  if (text == "csv") return ExportFormat::kCsv;
  throw InvalidArgumentError(fmt::format("export format '{}' is not json or csv", text));
}

void export_file(const db::Database& database, const std::string& path, ExportFormat format,
                 const db::ExportOptions& options) {
  const std::string text = format == ExportFormat::kJson ? db::export_json(database, options).dump(2) + "\n"
                                                         : db::export_csv(database, options);
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) throw InvalidArgumentError(fmt::format("cannot write the export to '{}'", path));
}

nlohmann::json parse_export_text(const std::string& text, const std::string& origin) {
  // The callback sees every value with its depth before it is built, so a deep document is refused
  // before its nesting can cost anything.
  auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxImportDepth) {
      throw InvalidArgumentError(fmt::format(
          "{}: JSON nested deeper than {} levels is not a gemmforge export", origin, kMaxImportDepth));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
}

db::ImportReport import_file(db::Database& database, const std::string& path, db::ImportPolicy policy,
                             const TemplateLibrary& library) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  if (error) throw InvalidArgumentError(fmt::format("cannot read '{}': {}", path, error.message()));
  if (bytes > kMaxImportBytes) {
    throw InvalidArgumentError(
        fmt::format("'{}' has {} bytes, more than the {} an export may have", path, bytes, kMaxImportBytes));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw InvalidArgumentError(fmt::format("cannot read '{}'", path));
  const nlohmann::json document = parse_export_text(text.str(), path);
  try {
    return db::import_json(database, document, policy, manifest_validator(library));
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(fmt::format("{}: {}; nothing was imported", path, e.what()));
  }
}

}  // namespace gemmforge::runtime
