// `gemmforge export`: tuning results as a versioned JSON document (to import elsewhere, or to ship in
// db/tuned/) or as a CSV of trials (to analyse), streamed whatever their size. Reads a database (read-only
// where it is not writable) or a JSON export (to turn it into CSV).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

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
  bool json = false;
};

int run_export(const ExportOptions& o) {
  const runtime::ExportFormat format = runtime::parse_export_format(o.format);
  if (o.json && o.output == "-") {
    throw InvalidArgumentError("--json prints a summary of an export written to a file: add -o FILE");
  }
  const std::string path = runtime::database_path_or_default(o.db);
  std::optional<db::Database> database = runtime::open_results(path, TemplateLibrary::instance());
  if (!database) {
    throw NotFoundError(fmt::format("there is no database at '{}' to export{}", path,
                                    o.db.empty() ? "; pass --db with a database or an export" : ""));
  }
  db::ExportOptions options;
  if (!o.device.empty()) options.device = o.device;
  options.all_trials = o.all_trials;
  const db::Progress progress = o.output == "-"
                                    ? db::Progress()
                                    : terminal_progress(fmt::format("exporting to {}", o.output), "entries");
  const db::ExportSummary summary = runtime::export_file(*database, o.output, format, options, progress);
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"database", path},
                                      {"output", o.output},
                                      {"format", o.format},
                                      {"devices", summary.devices},
                                      {"results", summary.results},
                                      {"trials", summary.trials}}
                           .dump(2));
  } else if (o.output != "-") {
    fmt::print(stderr, "exported {} device(s), {} result(s){} from {} to {}\n", summary.devices,
               summary.results, o.all_trials ? fmt::format(" and {} trial(s)", summary.trials) : "", path,
               o.output);
  }
  return kExitOk;
}

Command register_export(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd =
      app.add_subcommand("export", "Export tuning results as JSON (for import) or CSV (for analysis)");
  cmd->add_option("--format", o->format, "json or csv")
      ->capture_default_str()
      ->check(one_of({"json", "csv"}));
  cmd->add_flag("--all-trials", o->all_trials,
                "Every trial, failed ones included, not only the best per problem");
  cmd->add_option("--device", o->device, "Only this device: a UUID or a (part of a) name");
  cmd->add_option("--db", o->db, std::string(kDbHelp) + ", or a JSON export");
  cmd->add_option("-o,--output", o->output,
                  "Output file (gzip-compressed where its name ends in .gz); - for standard output")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print a summary of the export as JSON (with -o FILE)");
  return {cmd, [o] { return run_export(*o); }};
}

}  // namespace

static const bool registered = register_command(80, register_export);

}  // namespace gemmforge::cli
