// `gemmforge import`: merges JSON exports (files, or standard input) into a tuning database, every entry
// checked against its meaning and its template's manifest, all or nothing, with a report of every
// rejected entry.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge::cli {
namespace {

struct ImportOptions {
  std::vector<std::string> files;
  std::string policy = "faster";
  std::string db;
  double error_bound = 1e-5;
  bool check = false;
  bool json = false;
};

nlohmann::json report_json(const ImportOptions& o, const std::string& path, const db::ImportReport& r) {
  return {{"files", o.files},
          {"database", path},
          {"policy", o.policy},
          {"committed", r.committed},
          {"checked_only", o.check},
          {"devices", {{"added", r.devices_added}, {"known", r.devices_known}}},
          {"results", {{"imported", r.results_imported}, {"kept_out_by_policy", r.results_skipped}}},
          {"trials", {{"imported", r.trials_imported}, {"already_present", r.trials_skipped}}},
          {"unservable", r.unservable},
          {"rejected", r.rejected},
          {"rejections", r.rejections}};
}

void print_report(const ImportOptions& o, const std::string& path, const db::ImportReport& r) {
  const std::string files = o.files.size() == 1 ? o.files.front() : fmt::format("{} files", o.files.size());
  if (r.rejected > 0) {
    fmt::print(stderr, "{} of the entries of {} {} rejected; nothing was imported into {}:\n", r.rejected,
               files, r.rejected == 1 ? "is" : "are", path);
    for (const std::string& rejection : r.rejections) fmt::print(stderr, "  {}\n", rejection);
    if (r.rejected > static_cast<int64_t>(r.rejections.size())) {
      fmt::print(stderr, "  ... and {} more\n", r.rejected - static_cast<int64_t>(r.rejections.size()));
    }
    return;
  }
  fmt::print("{} {} into {} (policy {}):\n", o.check ? "checked" : "imported", files, path, o.policy);
  fmt::print("  devices  {} added, {} known\n", r.devices_added, r.devices_known);
  fmt::print("  results  {} imported, {} kept out by the policy\n", r.results_imported, r.results_skipped);
  fmt::print("  trials   {} imported, {} already present\n", r.trials_imported, r.trials_skipped);
  if (r.unservable > 0) {
    fmt::print(
        "  {} entries were measured with a template source this gemmforge does not know: kept, never "
        "served\n",
        r.unservable);
  }
  if (o.check) fmt::print("  nothing was written (--check)\n");
}

int run_import(const ImportOptions& o) {
  const db::ImportPolicy policy = db::parse_import_policy(o.policy);
  if (!(o.error_bound > 0 && o.error_bound < 1)) {
    throw InvalidArgumentError(
        fmt::format("--error-bound {} is not a relative error in (0, 1)", o.error_bound));
  }
  const std::string path = runtime::database_path_or_default(o.db);
  const db::ImportChecks checks = runtime::import_checks(TemplateLibrary::instance(), o.error_bound);
  auto progress = [&](const std::string& file) {
    return o.json ? db::Progress() : terminal_progress(fmt::format("reading {}", file), "bytes");
  };
  NewFileGuard guard(path);
  db::Database database = db::Database::open(path, {db::Access::kReadWrite, true, {}});
  db::ImportReport report;
  {
    db::Importer importer(database, policy, checks);
    runtime::read_exports(importer, o.files, progress);
    report = importer.finish(!o.check);
  }
  if (o.json) {
    fmt::print("{}\n", report_json(o, path, report).dump(2));
  } else {
    print_report(o, path, report);
  }
  if (report.rejected > 0) return kExitInvalid;
  if (!o.check) guard.keep();
  return kExitOk;
}

Command register_import(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "import", "Merge JSON exports into a tuning database (every entry checked; all or nothing)");
  cmd->add_option("files", o->files, "JSON exports to import, gzip-compressed or not; - reads standard input")
      ->required();
  cmd->add_option("--policy", o->policy, "Where a problem has a best already: faster, keep or replace")
      ->capture_default_str()
      ->check(one_of({"faster", "keep", "replace"}));
  cmd->add_option("--db", o->db, kDbHelp);
  cmd->add_option("--error-bound", o->error_bound,
                  "Largest relative error against cuBLAS an ok result may show (what it was verified to)")
      ->capture_default_str();
  cmd->add_flag("--check", o->check, "Check the exports and report what would be imported; write nothing");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return {cmd, [o] { return run_import(*o); }};
}

}  // namespace

static const bool registered = register_command(90, register_import);

}  // namespace gemmforge::cli
