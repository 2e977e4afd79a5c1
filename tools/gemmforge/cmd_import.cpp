// `gemmforge import`: merges a JSON export into a tuning database, every config checked against its
// template's manifest, all or nothing.
#include <fmt/format.h>

#include "cli_common.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge::cli {
namespace {

struct ImportOptions {
  std::string file;
  std::string policy = "faster";
  std::string db;
};

int run_import(const ImportOptions& o) {
  const db::ImportPolicy policy = db::parse_import_policy(o.policy);
  const std::string path = runtime::database_path_or_default(o.db);
  db::Database database = db::Database::open(path);
  const db::ImportReport r = runtime::import_file(database, o.file, policy, TemplateLibrary::instance());
  fmt::print("imported {} into {} (policy {}):\n", o.file, path, db::to_string(policy));
  fmt::print("  devices  {} added, {} known\n", r.devices_added, r.devices_known);
  fmt::print("  results  {} imported, {} kept out by the policy\n", r.results_imported, r.results_skipped);
  fmt::print("  trials   {} imported, {} already present\n", r.trials_imported, r.trials_skipped);
  return 0;
}

Command register_import(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd =
      app.add_subcommand("import", "Merge a JSON export into a tuning database (validated, all or nothing)");
  cmd->add_option("file", o->file, "JSON export to import")->required();
  cmd->add_option("--policy", o->policy, "Where a problem has a best already: faster, keep or replace")
      ->capture_default_str();
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  return {cmd, [o] { return run_import(*o); }};
}

}  // namespace

static const bool registered = register_command(90, register_import);

}  // namespace gemmforge::cli
