// `gemmforge bench`: gemmforge through its public API, exactly as an application calls it, next to cuBLAS
// SGEMM on the same buffers, timed the same way in the same process (CUDA events, warm-up, median of
// repetitions, L2 flushed before each), results checked against each other; a table with the geometric
// mean, optionally JSON, CSV and an SVG plot of the ratio per problem.
#include <fmt/format.h>

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
  double tune_time_s = 120;
  double error_bound = 1e-5;
  double budget_ms = 200;
  bool json = false;
  std::string csv;
  std::string plot;
};

struct BenchRow {
  std::string shape;
  PlanInfo plan;
  tuner::Timing gemmforge;
  tuner::Timing cublas;
  rtc::Comparison check;
  double flops = 0;
  double gemmforge_tflops() const { return flops / gemmforge.median_ms / 1e9; }
  double cublas_tflops() const { return flops / cublas.median_ms / 1e9; }
  double ratio() const { return cublas.median_ms / gemmforge.median_ms; }
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

void tune_missing(const BenchOptions& o, const std::vector<std::array<int64_t, 3>>& shapes, int ordinal) {
  RuntimeOptions options;
  options.database_path = o.db;
  options.device = ordinal;
  options.record_misses = false;
  const Runtime runtime(options);
  tuner::TuneOptions tune;
  for (const auto& s : shapes) {
    GemmShape shape;
    shape.m = s[0], shape.n = s[1], shape.k = s[2];
    shape.order = parse_order(o.order);
    shape.op_a = parse_op(o.layout[0]);
    shape.op_b = parse_op(o.layout[1]);
    if (runtime.query(shape).level == PlanLevel::kExact) continue;
    tune.problems.push_back(make_problem(s[0], s[1], s[2], o.layout, o.order));
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

std::vector<BenchRow> measure(const BenchOptions& o, const std::vector<std::array<int64_t, 3>>& shapes,
                              int ordinal) {
  RuntimeOptions options;
  options.database_path = o.db;
  options.device = ordinal;
  options.record_misses = false;  // a benchmark is not an application's workload
  Runtime runtime(options);
  cuda::Stream stream;
  cuda::CublasHandle cublas;
  cublas.set_stream(stream.get());
  const rtc::UtilityKernels utilities;
  tuner::L2Flusher flusher;
  tuner::TimingOptions timing;
  timing.budget_ms = o.budget_ms;
  const Order order = parse_order(o.order);
  const Op op_a = parse_op(o.layout[0]);
  const Op op_b = parse_op(o.layout[1]);

  std::vector<BenchRow> rows;
  for (const auto& s : shapes) {
    Operands operands = make_operands(s[0], s[1], s[2], op_a, op_b, order, utilities, stream.get());
    const GemmCall& call = operands.call;
    BenchRow row;
    row.shape = fmt::format("{}x{}x{}", s[0], s[1], s[2]);
    row.flops = 2.0 * static_cast<double>(s[0]) * static_cast<double>(s[1]) * static_cast<double>(s[2]);
    GemmShape shape;
    shape.op_a = op_a, shape.op_b = op_b, shape.m = s[0], shape.n = s[1], shape.k = s[2];
    shape.lda = call.lda, shape.ldb = call.ldb, shape.ldc = call.ldc, shape.order = order;
    row.plan = runtime.query(shape);

    const auto* a = static_cast<const float*>(call.a);
    const auto* b = static_cast<const float*>(call.b);
    auto* c = static_cast<float*>(call.c);
    row.gemmforge = tuner::time_launches(
        [&](cudaStream_t s_) {
          runtime.gemm(op_a, op_b, call.m, call.n, call.k, 1.0f, a, call.lda, b, call.ldb, 0.0f, c, call.ldc,
                       order, s_);
        },
        stream.get(), timing, flusher);
    KernelCall reference = canonicalize(call);
    reference.c = operands.reference.data();
    row.cublas =
        tuner::time_launches([&](cudaStream_t) { cublas.sgemm(reference); }, stream.get(), timing, flusher);
    const int64_t lines = order == Order::kRowMajor ? call.m : call.n;
    const int64_t contiguous = order == Order::kRowMajor ? call.n : call.m;
    row.check = utilities.compare(c, call.ldc, operands.reference.as<float>(), call.ldc, lines, contiguous,
                                  stream.get());
    rows.push_back(row);
    if (!o.json) {
      fmt::print(stderr, "  {:<18} {:>7.2f} TFLOP/s vs cuBLAS {:>7.2f} TFLOP/s\n", row.shape,
                 row.gemmforge_tflops(), row.cublas_tflops());
    }
  }
  return rows;
}

double geometric_mean(const std::vector<BenchRow>& rows) {
  double log_sum = 0;
  for (const BenchRow& r : rows) log_sum += std::log(r.ratio());
  return rows.empty() ? 0 : std::exp(log_sum / static_cast<double>(rows.size()));
}

nlohmann::json to_json(const DeviceInfo& device, const BenchOptions& o, const std::vector<BenchRow>& rows,
                       double geomean) {
  nlohmann::json list = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    nlohmann::json row = {{"shape", r.shape},
                          {"template", r.plan.template_name},
                          {"config", r.plan.config},
                          {"level", to_string(r.plan.level)},
                          {"gemmforge_ms", r.gemmforge.median_ms},
                          {"gemmforge_tflops", r.gemmforge_tflops()},
                          {"cublas_ms", r.cublas.median_ms},
                          {"cublas_tflops", r.cublas_tflops()},
                          {"ratio", r.ratio()},
                          {"rel_error", r.check.rel_error},
                          {"correct", r.check.passes(o.error_bound)}};
    list.push_back(row);
  }
  return {{"device", device.name},   {"uuid", device.uuid}, {"clock_khz", device.clock_khz},
          {"layout", o.layout},      {"order", o.order},    {"results", list},
          {"geomean_ratio", geomean}};
}

void print_table(const DeviceInfo& device, const BenchOptions& o, const std::vector<BenchRow>& rows,
                 double geomean) {
  fmt::print("gemmforge vs cuBLAS SGEMM on {} ({}-major {}; median of timed launches, L2 flushed)\n",
             device.name, o.order, o.layout);
  fmt::print("{:<18} {:<14} {:<13} {:>9} {:>9} {:>9} {:>9} {:>7} {:>9}\n", "shape", "level", "template",
             "gf ms", "gf TF/s", "cb ms", "cb TF/s", "ratio", "rel.err");
  for (const BenchRow& r : rows) {
    fmt::print("{:<18} {:<14} {:<13} {:>9.4f} {:>9.2f} {:>9.4f} {:>9.2f} {:>7.3f} {:>9.2e}{}\n", r.shape,
               to_string(r.plan.level), r.plan.template_name, r.gemmforge.median_ms, r.gemmforge_tflops(),
               r.cublas.median_ms, r.cublas_tflops(), r.ratio(), r.check.rel_error,
               r.check.passes(o.error_bound) ? "" : "  WRONG");
  }
  fmt::print("geometric mean of the ratio: {:.3f} over {} problem(s)\n", geomean, rows.size());
  fmt::print("configs:\n");
  for (const BenchRow& r : rows) fmt::print("  {:<18} {}\n", r.shape, r.plan.config);
}

void write_csv(const std::string& path, const std::vector<BenchRow>& rows) {
  std::ofstream out(path);
  out << "shape,level,template,config,gemmforge_ms,gemmforge_tflops,cublas_ms,cublas_tflops,ratio,rel_"
         "error\n";
  for (const BenchRow& r : rows) {
    out << fmt::format("{},{},{},\"{}\",{:.6f},{:.3f},{:.6f},{:.3f},{:.4f},{:.3e}\n", r.shape,
                       to_string(r.plan.level), r.plan.template_name, r.plan.config, r.gemmforge.median_ms,
                       r.gemmforge_tflops(), r.cublas.median_ms, r.cublas_tflops(), r.ratio(),
                       r.check.rel_error);
  }
  if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", path));
}

int run_bench(const BenchOptions& o) {
  if (o.layout.size() != 2) throw InvalidArgumentError("--layout must be nn, nt, tn or tt");
  std::vector<std::array<int64_t, 3>> shapes;
  if (!o.shapes_file.empty()) shapes = read_shapes(o.shapes_file);
  for (const std::string& text : o.shapes) {
    std::array<int64_t, 3> s{};
    parse_shape(text, s[0], s[1], s[2]);
    shapes.push_back(s);
  }
  if (shapes.empty()) throw InvalidArgumentError("give --shapes FILE or --shape MxNxK");
  const int ordinal = cuda::find_device(o.device);
  cuda::DeviceGuard guard(ordinal);
  const DeviceInfo device = cuda::query_device(ordinal);
  if (o.tune_missing) tune_missing(o, shapes, ordinal);

  const std::vector<BenchRow> rows = measure(o, shapes, ordinal);
  const double geomean = geometric_mean(rows);
  if (o.json) {
    fmt::print("{}\n", to_json(device, o, rows, geomean).dump(2));
  } else {
    print_table(device, o, rows, geomean);
  }
  if (!o.csv.empty()) write_csv(o.csv, rows);
  if (!o.plot.empty()) {
    std::vector<RatioBar> bars;
    for (const BenchRow& r : rows) bars.push_back({r.shape, r.ratio()});
    std::ofstream out(o.plot);
    out << ratio_chart_svg(fmt::format("gemmforge / cuBLAS SGEMM speed on {}", device.name), bars, geomean);
    if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", o.plot));
  }
  for (const BenchRow& r : rows) {
    if (!r.check.passes(o.error_bound)) {
      throw InternalError(fmt::format("gemmforge's result for {} differs from cuBLAS (relative error {:.3g})",
                                      r.shape, r.check.rel_error));
    }
  }
  return 0;
}

Command register_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Time gemmforge (public API) and cuBLAS side by side");
  cmd->add_option("--shapes", o->shapes_file, "File of problems, one 'M N K' per line ('#' comments)");
  cmd->add_option("--shape", o->shapes, "Problem MxNxK (repeatable)");
  cmd->add_option("--layout", o->layout, "op(A) op(B): nn, nt, tn or tt")->capture_default_str();
  cmd->add_option("--order", o->order, "Storage order: row or col")->capture_default_str();
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_flag("--tune-missing", o->tune_missing, "Tune problems without an exact result first");
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
