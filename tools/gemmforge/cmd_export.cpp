// `gemmforge export`: a tuning database as a versioned JSON document (to import elsewhere, or to ship in
// db/tuned/) or as a CSV of trials (to analyse).
#include <fmt/format.h>

#include "cli_common.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge::cli {
namespace {

struct ExportOptions {
  std::string format = "json";
  bool all_trials = false;
  std::string device;
  std::string db;
  std::string output = "-";
};

int run_export(const ExportOptions& o) {
  const runtime::ExportFormat format = runtime::parse_export_format(o.format);
  const std::string path = runtime::database_path_or_default(o.db);
  std::optional<db::Database> database = runtime::open_existing(path);
  if (!database) throw NotFoundError(fmt::format("there is no database at '{}' to export", path));
  db::ExportOptions options;
  if (!o.device.empty()) options.device = o.device;
  options.all_trials = o.all_trials;
  runtime::export_file(*database, o.output, format, options);
  if (o.output != "-") fmt::print(stderr, "exported {} to {}\n", path, o.output);
  return 0;
}

Command register_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd =
      app.add_subcommand("export", "Export tuning results as JSON (for import) or CSV (for analysis)");
  cmd->add_option("--format", o->format, "json or csv")->capture_default_str();
  cmd->add_flag("--all-trials", o->all_trials,
                "Every trial, failed ones included, not only the best per problem");
  cmd->add_option("--device", o->device, "Only this device: a UUID or a (part of a) name");
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_option("-o,--output", o->output, "Output file; - for standard output")->capture_default_str();
  return {cmd, [o] { return run_export(*o); }};
}

}  // namespace

static const bool registered = register_command(80, register_export);

}  // namespace gemmforge::cli
