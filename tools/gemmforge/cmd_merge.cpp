// `gemmforge merge`: pools databases and exports from many machines into one database. Of two measurements
// of one config the better stays, and each problem is served its fastest verified trial, whatever the
// order of the inputs; all or nothing, every entry checked as `import` checks it.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string output;
  double error_bound = 1e-5;
  bool json = false;
};

int run_merge(const MergeOptions& o) {
  if (!(o.error_bound > 0 && o.error_bound < 1)) {
    throw InvalidArgumentError(
        fmt::format("--error-bound {} is not a relative error in (0, 1)", o.error_bound));
  }
  if (runtime::file_kind(o.output) == runtime::FileKind::kJson || o.output.ends_with(".json")) {
    throw InvalidArgumentError(fmt::format(
        "merge writes a database, and '{}' is a JSON file; merge into a .db file, then gemmforge export it",
        o.output));
  }
  for (const std::string& input : o.inputs) {
    std::error_code error;
    if (input != "-" && std::filesystem::equivalent(input, o.output, error)) {
      throw InvalidArgumentError(fmt::format(
          "'{}' is both an input and the output; the output's own results take part in the merge anyway",
          input));
    }
  }
  const db::ImportChecks checks = runtime::import_checks(TemplateLibrary::instance(), o.error_bound);
  auto progress = [&](const std::string& input) {
    return o.json ? db::Progress() : terminal_progress(fmt::format("merging {}", input), "bytes");
  };
  NewFileGuard guard(o.output);
  db::Database database = db::Database::open(o.output, {db::Access::kReadWrite, true, {}});
  const db::ImportReport r = runtime::merge_files(database, o.inputs, checks, progress);
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"inputs", o.inputs},
                                      {"output", o.output},
                                      {"committed", r.committed},
                                      {"devices", {{"added", r.devices_added}, {"known", r.devices_known}}},
                                      {"trials",
                                       {{"stored", r.results_imported + r.trials_imported},
                                        {"kept_better", r.results_skipped + r.trials_skipped}}},
                                      {"unservable", r.unservable},
                                      {"rejected", r.rejected},
                                      {"rejections", r.rejections}}
                           .dump(2));
  } else if (r.rejected > 0) {
    fmt::print(stderr, "{} entries of the inputs are rejected; nothing was merged into {}:\n", r.rejected,
               o.output);
    for (const std::string& rejection : r.rejections) fmt::print(stderr, "  {}\n", rejection);
    if (r.rejected > static_cast<int64_t>(r.rejections.size())) {
      fmt::print(stderr, "  ... and {} more\n", r.rejected - static_cast<int64_t>(r.rejections.size()));
    }
  } else {
    fmt::print("merged {} input(s) into {}:\n", o.inputs.size(), o.output);
    fmt::print("  devices  {} added, {} known\n", r.devices_added, r.devices_known);
    fmt::print("  trials   {} stored, {} already there as good or better\n",
               r.results_imported + r.trials_imported, r.results_skipped + r.trials_skipped);
    if (r.unservable > 0) {
      fmt::print(
          "  {} trials were measured with a template source this gemmforge does not know: kept, never "
          "served\n",
          r.unservable);
    }
  }
  if (r.rejected > 0) return kExitInvalid;
  guard.keep();
  return kExitOk;
}

Command register_merge(CLI::App& app) {
  auto o = std::make_shared<MergeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "merge",
      "Merge databases and exports into one database: the fastest verified trial of each problem wins");
  cmd->add_option("inputs", o->inputs,
                  "Databases and JSON exports (gzip-compressed or not) to merge; - reads an export from "
                  "standard input")
      ->required();
  cmd->add_option("-o,--output", o->output,
                  "Database to merge into (created when missing; its results take part)")
      ->required();
  cmd->add_option("--error-bound", o->error_bound,
                  "Largest relative error against cuBLAS an ok trial may show (what it was verified to), "
                  "where its types' own tolerance is tighter")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return {cmd, [o] { return run_merge(*o); }};
}

}  // namespace

static const bool registered = register_command(95, register_merge);

}  // namespace gemmforge::cli
