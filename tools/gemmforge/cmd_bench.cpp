// `gemmforge bench`: gemmforge through its public API, exactly as an application calls it, next to cuBLAS
// SGEMM on the same buffers, timed the same way in the same process (CUDA events, warm-up, median of
// repetitions, L2 flushed before each), results checked against each other. Two gemmforge runtimes: one as
// an application gets it (cuBLAS serving where it is faster, reported as such) and one of generated
// kernels only, so that no cuBLAS time is counted as a generated kernel's. A table with both geometric
// means, optionally JSON, CSV and an SVG plot of the served ratio per problem.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "cuda/cublas_handle.hpp"
#include "cuda/device.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/stream.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/gemmforge.hpp"
#include "rtc/utility_kernels.hpp"
#include "svg_plot.hpp"
#include "tuner/timing.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::cli {
namespace {

struct BenchOptions {
  std::string shapes_file;
  std::vector<std::string> shapes;
  std::string layout = "nn";
  std::string order = "row";
  std::string device;
  std::string db;
  bool tune_missing = false;
  bool no_vendor = false;
  double tune_time_s = 120;
  double error_bound = 1e-5;
  double budget_ms = 200;
  bool json = false;
  std::string csv;
  std::string plot;
};

// One problem of the benchmark as an application calls it.
struct BenchProblem {
  int64_t m = 0, n = 0, k = 0;
  Op op_a = Op::kN;
  Op op_b = Op::kN;
  Order order = Order::kRowMajor;
  std::string layout() const {
    return fmt::format("{}{}", op_a == Op::kT ? 't' : 'n', op_b == Op::kT ? 't' : 'n');
  }
  /// "4096x4096x4096 nt row".
  std::string label() const {
    return fmt::format("{}x{}x{} {} {}", m, n, k, layout(), order == Order::kRowMajor ? "row" : "col");
  }
};

struct BenchRow {
  std::string shape;
  PlanInfo plan;  ///< what serves the problem
  tuner::Timing served;
  PlanInfo generated_plan;  ///< the generated kernel alone (the same as plan unless cuBLAS serves)
  tuner::Timing generated;
  tuner::Timing cublas;
  rtc::Comparison served_check;
  rtc::Comparison generated_check;
  double flops = 0;
  double tflops(const tuner::Timing& t) const { return flops / t.median_ms / 1e9; }
  double served_ratio() const { return cublas.median_ms / served.median_ms; }
  double generated_ratio() const { return cublas.median_ms / generated.median_ms; }
  bool vendor() const { return plan.level == PlanLevel::kVendor; }
};

// The operands of one problem in the user's storage order with the tightest leading dimensions.
struct Operands {
  GemmCall call;
  cuda::DeviceBuffer a, b, c, reference;
};

Operands make_operands(int64_t m, int64_t n, int64_t k, Op op_a, Op op_b, Order order,
                       const rtc::UtilityKernels& utilities, cudaStream_t stream) {
  Operands o;
  GemmCall& call = o.call;
  call.order = order, call.op_a = op_a, call.op_b = op_b, call.m = m, call.n = n, call.k = k;
  call.alpha = 1.0f, call.beta = 0.0f;
  const bool ta = op_a == Op::kT;
  const bool tb = op_b == Op::kT;
  auto extent = [&](int64_t rows, int64_t cols) {
    const int64_t ld = min_leading_dimension(order, rows, cols);
    const int64_t lines = order == Order::kRowMajor ? rows : cols;
    return std::pair{ld, std::max<int64_t>(1, ld * lines)};
  };
  const auto [lda, a_elements] = extent(ta ? k : m, ta ? m : k);
  const auto [ldb, b_elements] = extent(tb ? n : k, tb ? k : n);
  const auto [ldc, c_elements] = extent(m, n);
  call.lda = lda, call.ldb = ldb, call.ldc = ldc;
  o.a = cuda::DeviceBuffer(a_elements * sizeof(float));
  o.b = cuda::DeviceBuffer(b_elements * sizeof(float));
  o.c = cuda::DeviceBuffer(c_elements * sizeof(float));
  o.reference = cuda::DeviceBuffer(c_elements * sizeof(float));
  utilities.fill_uniform(o.a.as<float>(), 1, a_elements, 0, 11, -1.0f, 1.0f, stream);
  utilities.fill_uniform(o.b.as<float>(), 1, b_elements, 0, 12, -1.0f, 1.0f, stream);
  call.a = o.a.data(), call.b = o.b.data(), call.c = o.c.data();
  return o;
}

void tune_missing(const BenchOptions& o, const std::vector<BenchProblem>& problems, int ordinal) {
  RuntimeOptions options;
  options.database_path = o.db;
  options.device = ordinal;
  options.record_misses = false;
  const Runtime runtime(options);
  tuner::TuneOptions tune;
  for (const BenchProblem& p : problems) {
    GemmShape shape;
    shape.m = p.m, shape.n = p.n, shape.k = p.k;
    shape.order = p.order, shape.op_a = p.op_a, shape.op_b = p.op_b;
    if (runtime.query(shape).level == PlanLevel::kExact) continue;
    tune.problems.push_back(
        make_problem(p.m, p.n, p.k, p.layout(), p.order == Order::kRowMajor ? "row" : "col"));
  }
  if (tune.problems.empty()) return;
  fmt::print(stderr, "Tuning {} problem(s) without an exact result first ({:.0f} s each at most).\n",
             tune.problems.size(), o.tune_time_s);
  tune.time_s = o.tune_time_s;
  tune.worker.device = ordinal;
  tune.command = "gemmforge bench --tune-missing";
  db::Database database = db::Database::open(runtime.database_path());
  tuner::tune(database, tune);
}

constexpr int kRounds = 3;  // turns each contender takes

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A runtime as `bench` uses it: cuBLAS serving where it is faster, or generated kernels only.
RuntimeOptions runtime_options(const BenchOptions& o, int ordinal, bool vendor) {
  RuntimeOptions options;
  options.database_path = o.db;
  options.device = ordinal;
  options.record_misses = false;  // a benchmark is not an application's workload
  options.use_vendor = vendor;
  return options;
}

std::vector<BenchRow> measure(const BenchOptions& o, const std::vector<BenchProblem>& problems, int ordinal) {
  Runtime served(runtime_options(o, ordinal, !o.no_vendor));
  Runtime generated(runtime_options(o, ordinal, false));
  cuda::Stream stream;
  cuda::CublasHandle cublas;
  cublas.set_stream(stream.get());
  const rtc::UtilityKernels utilities;
  tuner::L2Flusher flusher;
  tuner::TimingOptions timing;
  timing.budget_ms = o.budget_ms / kRounds;

  std::vector<BenchRow> rows;
  for (const BenchProblem& p : problems) {
    Operands operands = make_operands(p.m, p.n, p.k, p.op_a, p.op_b, p.order, utilities, stream.get());
    const GemmCall& call = operands.call;
    BenchRow row;
    row.shape = p.label();
    row.flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    GemmShape shape;
    shape.op_a = p.op_a, shape.op_b = p.op_b, shape.m = p.m, shape.n = p.n, shape.k = p.k;
    shape.lda = call.lda, shape.ldb = call.ldb, shape.ldc = call.ldc, shape.order = p.order;
    const auto* a = static_cast<const float*>(call.a);
    const auto* b = static_cast<const float*>(call.b);
    auto* c = static_cast<float*>(call.c);
    const int64_t lines = p.order == Order::kRowMajor ? call.m : call.n;
    const int64_t contiguous = p.order == Order::kRowMajor ? call.n : call.m;
    auto run = [&](Runtime& runtime, cudaStream_t s) {
      runtime.gemm(p.op_a, p.op_b, call.m, call.n, call.k, 1.0f, a, call.lda, b, call.ldb, 0.0f, c, call.ldc,
                   p.order, s);
    };
    // One call builds the plan; kernels compiling in the background are waited for, as after any warm-up.
    auto prepare = [&](Runtime& runtime, PlanInfo& plan, rtc::Comparison& check) {
      run(runtime, stream.get());
      runtime.wait_for_compiles();
      plan = runtime.query(shape);
      run(runtime, stream.get());
      check = utilities.compare(c, call.ldc, operands.reference.as<float>(), call.ldc, lines, contiguous,
                                stream.get());
    };
    KernelCall reference = canonicalize(call);
    reference.c = operands.reference.data();
    cublas.sgemm(reference);
    prepare(served, row.plan, row.served_check);
    if (row.vendor()) prepare(generated, row.generated_plan, row.generated_check);
    // The contenders take turns, a share of the budget each, so that a drift of the clocks during the
    // benchmark weighs on all of them alike; each time is the median of their rounds' medians.
    std::vector<double> served_ms, generated_ms, cublas_ms;
    for (int round = 0; round < kRounds; ++round) {
      served_ms.push_back(
          tuner::time_launches([&](cudaStream_t s) { run(served, s); }, stream.get(), timing, flusher)
              .median_ms);
      if (row.vendor()) {
        generated_ms.push_back(
            tuner::time_launches([&](cudaStream_t s) { run(generated, s); }, stream.get(), timing, flusher)
                .median_ms);
      }
      cublas_ms.push_back(
          tuner::time_launches([&](cudaStream_t) { cublas.sgemm(reference); }, stream.get(), timing, flusher)
              .median_ms);
    }
    row.served.median_ms = median(served_ms);
    row.cublas.median_ms = median(cublas_ms);
    if (row.vendor()) {
      row.generated.median_ms = median(generated_ms);
    } else {
      row.generated_plan = row.plan, row.generated = row.served, row.generated_check = row.served_check;
    }
    rows.push_back(row);
    if (!o.json) {
      fmt::print(stderr, "  {:<28} {:>7.2f} TFLOP/s ({}), generated {:>7.2f}, cuBLAS {:>7.2f} TFLOP/s\n",
                 row.shape, row.tflops(row.served), to_string(row.plan.level), row.tflops(row.generated),
                 row.tflops(row.cublas));
    }
  }
  return rows;
}

template <typename Ratio>
double geometric_mean(const std::vector<BenchRow>& rows, Ratio&& ratio) {
  double log_sum = 0;
  for (const BenchRow& r : rows) log_sum += std::log(ratio(r));
  return rows.empty() ? 0 : std::exp(log_sum / static_cast<double>(rows.size()));
}

struct Summary {
  double served = 0;     ///< geometric mean of the served ratio
  double generated = 0;  ///< ... of the generated kernels' ratio
  size_t vendor_rows = 0;
};

Summary summarize(const std::vector<BenchRow>& rows) {
  Summary s;
  s.served = geometric_mean(rows, [](const BenchRow& r) { return r.served_ratio(); });
  s.generated = geometric_mean(rows, [](const BenchRow& r) { return r.generated_ratio(); });
  for (const BenchRow& r : rows) s.vendor_rows += r.vendor() ? 1 : 0;
  return s;
}

nlohmann::json to_json(const DeviceInfo& device, const BenchOptions& o, const std::vector<BenchRow>& rows,
                       const Summary& summary) {
  nlohmann::json list = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    list.push_back(
        {{"shape", r.shape},
         {"level", to_string(r.plan.level)},
         {"served_by", r.vendor() ? "cuBLAS" : r.plan.template_name},
         {"served_ms", r.served.median_ms},
         {"served_tflops", r.tflops(r.served)},
         {"served_ratio", r.served_ratio()},
         {"template", r.generated_plan.template_name},
         {"config", r.generated_plan.config},
         {"generated_level", to_string(r.generated_plan.level)},
         {"generated_ms", r.generated.median_ms},
         {"generated_tflops", r.tflops(r.generated)},
         {"generated_ratio", r.generated_ratio()},
         {"cublas_ms", r.cublas.median_ms},
         {"cublas_tflops", r.tflops(r.cublas)},
         {"rel_error", r.generated_check.rel_error},
         {"correct", r.served_check.passes(o.error_bound) && r.generated_check.passes(o.error_bound)}});
  }
  return {{"device", device.name},
          {"uuid", device.uuid},
          {"clock_khz", device.clock_khz},
          {"vendor", !o.no_vendor},
          {"results", list},
          {"geomean_served_ratio", summary.served},
          {"geomean_generated_ratio", summary.generated},
          {"vendor_rows", summary.vendor_rows}};
}

void print_table(const DeviceInfo& device, const std::vector<BenchRow>& rows, const Summary& summary,
                 double error_bound) {
  fmt::print("gemmforge vs cuBLAS SGEMM on {} (median of timed launches, L2 flushed)\n", device.name);
  fmt::print(
      "served: what an application gets (cuBLAS where gemmforge serves it, level vendor); generated: "
      "gemmforge's own kernel\n");
  fmt::print("{:<28} {:<7} {:<13} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9}\n", "problem", "level",
             "served by", "served", "generated", "cuBLAS", "gen ms", "served", "gen", "rel.err");
  fmt::print("{:<28} {:<7} {:<13} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>9}\n", "", "", "", "TFLOP/s",
             "TFLOP/s", "TFLOP/s", "", "ratio", "ratio", "");
  for (const BenchRow& r : rows) {
    const bool correct = r.served_check.passes(error_bound) && r.generated_check.passes(error_bound);
    fmt::print("{:<28} {:<7} {:<13} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.4f} {:>8.3f} {:>8.3f} {:>9.2e}{}\n",
               r.shape, to_string(r.plan.level), r.vendor() ? "cuBLAS" : r.plan.template_name,
               r.tflops(r.served), r.tflops(r.generated), r.tflops(r.cublas), r.generated.median_ms,
               r.served_ratio(), r.generated_ratio(), r.generated_check.rel_error, correct ? "" : "  WRONG");
  }
  fmt::print(
      "geometric mean over {} problem(s): served {:.3f} ({} served by cuBLAS), generated kernels only "
      "{:.3f}\n",
      rows.size(), summary.served, summary.vendor_rows, summary.generated);
  fmt::print("generated configs:\n");
  for (const BenchRow& r : rows) {
    fmt::print("  {:<28} {} {} ({})\n", r.shape, r.generated_plan.template_name, r.generated_plan.config,
               to_string(r.generated_plan.level));
  }
}

void write_csv(const std::string& path, const std::vector<BenchRow>& rows) {
  std::ofstream out(path);
  out << "problem,level,served_by,served_ms,served_tflops,served_ratio,template,config,generated_ms,"
         "generated_tflops,generated_ratio,cublas_ms,cublas_tflops,rel_error\n";
  for (const BenchRow& r : rows) {
    out << fmt::format("{},{},{},{:.6f},{:.3f},{:.4f},{},\"{}\",{:.6f},{:.3f},{:.4f},{:.6f},{:.3f},{:.3e}\n",
                       r.shape, to_string(r.plan.level), r.vendor() ? "cuBLAS" : r.plan.template_name,
                       r.served.median_ms, r.tflops(r.served), r.served_ratio(),
                       r.generated_plan.template_name, r.generated_plan.config, r.generated.median_ms,
                       r.tflops(r.generated), r.generated_ratio(), r.cublas.median_ms, r.tflops(r.cublas),
                       r.generated_check.rel_error);
  }
  if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", path));
}

int run_bench(const BenchOptions& o) {
  if (o.layout.size() != 2) throw InvalidArgumentError("--layout must be nn, nt, tn or tt");
  std::vector<BenchProblem> problems;
  for (const ShapeEntry& s : collect_shapes(o.shapes, o.shapes_file)) {
    BenchProblem p;
    p.m = s.m, p.n = s.n, p.k = s.k;
    const std::string layout = s.layout.empty() ? o.layout : s.layout;
    p.op_a = parse_op(layout[0]);
    p.op_b = parse_op(layout[1]);
    p.order = parse_order(s.order.empty() ? o.order : s.order);
    problems.push_back(p);
  }
  if (problems.empty()) throw InvalidArgumentError("give --shapes FILE or --shape MxNxK");
  const int ordinal = cuda::find_device(o.device);
  cuda::DeviceGuard guard(ordinal);
  const DeviceInfo device = cuda::query_device(ordinal);
  if (o.tune_missing) tune_missing(o, problems, ordinal);

  const std::vector<BenchRow> rows = measure(o, problems, ordinal);
  const Summary summary = summarize(rows);
  if (o.json) {
    fmt::print("{}\n", to_json(device, o, rows, summary).dump(2));
  } else {
    print_table(device, rows, summary, o.error_bound);
  }
  if (!o.csv.empty()) write_csv(o.csv, rows);
  if (!o.plot.empty()) {
    std::vector<RatioBar> bars;
    for (const BenchRow& r : rows)
      bars.push_back({r.shape + (r.vendor() ? " (cuBLAS)" : ""), r.served_ratio()});
    std::ofstream out(o.plot);
    out << ratio_chart_svg(fmt::format("gemmforge (served) / cuBLAS SGEMM speed on {}", device.name), bars,
                           summary.served);
    if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", o.plot));
  }
  for (const BenchRow& r : rows) {
    for (const rtc::Comparison* check : {&r.served_check, &r.generated_check}) {
      if (!check->passes(o.error_bound)) {
        throw InternalError(
            fmt::format("gemmforge's result for {} differs from cuBLAS (relative error {:.3g})", r.shape,
                        check->rel_error));
      }
    }
  }
  return 0;
}

Command register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Time gemmforge (public API) and cuBLAS side by side");
  cmd->add_option("--shapes", o->shapes_file,
                  "File of problems, one 'M N K [layout] [order]' per line ('#' comments)");
  cmd->add_option("--shape", o->shapes, "Problem MxNxK (repeatable)");
  cmd->add_option("--layout", o->layout, "op(A) op(B): nn, nt, tn or tt")->capture_default_str();
  cmd->add_option("--order", o->order, "Storage order: row or col")->capture_default_str();
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_flag("--tune-missing", o->tune_missing, "Tune problems without an exact result first");
  cmd->add_flag("--no-vendor", o->no_vendor, "Serve generated kernels only (cuBLAS never serves a call)");
  cmd->add_option("--tune-time", o->tune_time_s, "Seconds of tuning per missing problem")
      ->capture_default_str();
  cmd->add_option("--budget-ms", o->budget_ms, "Timed milliseconds per contender and problem")
      ->capture_default_str();
  cmd->add_option("--error-bound", o->error_bound, "Relative Frobenius error tolerated against cuBLAS")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON instead of the table");
  cmd->add_option("--csv", o->csv, "Also write the results as CSV to this file");
  cmd->add_option("--plot", o->plot, "Also write an SVG bar chart of the ratio per problem to this file");
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace

static const bool registered = register_command(50, register_bench);

}  // namespace gemmforge::cli
