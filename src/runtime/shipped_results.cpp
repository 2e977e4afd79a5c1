// Loading shipped results into an in-memory database through the same import as `gemmforge import`.
#include "runtime/shipped_results.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/embedded.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"
#include "runtime/config_check.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge {

namespace runtime {

ResultFiles builtin_result_files() {
  ResultFiles files;
  for (std::size_t i = 0; i < embedded::kTunedCount; ++i) {
    const embedded::File& file = embedded::kTuned[i];
    files[file.path] = std::string(reinterpret_cast<const char*>(file.data), file.size);
  }
  return files;
}

ResultFiles result_files_in(const std::string& folder) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder))
    throw NotFoundError(fmt::format("results folder '{}' does not exist", folder));
  ResultFiles files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    files[entry.path().filename().string()] = text.str();
  }
  return files;
}

db::Database load_results(const ResultFiles& files, const std::string& origin,
                          const TemplateLibrary& library) {
  db::Database database = db::Database::open(":memory:");
  for (const auto& [name, text] : files) {
    const std::string where = origin + "/" + name;
    const nlohmann::json document = parse_export_text(text, where);
    try {
      db::import_json(database, document, db::ImportPolicy::kFaster, manifest_validator(library));
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError(fmt::format("{}: {}", where, e.what()));
    }
  }
  return database;
}

TunedSource& shipped_results() {
  static SharedDatabase database = [] {
    const TemplateLibrary& library = TemplateLibrary::instance();
    if (const char* folder = std::getenv("GEMMFORGE_TUNED_DIR"); folder != nullptr && *folder != '\0') {
      return SharedDatabase(load_results(result_files_in(folder), folder, library));
    }
    return SharedDatabase(load_results(builtin_result_files(), "built-in results", library));
  }();
  static TunedSource source(database, "shipped results");
  return source;
}

}  // namespace runtime
}  // namespace gemmforge
