// `gemmforge tune`: search the template spaces for the fastest correct config of each problem on a GPU,
// measuring in an isolated worker process and recording every trial in the tuning database.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli_common.hpp"
#include "core/dtype.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::cli {
namespace {

struct TuneCliOptions {
  std::string device;
  std::vector<std::string> shapes;
  std::string shapes_file;
  std::string layout = "nn";
  std::string order = "row";
  std::string dtype = "f32";  ///< type name: operands, and '>f32' for an FP32 C
  std::string align;
  bool print_problems = false;
  std::string strategy = "guided";
  size_t max_evals = 128;
  double time_s = 0;
  std::string db;
  std::vector<std::string> templates;
  std::vector<std::string> pins;
  uint64_t seed = 1;
  bool allow_spills = false;
  bool no_vendor = false;
  bool quiet = false;
  bool from_misses = false;
  double error_bound = 1e-5;
  double timeout_s = 0;
  unsigned threads = 0;
  size_t batch = 0;
  bool json = false;
};

// The exact command, for the runs table.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (c == '\0') c = ' ';
  }
  return text.empty() ? "gemmforge tune" : text;
}

// --align "A,B,C": the vector width in elements (1, 2 or 4; 8 for 16-bit elements) of each operand as the
// call names them.
std::optional<std::array<int, 3>> parse_align(const std::string& text) {
  if (text.empty()) return std::nullopt;
  std::array<int, 3> align{};
  char comma1 = 0, comma2 = 0;
  std::istringstream in(text);
  std::string rest;
  const bool read = static_cast<bool>(in >> align[0] >> comma1 >> align[1] >> comma2 >> align[2]);
  if (!read || comma1 != ',' || comma2 != ',' || (in >> rest) ||
      std::any_of(align.begin(), align.end(), [](int a) { return a != 1 && a != 2 && a != 4 && a != 8; })) {
    throw InvalidArgumentError(
        fmt::format("--align '{}' must be three widths in elements from 1, 2, 4 (and 8 for 16-bit elements) "
                    "for A, B and C, "
                    "e.g. 4,4,1",
                    text));
  }
  return align;
}

std::vector<KernelProblem> problems_from_shapes(const TuneCliOptions& o) {
  const std::optional<std::array<int, 3>> align = parse_align(o.align);
  std::vector<KernelProblem> problems;
  for (const ShapeEntry& s : collect_shapes(o.shapes, o.shapes_file)) {
    const std::string order = s.order.empty() ? o.order : s.order;
    KernelProblem p = make_problem(s.m, s.n, s.k, s.layout.empty() ? o.layout : s.layout, order, o.dtype);
    if (align) {
      // The tuner lays its operands out with leading dimensions that give exactly these widths. A
      // column-major call is the row-major problem of C^T, whose left operand is the call's B.
      const bool row = parse_order(order) == Order::kRowMajor;
      p.align_a = row ? (*align)[0] : (*align)[1];
      p.align_b = row ? (*align)[1] : (*align)[0];
      p.align_c = (*align)[2];
      for (auto [width, dtype] :
           {std::pair{p.align_a, p.dtype}, std::pair{p.align_b, p.dtype}, std::pair{p.align_c, p.c_dtype}}) {
        if (width * element_bytes(dtype) > 16) {
          throw InvalidArgumentError(fmt::format("--align '{}': {} elements of {} exceed a 16-byte vector",
                                                 o.align, width, to_string(dtype)));
        }
      }
    }
    problems.push_back(p);
  }
  return problems;
}

std::vector<KernelProblem> problems_from_misses(const db::Database& database, int ordinal) {
  const DeviceInfo device = cuda::query_device(ordinal);
  const std::optional<db::DeviceRecord> record = database.device_by_uuid(device.uuid);
  std::vector<KernelProblem> problems;
  if (!record) return problems;
  for (const db::MissRecord& miss : database.misses(record->id)) problems.push_back(miss.problem);
  return problems;
}

void print_summary(const tuner::TuneReport& report) {
  size_t compiled = 0;
  double compile_s = 0;
  double compile_sum_s = 0;
  for (const tuner::ProblemSummary& p : report.problems) {
    compiled += p.compiled;
    compile_s += p.compile_busy_s;
    compile_sum_s += p.compile_sum_s;
  }
  fmt::print("\nTuned {} problem(s) on {} (run {}) in {:.1f} s", report.problems.size(), report.device.name,
             report.run_id, report.wall_s);
  if (report.worker_restarts > 0) fmt::print("; the worker was restarted {} time(s)", report.worker_restarts);
  if (compiled > 0) {
    // Batches with few new kernels leave compile threads idle, so the wall-time rate can sit below what
    // the threads sustain; the mean duration shows both.
    fmt::print(
        "\nNVRTC: {} kernels in {:.1f} s of compile wall time on {} threads ({:.1f} kernels/s), {:.2f} s per "
        "kernel on average",
        compiled, compile_s, report.compile_threads, compile_s > 0 ? compiled / compile_s : 0.0,
        compile_sum_s / compiled);
  }
  fmt::print("\n\n{:<36} {:>10} {:>10} {:>8} {:>9} {:>13} {:>7}  {}\n", "problem", "cuBLAS ms", "best ms",
             "TFLOP/s", "vs cuBLAS", "evals (new)", "wall s", "best config");
  for (const tuner::ProblemSummary& p : report.problems) {
    const std::string evaluations = fmt::format("{} ({})", p.evaluations, p.measured);
    if (p.candidates == 0) {
      fmt::print("{:<36} no candidate: no template supports this problem on this GPU\n",
                 p.problem.to_string());
      continue;
    }
    if (!p.best) {
      fmt::print("{:<36} {:>10.4f} {:>10} {:>8} {:>9} {:>13} {:>7.1f}  no correct kernel found\n",
                 p.problem.to_string(), p.cublas_ms, "-", "-", "-", evaluations, p.wall_s);
      continue;
    }
    const db::TrialRecord& b = *p.best;
    fmt::print("{:<36} {:>10.4f} {:>10.4f} {:>8.2f} {:>8.3f}x {:>13} {:>7.1f}  {} {}\n",
               p.problem.to_string(), p.cublas_ms, b.time_median_ms.value_or(0), b.tflops.value_or(0),
               b.ratio_vs_cublas.value_or(0), evaluations, p.wall_s, b.template_name, b.config_key);
  }
}

nlohmann::json summary_json(const tuner::TuneReport& report) {
  nlohmann::json problems = nlohmann::json::array();
  for (const tuner::ProblemSummary& p : report.problems) {
    nlohmann::json best = nullptr;
    if (p.best) {
      best = {{"template", p.best->template_name},
              {"config", p.best->config_key},
              {"time_ms", p.best->time_median_ms.value_or(0)},
              {"tflops", p.best->tflops.value_or(0)},
              {"ratio_vs_cublas", p.best->ratio_vs_cublas.value_or(0)}};
    }
    problems.push_back({{"problem", p.problem.to_string()},
                        {"candidates", p.candidates},
                        {"evaluations", p.evaluations},
                        {"measured", p.measured},
                        {"failed", p.failed},
                        {"compiled", p.compiled},
                        {"cublas_ms", p.cublas_ms},
                        {"wall_s", p.wall_s},
                        {"best", best}});
  }
  return {{"device", report.device.name},
          {"run", report.run_id},
          {"wall_s", report.wall_s},
          {"worker_restarts", report.worker_restarts},
          {"problems", problems}};
}

int run_tune(const TuneCliOptions& o) {
  // Everything that can be checked without side effects comes first; the database is opened (and
  // created) only once a GPU is known to be there, so a failed start writes nothing.
  tuner::make_strategy(o.strategy, o.seed);
  Pins pins;
  for (const std::string& pin : o.pins) add_pin(pins, pin);
  std::vector<KernelProblem> problems = problems_from_shapes(o);
  if (o.print_problems) {
    if (o.from_misses) {
      throw InvalidArgumentError(
          "--print-problems lists the problems of --shape and --shapes; those of --from-misses need the GPU");
    }
    for (const KernelProblem& p : problems) fmt::print("{}\n", p.to_string());
    return 0;
  }
  if (problems.empty() && !o.from_misses) {
    throw InvalidArgumentError("nothing to tune: give --shape MxNxK, --shapes FILE or --from-misses");
  }
  if (const std::string reason = cuda::unavailable_reason(); !reason.empty()) {
    throw NoDeviceError(fmt::format(
        "gemmforge tune measures kernels on a GPU, and {}; nothing was written. Run it on a machine with a "
        "GPU, then copy the results here with gemmforge export / import",
        reason));
  }
  const int ordinal = cuda::find_device(o.device);

  db::Database database = db::Database::open(o.db.empty() ? db::Database::default_path() : o.db);
  if (o.from_misses) {
    const std::vector<KernelProblem> missed = problems_from_misses(database, ordinal);
    if (missed.empty() && problems.empty()) {
      fmt::print("No misses recorded for this GPU in {}: nothing to tune.\n", database.path());
      return 0;
    }
    problems.insert(problems.end(), missed.begin(), missed.end());
  }

  tuner::TuneOptions options;
  options.problems = std::move(problems);
  options.templates = o.templates;
  options.pins = pins;
  options.strategy = o.strategy;
  options.seed = o.seed;
  options.max_evals = o.max_evals;
  options.time_s = o.time_s;
  options.error_bound = o.error_bound;
  options.allow_spills = o.allow_spills;
  options.vendor_candidate = !o.no_vendor;
  options.timeout_s = o.timeout_s;
  options.quiet = o.quiet;
  options.compile_threads = o.threads;
  options.batch = o.batch;
  options.command = command_line();
  options.worker.device = ordinal;
  const tuner::TuneReport report = tuner::tune(database, options);
  if (o.json) {
    fmt::print("{}\n", summary_json(report).dump(2));
  } else {
    print_summary(report);
  }
  return 0;
}

Command register_tune(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Find the fastest correct config of each problem on a GPU and record every trial in the database");
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--shape", o->shapes, "Problem MxNxK (repeatable)");
  cmd->add_option("--shapes", o->shapes_file,
                  "File of shapes: one \"M N K [layout] [order]\" per line, # starts a comment");
  cmd->add_option("--layout", o->layout, "op(A) op(B): nn, nt, tn or tt")->capture_default_str();
  cmd->add_option("--order", o->order, "Storage order: row or col")->capture_default_str();
  cmd->add_option(
         "--dtype", o->dtype,
         "Operand type f32, f16 or bf16, with '>f32' for an FP32 C (bf16>f32); verified against cuBLAS "
         "GemmEx with FP32 accumulation")
      ->capture_default_str();
  cmd->add_option("--align", o->align,
                  "Vector width in elements (1, 2 or 4) of A, B and C, e.g. 4,4,1: the tuner picks leading "
                  "dimensions that give exactly these (default: those of tight leading dimensions)");
  cmd->add_flag("--print-problems", o->print_problems,
                "Print the canonical problems that would be tuned, one per line, and exit (needs no GPU)");
  cmd->add_option("--strategy", o->strategy, "exhaustive, random or guided")->capture_default_str();
  cmd->add_option("--max-evals", o->max_evals, "Evaluations per problem, stored ones included (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--time", o->time_s, "Seconds of search per problem (0: no limit)")->capture_default_str();
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_option("--template", o->templates, "Tune only this template (repeatable)");
  cmd->add_option("--pin", o->pins,
                  "Fix a parameter in the templates that have it, e.g. --pin BK=8 (repeatable)");
  cmd->add_option("--seed", o->seed, "Seed of the strategy and of the random operands")
      ->capture_default_str();
  cmd->add_flag("--allow-spills", o->allow_spills,
                "Measure configs that spill registers instead of skipping them");
  cmd->add_flag("--no-vendor", o->no_vendor, "Do not record cuBLAS's time of each problem as a candidate");
  cmd->add_flag("--quiet", o->quiet, "No progress line (for scripts)");
  cmd->add_flag("--json", o->json, "Print the summary as JSON");
  cmd->add_flag("--from-misses", o->from_misses,
                "Also tune the problems served untuned on this GPU (misses table)");
  cmd->add_option("--error-bound", o->error_bound, "Relative Frobenius error allowed against cuBLAS")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds before a candidate counts as hung (0: from the cuBLAS time)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "NVRTC compile threads (0: one per core but one)")
      ->capture_default_str();
  cmd->add_option(
         "--batch", o->batch,
         "Candidates proposed per search step, compiled together (0: one per compile thread, 4 to 16)")
      ->capture_default_str();
  return {cmd, [o] { return run_tune(*o); }};
}

}  // namespace

static const bool registered = register_command(30, register_tune);

}  // namespace gemmforge::cli
