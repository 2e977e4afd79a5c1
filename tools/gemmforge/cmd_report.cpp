// `gemmforge report`: per tuned problem, the config served and the fastest trials with the columns of the
// classic SGEMM tuning table; with --left-out, how the performance model would have served each tuned
// problem had nobody tuned it. Reads a database (read-only where it is not writable), a JSON export, or the
// results shipped inside gemmforge, so it runs without a GPU.
#include <fmt/format.h>

#include <filesystem>

#include "cli_common.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"
#include "report_left_out.hpp"
#include "runtime/exchange_files.hpp"
#include "runtime/shipped_results.hpp"
#include "tuner/report.hpp"

namespace gemmforge::cli {
namespace {

struct ReportCliOptions {
  std::string db;
  std::string device;
  std::vector<std::string> shapes;
  std::string layout;  // empty: every layout
  std::string order = "row";
  std::string dtype = "f32";  ///< type name of the problems --shape names
  int top = 5;
  bool json = false;
  bool shipped = false;
  bool left_out = false;
  size_t ranked = 0;
};

// Matches problems by their sizes as the user states them (and by layout when one is given).
std::function<bool(const KernelProblem&)> problem_filter(const ReportCliOptions& o) {
  if (o.shapes.empty()) return {};
  std::vector<KernelProblem> wanted;
  for (const std::string& text : o.shapes) {
    int64_t m = 0, n = 0, k = 0;
    parse_shape(text, m, n, k);
    wanted.push_back(make_problem(m, n, k, o.layout.empty() ? "nn" : o.layout, o.order, o.dtype));
  }
  const bool any_layout = o.layout.empty();
  return [wanted, any_layout](const KernelProblem& p) {
    for (const KernelProblem& w : wanted) {
      const bool sizes = w.m == p.m && w.n == p.n && w.k == p.k;
      const bool layout = any_layout || (w.a_trans == p.a_trans && w.b_trans == p.b_trans);
      if (sizes && layout && w.dtype == p.dtype && w.c_dtype == p.c_dtype) return true;
    }
    return false;
  };
}

// The shipped exports imported into a database in memory, checked as `gemmforge import` checks them.
db::Database shipped_database() {
  const runtime::ShippedFiles shipped = runtime::shipped_result_files();
  db::Database database = db::Database::open(":memory:");
  db::Importer importer(database, db::ImportPolicy::kFaster,
                        runtime::import_checks(TemplateLibrary::instance()));
  for (const auto& [name, bytes] : shipped.files) {
    if (std::filesystem::path(name).extension() != ".json") continue;
    const std::string where = shipped.origin + "/" + name;
    runtime::read_export_bytes(bytes, where, [&](std::istream& in) { importer.read(in, where); });
  }
  const db::ImportReport report = importer.finish();
  if (!report.committed) {
    throw InvalidArgumentError(fmt::format("the shipped results do not import: {}",
                                           report.rejections.empty() ? "" : report.rejections.front()));
  }
  return database;
}

int run_report(const ReportCliOptions& o) {
  if (o.top < 1) throw InvalidArgumentError(fmt::format("--top {} must be at least 1", o.top));
  if (o.shipped && !o.db.empty()) throw InvalidArgumentError("give --db or --shipped, not both");
  if (o.ranked > 0 && !o.left_out) throw InvalidArgumentError("--ranked goes with --left-out");
  if (o.left_out) {
    return run_left_out(LeftOutRequest{o.db, o.shipped, o.device, problem_filter(o), o.ranked, o.json});
  }
  tuner::ReportFilter filter;
  filter.device = o.device;
  filter.problem = problem_filter(o);
  filter.top = o.top;
  std::vector<tuner::ProblemReport> reports;
  if (o.shipped) {
    reports = tuner::build_report(shipped_database(), filter);
  } else {
    const std::string path = o.db.empty() ? db::Database::default_path() : o.db;
    // Reading never creates a database: a report of a file that does not exist is a mistake to show.
    const std::optional<db::Database> database = runtime::open_results(path, TemplateLibrary::instance());
    if (!database) {
      throw NotFoundError(fmt::format(
          "there is no tuning database at {}; pass --db with a database or an export (e.g. --db "
          "results.json), --shipped for the results built into gemmforge, or import results first "
          "(gemmforge import FILE)",
          path));
    }
    reports = tuner::build_report(*database, filter);
  }
  if (o.json) {
    fmt::print("{}\n", tuner::report_json(reports));
  } else {
    fmt::print("{}", tuner::format_report(reports));
  }
  return 0;
}

Command register_report(CLI::App& app) {
  auto o = std::make_shared<ReportCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Show the best and the fastest configs of each tuned problem (time, TFLOP/s, occupancy, ...)");
  cmd->add_option("--db", o->db, std::string(kDbHelp) + ", or a JSON export");
  cmd->add_flag("--shipped", o->shipped, "Report the results shipped inside gemmforge (db/tuned/)");
  cmd->add_option("--device", o->device, "Only this GPU: UUID or (part of) its name, as recorded");
  cmd->add_option("--shape", o->shapes, "Only problems of this MxNxK (repeatable)");
  add_layout_option(cmd, o->layout, "With --shape: only this layout (nn, nt, tn, tt); default any");
  cmd->add_option("--dtype", o->dtype, std::string("With --shape: the problems' type. ") + kDtypeHelp)
      ->capture_default_str();
  add_order_option(cmd, o->order, "With --shape: storage order the shape is given in, row or col");
  cmd->add_option("--top", o->top, "Fastest configs shown per problem")->capture_default_str();
  cmd->add_flag("--left-out", o->left_out,
                "Instead, leave each tuned problem out in turn (those --shape names), fit the performance "
                "model on the rest as serving does (with --db: that database and the shipped results) and "
                "show how the config it chooses among those measured on the problem compares with the best "
                "and with cuBLAS; --device picks GPU models by name");
  cmd->add_option("--ranked", o->ranked,
                  "With --left-out: also list per problem the N configs the model ranks first and the N "
                  "fastest measured, with their predicted and measured times, and cuBLAS's");
  cmd->add_flag("--json", o->json, "Print JSON");
  return {cmd, [o] { return run_report(*o); }};
}

}  // namespace

static const bool registered = register_command(55, register_report);

}  // namespace gemmforge::cli
