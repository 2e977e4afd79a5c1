// `gemmforge bench`: gemmforge through its public API, exactly as an application calls it, next to cuBLAS
// SGEMM on the same buffers, timed the same way in the same process (CUDA events, warm-up, median of
// repetitions, L2 flushed before each), results checked against each other. Two gemmforge runtimes: one as
// an application gets it (cuBLAS serving where it is faster, reported as such) and one of generated
// kernels only, so that no cuBLAS time is counted as a generated kernel's. Beside them, timed the same way,
// the problem's memory floor: one kernel reading A and B once and writing C at the device's streaming rate,
// which no GEMM kernel can beat, and the ceiling it puts on any kernel's ratio to cuBLAS. A table with both
// geometric means, optionally JSON, CSV and an SVG plot of the served ratio per problem. With
// --first-use-tuning it measures tuning at first use instead: the host time per call with and without it, and
// the speed each problem ends at.
#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_common.hpp"
#include "core/dtype.hpp"
#include "core/statistics.hpp"
#include "cuda/check.hpp"
#include "cuda/clock_sampler.hpp"
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
  std::string dtype = "f32";  ///< type name: operands, and '>f32' for an FP32 C
  std::string device;
  std::string db;
  bool tune_missing = false;
  bool no_vendor = false;
  double tune_time_s = 120;
  double error_bound = -1;  ///< negative: verification_tolerance() of the types
  double budget_ms = 200;
  bool json = false;
  std::string csv;
  std::string plot;
  bool first_use = false;
  double duration_s = 180;
  double baseline_s = 30;
  size_t tune_budget = 24;
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
  tuner::Timing floor;  ///< reading A and B and writing C once (UtilityKernels::stream_floor)
  rtc::Comparison served_check;
  rtc::Comparison generated_check;
  /// The mean SM clock over the generated kernel's and cuBLAS's turns, where NVML could sample it.
  std::optional<double> generated_mhz, cublas_mhz;
  double flops = 0;
  double tflops(const tuner::Timing& t) const { return flops / t.median_ms / 1e9; }
  double served_ratio() const { return cublas.median_ms / served.median_ms; }
  double generated_ratio() const { return cublas.median_ms / generated.median_ms; }
  /// The most any kernel can be faster than cuBLAS on the problem: no kernel moves less than the floor.
  double ratio_ceiling() const { return cublas.median_ms / floor.median_ms; }
  bool vendor() const { return plan.level == PlanLevel::kVendor; }
};

// The operands of one problem in the user's storage order with the tightest leading dimensions.
struct Operands {
  GemmCall call;
  cuda::DeviceBuffer a, b, c, reference;
};

// Random values in [-1, 1) rounded to `dtype`, over `count` elements.
void fill_random(const rtc::UtilityKernels& utilities, void* data, int64_t count, uint64_t seed, Dtype dtype,
                 cudaStream_t stream) {
  if (element_bytes(dtype) == 4) {
    utilities.fill_uniform(static_cast<float*>(data), 1, count, 0, seed, -1.0f, 1.0f, stream);
    return;
  }
  cuda::DeviceBuffer staging(count * sizeof(float));
  utilities.fill_uniform(staging.as<float>(), 1, count, 0, seed, -1.0f, 1.0f, stream);
  utilities.convert(staging.as<float>(), data, count, dtype, stream);
  GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the staging buffer goes
}

Operands make_operands(int64_t m, int64_t n, int64_t k, Op op_a, Op op_b, Order order, Dtype dtype,
                       Dtype c_dtype, const rtc::UtilityKernels& utilities, cudaStream_t stream) {
  Operands o;
  GemmCall& call = o.call;
  call.dtype = dtype, call.c_dtype = c_dtype;
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
  const int64_t in_bytes = element_bytes(dtype), out_bytes = element_bytes(c_dtype);
  o.a = cuda::DeviceBuffer(a_elements * in_bytes);
  o.b = cuda::DeviceBuffer(b_elements * in_bytes);
  o.c = cuda::DeviceBuffer(c_elements * out_bytes);
  o.reference = cuda::DeviceBuffer(c_elements * out_bytes);
  fill_random(utilities, o.a.data(), a_elements, 11, dtype, stream);
  fill_random(utilities, o.b.data(), b_elements, 12, dtype, stream);
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
    Dtype c_dtype;
    parse_type_name(o.dtype, shape.dtype, c_dtype);
    shape.c_dtype = c_dtype;
    if (runtime.query(shape).level == PlanLevel::kExact) continue;
    tune.problems.push_back(
        make_problem(p.m, p.n, p.k, p.layout(), p.order == Order::kRowMajor ? "row" : "col", o.dtype));
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

// A contender's turn first runs it for this long (at most this many launches), so that the clocks settle
// under the power it draws.
constexpr double kSettleMs = 25;
constexpr int kSettleLaunches = 200;

// A runtime as `bench` uses it: cuBLAS serving where it is faster, or generated kernels only.
RuntimeOptions runtime_options(const BenchOptions& o, int ordinal, bool vendor) {
  RuntimeOptions options;
  options.database_path = o.db;
  options.device = ordinal;
  options.record_misses = false;  // a benchmark is not an application's workload
  options.use_vendor = vendor;
  return options;
}

std::vector<BenchRow> measure(const BenchOptions& o, const std::vector<BenchProblem>& problems,
                              const DeviceInfo& device, int ordinal) {
  // The clocks each contender ran at: on a power-limited GPU a kernel that draws more runs slower.
  const cuda::ClockSampler clocks(device.uuid);
  if (!clocks.sampling() && !o.json) fmt::print(stderr, "SM clocks not shown: {}\n", clocks.reason());
  Runtime served(runtime_options(o, ordinal, !o.no_vendor));
  Runtime generated(runtime_options(o, ordinal, false));
  cuda::Stream stream;
  cuda::CublasHandle cublas;
  cublas.set_stream(stream.get());
  const rtc::UtilityKernels utilities;
  tuner::L2Flusher flusher;
  tuner::TimingOptions turn;  // a contender's turn; its share of the budget is set per problem
  turn.warmup = kSettleLaunches;
  turn.warmup_ms = kSettleMs;
  tuner::TimingOptions floor_timing;
  floor_timing.budget_ms = o.budget_ms;

  Dtype dtype, c_dtype;
  parse_type_name(o.dtype, dtype, c_dtype);
  std::vector<BenchRow> rows;
  for (const BenchProblem& p : problems) {
    Operands operands =
        make_operands(p.m, p.n, p.k, p.op_a, p.op_b, p.order, dtype, c_dtype, utilities, stream.get());
    const GemmCall& call = operands.call;
    BenchRow row;
    row.shape = p.label();
    row.flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    GemmShape shape;
    shape.op_a = p.op_a, shape.op_b = p.op_b, shape.m = p.m, shape.n = p.n, shape.k = p.k;
    shape.lda = call.lda, shape.ldb = call.ldb, shape.ldc = call.ldc, shape.order = p.order;
    shape.dtype = dtype, shape.c_dtype = c_dtype;
    const int64_t lines = p.order == Order::kRowMajor ? call.m : call.n;
    const int64_t contiguous = p.order == Order::kRowMajor ? call.n : call.m;
    auto run = [&](Runtime& runtime, cudaStream_t s) {
      if (dtype == Dtype::kF32) {
        runtime.gemm(p.op_a, p.op_b, call.m, call.n, call.k, 1.0f, static_cast<const float*>(call.a),
                     call.lda, static_cast<const float*>(call.b), call.ldb, 0.0f, static_cast<float*>(call.c),
                     call.ldc, p.order, s);
      } else {
        runtime.gemm_strided_batched(dtype, c_dtype, p.op_a, p.op_b, call.m, call.n, call.k, 1.0f, call.a,
                                     call.lda, 0, call.b, call.ldb, 0, 0.0f, call.c, call.ldc, 0, 1, p.order,
                                     s);
      }
    };
    // One call builds the plan; kernels compiling in the background are waited for, as after any warm-up.
    auto prepare = [&](Runtime& runtime, PlanInfo& plan, rtc::Comparison& check) {
      run(runtime, stream.get());
      runtime.wait_for_compiles();
      plan = runtime.query(shape);
      run(runtime, stream.get());
      check = utilities.compare(call.c, call.ldc, operands.reference.data(), call.ldc, lines, contiguous,
                                c_dtype, stream.get());
    };
    KernelCall reference = canonicalize(call);
    reference.c = operands.reference.data();
    cublas.gemm_ex(reference);
    prepare(served, row.plan, row.served_check);
    if (row.vendor()) prepare(generated, row.generated_plan, row.generated_check);
    // The contenders take turns, a share of the budget each, so that a drift of the clocks during the
    // benchmark weighs on all of them alike, each taking every place in the order once; each time is the
    // median of the contender's rounds. A turn starts with kSettleMs of the contender's own launches: the
    // clocks follow the power a kernel draws, and a compute-bound kernel timed right after a light one
    // runs faster for a while (on an H200, BF16 2048x128256x4096 nt: cuBLAS timed right after the
    // memory floor ran 2.73 ms, after other GEMMs 3.2 to 3.3). The floor, the lightest of all, is timed
    // apart after the rounds.
    struct Contender {
      std::function<void(cudaStream_t)> launch;
      std::vector<double> ms;
      double mhz_sum = 0;  ///< the SM clock's samples over the contender's turns
      size_t mhz_samples = 0;
      std::optional<double> mean_mhz() const {
        if (mhz_samples == 0) return std::nullopt;
        return mhz_sum / static_cast<double>(mhz_samples);
      }
    };
    std::vector<Contender> contenders;
    contenders.push_back({[&](cudaStream_t s) { run(served, s); }, {}});
    if (row.vendor()) contenders.push_back({[&](cudaStream_t s) { run(generated, s); }, {}});
    contenders.push_back({[&](cudaStream_t) { cublas.gemm_ex(reference); }, {}});
    turn.budget_ms = o.budget_ms / static_cast<double>(contenders.size());
    for (size_t round = 0; round < contenders.size(); ++round) {
      for (size_t place = 0; place < contenders.size(); ++place) {
        Contender& c = contenders[(round + place) % contenders.size()];
        const auto start = cuda::SampleClock::now();
        c.ms.push_back(tuner::time_launches(c.launch, stream.get(), turn, flusher).median_ms);
        if (const auto clock = clocks.between(start, cuda::SampleClock::now())) {
          c.mhz_sum += clock->sm_mhz * static_cast<double>(clock->samples);
          c.mhz_samples += clock->samples;
        }
      }
    }
    row.served.median_ms = median(contenders.front().ms);
    row.cublas.median_ms = median(contenders.back().ms);
    row.generated_mhz = contenders[row.vendor() ? 1 : 0].mean_mhz();
    row.cublas_mhz = contenders.back().mean_mhz();
    row.floor = tuner::time_launches(
        [&](cudaStream_t s) {
          utilities.stream_floor(call.a, operands.a.bytes(), call.b, operands.b.bytes(), call.c,
                                 operands.c.bytes(), s);
        },
        stream.get(), floor_timing, flusher);
    if (row.vendor()) {
      row.generated.median_ms = median(contenders[1].ms);
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

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// A mean clock in a column of the table or the CSV: "-" or nothing where NVML could not sample it.
std::string format_mhz(const std::optional<double>& mhz, const char* missing) {
  return mhz ? fmt::format("{:.0f}", *mhz) : std::string(missing);
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
         {"floor_ms", r.floor.median_ms},
         {"ratio_ceiling", r.ratio_ceiling()},
         {"rel_error", r.generated_check.rel_error},
         {"generated_sm_mhz", optional_json(r.generated_mhz)},
         {"cublas_sm_mhz", optional_json(r.cublas_mhz)},
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
                 double error_bound, const std::string& routine) {
  fmt::print("gemmforge vs cuBLAS {} on {} (median of timed launches, L2 flushed)\n", routine, device.name);
  fmt::print(
      "served: what an application gets (cuBLAS where gemmforge serves it, level vendor); generated: "
      "gemmforge's own kernel\n");
  fmt::print(
      "floor: reading A and B and writing C once at the device's streaming rate, timed the same way; "
      "ceiling: cuBLAS's time over the floor, the most any kernel can be faster than cuBLAS; SM MHz: the "
      "mean SM clock over the generated kernel's and cuBLAS's turns\n");
  fmt::print("{:<28} {:<7} {:<13} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}\n",
             "problem", "level", "served by", "served", "generated", "cuBLAS", "gen ms", "floor ms", "served",
             "gen", "ceiling", "gen", "cuBLAS", "rel.err");
  fmt::print("{:<28} {:<7} {:<13} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9}\n", "",
             "", "", "TFLOP/s", "TFLOP/s", "TFLOP/s", "", "", "ratio", "ratio", "", "SM MHz", "SM MHz", "");
  for (const BenchRow& r : rows) {
    const bool correct = r.served_check.passes(error_bound) && r.generated_check.passes(error_bound);
    fmt::print(
        "{:<28} {:<7} {:<13} {:>9.2f} {:>9.2f} {:>9.2f} {:>9.4f} {:>9.4f} {:>8.3f} {:>8.3f} {:>8.2f} {:>6} "
        "{:>6} {:>9.2e}{}\n",
        r.shape, to_string(r.plan.level), r.vendor() ? "cuBLAS" : r.plan.template_name, r.tflops(r.served),
        r.tflops(r.generated), r.tflops(r.cublas), r.generated.median_ms, r.floor.median_ms, r.served_ratio(),
        r.generated_ratio(), r.ratio_ceiling(), format_mhz(r.generated_mhz, "-"),
        format_mhz(r.cublas_mhz, "-"), r.generated_check.rel_error, correct ? "" : "  WRONG");
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
         "generated_tflops,generated_ratio,cublas_ms,cublas_tflops,rel_error,floor_ms,ratio_ceiling,"
         "generated_sm_mhz,cublas_sm_mhz\n";
  for (const BenchRow& r : rows) {
    out << fmt::format(
        "{},{},{},{:.6f},{:.3f},{:.4f},{},\"{}\",{:.6f},{:.3f},{:.4f},{:.6f},{:.3f},{:.3e},{:.6f},{:.3f},"
        "{},{}\n",
        r.shape, to_string(r.plan.level), r.vendor() ? "cuBLAS" : r.plan.template_name, r.served.median_ms,
        r.tflops(r.served), r.served_ratio(), r.generated_plan.template_name, r.generated_plan.config,
        r.generated.median_ms, r.tflops(r.generated), r.generated_ratio(), r.cublas.median_ms,
        r.tflops(r.cublas), r.generated_check.rel_error, r.floor.median_ms, r.ratio_ceiling(),
        format_mhz(r.generated_mhz, ""), format_mhz(r.cublas_mhz, ""));
  }
  if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", path));
}

// --- Tuning at first use, measured (--first-use-tuning) ---

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A fresh folder for the measurement's own database, removed with everything in it.
class FreshFolder {
 public:
  FreshFolder() {
    std::string pattern = (std::filesystem::temp_directory_path() / "gemmforge_first_use_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw InternalError(fmt::format("cannot create the folder {}: {}", pattern, std::strerror(errno)));
    }
    path_ = pattern;
  }
  ~FreshFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  FreshFolder(const FreshFolder&) = delete;
  FreshFolder& operator=(const FreshFolder&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// One problem of the measurement: its operands and everything measured on it.
struct FirstUseCase {
  BenchProblem problem;
  Operands operands;
  KernelCall reference;  ///< cuBLAS's call, writing the reference result
  GemmShape shape;
  double flops = 0;
  std::vector<float> untuned_us;        ///< host time of each call of the runtime without tuning
  std::vector<float> tuning_us;         ///< host time of each call of the runtime tuning at first use
  std::optional<double> tuned_after_s;  ///< seconds into the calls when its tuned plan was first seen
  PlanInfo end_plan;                    ///< what served it when the calls stopped
  bool ended_tuned = false;
  PlanInfo untuned_plan;  ///< timed below: the untuned runtime's plan...
  tuner::Timing untuned;
  rtc::Comparison untuned_check;
  PlanInfo tuned_plan;  ///< ...and, where it ended tuned, the tuned plan a new runtime serves
  tuner::Timing tuned;
  rtc::Comparison tuned_check;
  tuner::Timing cublas;

  double tflops(const tuner::Timing& t) const { return flops / t.median_ms / 1e9; }
  /// The speed the tuning process ended at.
  const tuner::Timing& end() const { return ended_tuned ? tuned : untuned; }
  const PlanInfo& end_timed_plan() const { return ended_tuned ? tuned_plan : untuned_plan; }
};

// The plan rests on a tuned result of the problem itself (also where cuBLAS serves, measured faster).
bool rests_on_tuning(const PlanInfo& plan) {
  return plan.level == PlanLevel::kExact ||
         (!plan.tuned_problem.empty() && plan.tuned_problem == plan.problem);
}

void call(Runtime& runtime, const FirstUseCase& c, cudaStream_t stream) {
  const GemmCall& g = c.operands.call;
  runtime.gemm(g.op_a, g.op_b, g.m, g.n, g.k, 1.0f, static_cast<const float*>(g.a), g.lda,
               static_cast<const float*>(g.b), g.ldb, 0.0f, static_cast<float*>(g.c), g.ldc, g.order, stream);
}

// Calls the problems in turn for `seconds`, timing every call on the host (a call enqueues its launch and
// returns). The stream is synchronized after each round, untimed, so the launch queue never fills and the
// host time is never time spent waiting for it. `between` runs between rounds.
void call_in_turn(Runtime& runtime, std::vector<FirstUseCase>& cases, std::vector<float> FirstUseCase::*times,
                  double seconds, cudaStream_t stream, const std::function<void(double)>& between) {
  const auto start = Clock::now();
  for (double elapsed = 0; elapsed < seconds; elapsed = seconds_since(start)) {
    for (FirstUseCase& c : cases) {
      const auto before = Clock::now();
      call(runtime, c, stream);
      const auto after = Clock::now();
      (c.*times).push_back(std::chrono::duration<float, std::micro>(after - before).count());
    }
    GEMMFORGE_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (between) between(seconds_since(start));
  }
}

// Nearest-rank percentile (q in (0, 1]) of `values`.
double percentile(std::vector<float> values, double q) {
  if (values.empty()) return 0;
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  const size_t index = std::clamp<size_t>(rank, 1, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

std::vector<float> every_call(const std::vector<FirstUseCase>& cases,
                              std::vector<float> FirstUseCase::*times) {
  std::vector<float> all;
  for (const FirstUseCase& c : cases) all.insert(all.end(), (c.*times).begin(), (c.*times).end());
  return all;
}

struct HostSummary {
  double untuned_p50 = 0, untuned_p99 = 0, tuning_p50 = 0, tuning_p99 = 0;
  size_t untuned_calls = 0, tuning_calls = 0;
  double p99_ratio() const { return untuned_p99 > 0 ? tuning_p99 / untuned_p99 : 0; }
};

HostSummary summarize_host(const std::vector<FirstUseCase>& cases) {
  const std::vector<float> untuned = every_call(cases, &FirstUseCase::untuned_us);
  const std::vector<float> tuning = every_call(cases, &FirstUseCase::tuning_us);
  return HostSummary{percentile(untuned, 0.5), percentile(untuned, 0.99),
                     percentile(tuning, 0.5),  percentile(tuning, 0.99),
                     untuned.size(),           tuning.size()};
}

std::string served_by(const PlanInfo& plan) {
  return plan.level == PlanLevel::kVendor ? "cuBLAS" : plan.template_name;
}

void print_first_use(const DeviceInfo& device, const BenchOptions& o, const std::string& database,
                     const std::vector<FirstUseCase>& cases, const RuntimeStats& tunes,
                     const HostSummary& host) {
  fmt::print(
      "Tuning at first use on {}: {} problem(s) called in turn for {:.0f} s, {} evaluations per problem\n",
      device.name, cases.size(), o.duration_s, o.tune_budget);
  fmt::print("database: {}{}\n", database, o.db.empty() ? " (fresh, removed afterwards)" : "");
  fmt::print(
      "level: what served each problem when the calls stopped; tuned at: seconds into the calls when its\n"
      "tuned plan was first seen serving\n");
  fmt::print(
      "TFLOP/s: median of timed launches, L2 flushed; untuned: the plan served before tuning; end: the plan "
      "served when the calls stopped\n");
  fmt::print("host us: host time per call (p50 / p99), without and with tuning at first use\n");
  fmt::print("{:<28} {:<7} {:<13} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>15} {:>15}\n", "problem", "level",
             "served by", "tuned at", "untuned", "end", "cuBLAS", "end /", "end /", "host us untuned",
             "host us tuning");
  fmt::print("{:<28} {:<7} {:<13} {:>8} {:>9} {:>9} {:>9} {:>8} {:>8} {:>15} {:>15}\n", "", "", "", "s",
             "TFLOP/s", "TFLOP/s", "TFLOP/s", "untuned", "cuBLAS", "p50 / p99", "p50 / p99");
  for (const FirstUseCase& c : cases) {
    const bool correct =
        c.untuned_check.passes(o.error_bound) && (!c.ended_tuned || c.tuned_check.passes(o.error_bound));
    fmt::print("{:<28} {:<7} {:<13} {:>8} {:>9.2f} {:>9.2f} {:>9.2f} {:>8.3f} {:>8.3f} {:>15} {:>15}{}\n",
               c.problem.label(), to_string(c.end_plan.level), served_by(c.end_timed_plan()),
               c.tuned_after_s ? fmt::format("{:.1f}", *c.tuned_after_s) : "-", c.tflops(c.untuned),
               c.tflops(c.end()), c.tflops(c.cublas), c.untuned.median_ms / c.end().median_ms,
               c.cublas.median_ms / c.end().median_ms,
               fmt::format("{:.1f} / {:.1f}", percentile(c.untuned_us, 0.5), percentile(c.untuned_us, 0.99)),
               fmt::format("{:.1f} / {:.1f}", percentile(c.tuning_us, 0.5), percentile(c.tuning_us, 0.99)),
               correct ? "" : "  WRONG");
  }
  const size_t tuned = static_cast<size_t>(
      std::count_if(cases.begin(), cases.end(), [](const FirstUseCase& c) { return c.ended_tuned; }));
  fmt::print(
      "\n{} of {} problem(s) ended at their tuned plan; tunes finished {}, failed {}, still queued {} or "
      "running {} when the calls stopped\n",
      tuned, cases.size(), tunes.tunes_finished, tunes.tunes_failed, tunes.tunes_queued, tunes.tunes_running);
  fmt::print(
      "host time per call over every call: p50 {:.1f} us untuned ({} calls), {:.1f} us tuning at first use "
      "({} calls); p99 {:.1f} us untuned, {:.1f} us tuning at first use: {:.2f}x\n",
      host.untuned_p50, host.untuned_calls, host.tuning_p50, host.tuning_calls, host.untuned_p99,
      host.tuning_p99, host.p99_ratio());
  const bool met = tuned == cases.size() && host.p99_ratio() <= 2.0;
  fmt::print("target (every problem ends tuned, p99 host time within 2x of untuned): {}\n",
             met ? "met" : "not met");
}

nlohmann::json first_use_json(const DeviceInfo& device, const BenchOptions& o, const std::string& database,
                              const std::vector<FirstUseCase>& cases, const RuntimeStats& tunes,
                              const HostSummary& host) {
  nlohmann::json list = nlohmann::json::array();
  size_t tuned = 0;
  for (const FirstUseCase& c : cases) {
    tuned += c.ended_tuned ? 1 : 0;
    nlohmann::json row = {
        {"shape", c.problem.label()},
        {"level", to_string(c.end_plan.level)},
        {"ended_tuned", c.ended_tuned},
        {"served_by", served_by(c.end_timed_plan())},
        {"config", c.end_timed_plan().config},
        {"untuned_level", to_string(c.untuned_plan.level)},
        {"untuned_ms", c.untuned.median_ms},
        {"untuned_tflops", c.tflops(c.untuned)},
        {"end_ms", c.end().median_ms},
        {"end_tflops", c.tflops(c.end())},
        {"cublas_ms", c.cublas.median_ms},
        {"cublas_tflops", c.tflops(c.cublas)},
        {"host_us_untuned_p50", percentile(c.untuned_us, 0.5)},
        {"host_us_untuned_p99", percentile(c.untuned_us, 0.99)},
        {"host_us_tuning_p50", percentile(c.tuning_us, 0.5)},
        {"host_us_tuning_p99", percentile(c.tuning_us, 0.99)},
        {"calls_untuned", c.untuned_us.size()},
        {"calls_tuning", c.tuning_us.size()},
        {"rel_error", std::max(c.untuned_check.rel_error, c.ended_tuned ? c.tuned_check.rel_error : 0.0)}};
    row["tuned_after_s"] = c.tuned_after_s ? nlohmann::json(*c.tuned_after_s) : nlohmann::json(nullptr);
    list.push_back(row);
  }
  return {{"device", device.name},
          {"uuid", device.uuid},
          {"database", database},
          {"duration_s", o.duration_s},
          {"baseline_s", o.baseline_s},
          {"evaluations_per_problem", o.tune_budget},
          {"results", list},
          {"problems_tuned", tuned},
          {"tunes_finished", tunes.tunes_finished},
          {"tunes_failed", tunes.tunes_failed},
          {"host_us_untuned_p50", host.untuned_p50},
          {"host_us_untuned_p99", host.untuned_p99},
          {"host_us_tuning_p50", host.tuning_p50},
          {"host_us_tuning_p99", host.tuning_p99},
          {"p99_ratio", host.p99_ratio()}};
}

// (a) the host time per call of a runtime without tuning, (b) the problems called in turn for the duration
// by a runtime tuning them at first use, (c) the speed of what each ended at, timed like every bench figure.
int run_first_use(const BenchOptions& o, const std::vector<BenchProblem>& problems, int ordinal,
                  const DeviceInfo& device) {
  // The measurement decides which runtime tunes; settings inherited from the environment would blur that.
  ::unsetenv("GEMMFORGE_TUNE_AT_FIRST_USE");
  ::unsetenv("GEMMFORGE_TUNE_BUDGET");
  std::optional<FreshFolder> folder;
  std::string database = o.db;
  if (database.empty()) {
    folder.emplace();
    database = folder->file("gemmforge.db");
  }
  auto options = [&](bool tune) {
    RuntimeOptions r;
    r.database_path = database;
    r.device = ordinal;
    r.record_misses = false;
    r.use_vendor = !o.no_vendor;
    r.tune_at_first_use = tune;
    r.first_use_evaluations = o.tune_budget;
    return r;
  };
  cuda::Stream stream;
  cuda::CublasHandle cublas;
  cublas.set_stream(stream.get());
  const rtc::UtilityKernels utilities;

  Runtime untuned(options(false));
  std::vector<FirstUseCase> cases;
  std::vector<std::string> known;
  for (const BenchProblem& p : problems) {
    FirstUseCase c;
    c.problem = p;
    c.operands = make_operands(p.m, p.n, p.k, p.op_a, p.op_b, p.order, Dtype::kF32, Dtype::kF32, utilities,
                               stream.get());
    const GemmCall& g = c.operands.call;
    c.reference = canonicalize(g);
    c.reference.c = c.operands.reference.data();
    cublas.sgemm(c.reference);
    c.shape.op_a = p.op_a, c.shape.op_b = p.op_b, c.shape.m = p.m, c.shape.n = p.n, c.shape.k = p.k;
    c.shape.lda = g.lda, c.shape.ldb = g.ldb, c.shape.ldc = g.ldc, c.shape.order = p.order;
    c.flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    if (const PlanInfo plan = untuned.query(c.shape); rests_on_tuning(plan)) {
      known.push_back(fmt::format("{} ({})", p.label(), plan.source));
    }
    cases.push_back(std::move(c));
  }
  if (!known.empty()) {
    throw InvalidArgumentError(fmt::format(
        "--first-use-tuning measures problems nobody tuned, and {} of them are tuned already: {}. Use a\n"
        "fresh database (the default without --db) and held-out problems such as shapes/fp32-holdout.txt",
        known.size(), fmt::join(known, ", ")));
  }

  fmt::print(stderr, "Database {}{}.\n", database, folder ? " (fresh, removed afterwards)" : "");
  fmt::print(stderr, "(a) without tuning: {} problem(s) called in turn for {:.0f} s\n", cases.size(),
             o.baseline_s);
  call_in_turn(untuned, cases, &FirstUseCase::untuned_us, o.baseline_s, stream.get(), nullptr);

  fmt::print(stderr, "(b) tuning at first use ({} evaluations per problem): called in turn for {:.0f} s\n",
             o.tune_budget, o.duration_s);
  RuntimeStats tunes;
  {
    Runtime tuning(options(true));
    double next_check = 0;
    double next_report = 10;
    call_in_turn(tuning, cases, &FirstUseCase::tuning_us, o.duration_s, stream.get(), [&](double elapsed) {
      if (elapsed < next_check) return;  // plans are looked at about once a second, between rounds
      next_check = elapsed + 1;
      size_t tuned = 0;
      for (FirstUseCase& c : cases) {
        if (!c.tuned_after_s && rests_on_tuning(tuning.query(c.shape))) c.tuned_after_s = elapsed;
        tuned += c.tuned_after_s ? 1 : 0;
      }
      if (elapsed >= next_report) {
        next_report += 10;
        const RuntimeStats s = tuning.stats();
        fmt::print(
            stderr, "  {:>5.0f} s: {} of {} tuned; tunes queued {}, running {}, finished {}, failed {}\n",
            elapsed, tuned, cases.size(), s.tunes_queued, s.tunes_running, s.tunes_finished, s.tunes_failed);
      }
    });
    for (FirstUseCase& c : cases) {
      c.end_plan = tuning.query(c.shape);
      c.ended_tuned = rests_on_tuning(c.end_plan);
      if (c.ended_tuned && !c.tuned_after_s) c.tuned_after_s = o.duration_s;
    }
    tunes = tuning.stats();
  }  // a tune still in flight ends here, so it disturbs none of the timings below

  fmt::print(stderr, "(c) timing what each problem ended at\n");
  Runtime tuned(options(false));  // a new runtime serves the tuned results from the database
  tuner::L2Flusher flusher;
  tuner::TimingOptions timing;
  timing.budget_ms = o.budget_ms;
  for (FirstUseCase& c : cases) {
    const GemmCall& g = c.operands.call;
    const int64_t lines = g.order == Order::kRowMajor ? g.m : g.n;
    const int64_t contiguous = g.order == Order::kRowMajor ? g.n : g.m;
    auto time_runtime = [&](Runtime& runtime, PlanInfo& plan, tuner::Timing& timed, rtc::Comparison& check) {
      call(runtime, c, stream.get());
      runtime.wait_for_compiles();
      plan = runtime.query(c.shape);
      timed =
          tuner::time_launches([&](cudaStream_t s) { call(runtime, c, s); }, stream.get(), timing, flusher);
      check = utilities.compare(static_cast<const float*>(g.c), g.ldc, c.operands.reference.as<float>(),
                                g.ldc, lines, contiguous, stream.get());
    };
    time_runtime(untuned, c.untuned_plan, c.untuned, c.untuned_check);
    if (c.ended_tuned) time_runtime(tuned, c.tuned_plan, c.tuned, c.tuned_check);
    c.cublas =
        tuner::time_launches([&](cudaStream_t) { cublas.sgemm(c.reference); }, stream.get(), timing, flusher);
  }

  const HostSummary host = summarize_host(cases);
  if (o.json) {
    fmt::print("{}\n", first_use_json(device, o, database, cases, tunes, host).dump(2));
  } else {
    print_first_use(device, o, database, cases, tunes, host);
  }
  for (const FirstUseCase& c : cases) {
    for (const rtc::Comparison* check : {&c.untuned_check, &c.tuned_check}) {
      if (check == &c.tuned_check && !c.ended_tuned) continue;
      if (!check->passes(o.error_bound)) {
        throw InternalError(
            fmt::format("gemmforge's result for {} differs from cuBLAS (relative error {:.3g})",
                        c.problem.label(), check->rel_error));
      }
    }
  }
  return 0;
}

// "SGEMM" or "GemmEx bf16": what cuBLAS computes in the comparison.
std::string cublas_routine(const std::string& type) {
  return type == "f32" ? "SGEMM" : "GemmEx " + type;
}

int run_bench(const BenchOptions& given) {
  BenchOptions o = given;
  Dtype dtype, c_dtype;
  parse_type_name(o.dtype, dtype, c_dtype);
  if (o.error_bound < 0) o.error_bound = verification_tolerance(dtype, c_dtype);
  if (o.first_use && dtype != Dtype::kF32)
    throw InvalidArgumentError("--first-use-tuning measures f32 problems");
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
  if (o.first_use && (o.tune_missing || !o.csv.empty() || !o.plot.empty())) {
    throw InvalidArgumentError(
        "--first-use-tuning prints its own table or --json; it takes no --tune-missing, "
        "--csv or --plot");
  }
  if (o.first_use && (o.duration_s <= 0 || o.baseline_s <= 0 || o.tune_budget == 0)) {
    throw InvalidArgumentError("--duration, --baseline-duration and --tune-budget must be above 0");
  }
  const int ordinal = cuda::find_device(o.device);
  cuda::DeviceGuard guard(ordinal);
  const DeviceInfo device = cuda::query_device(ordinal);
  if (o.first_use) return run_first_use(o, problems, ordinal, device);
  if (o.tune_missing) tune_missing(o, problems, ordinal);

  const std::vector<BenchRow> rows = measure(o, problems, device, ordinal);
  const Summary summary = summarize(rows);
  if (o.json) {
    fmt::print("{}\n", to_json(device, o, rows, summary).dump(2));
  } else {
    print_table(device, rows, summary, o.error_bound, cublas_routine(o.dtype));
  }
  if (!o.csv.empty()) write_csv(o.csv, rows);
  if (!o.plot.empty()) {
    std::vector<RatioBar> bars;
    for (const BenchRow& r : rows)
      bars.push_back({r.shape + (r.vendor() ? " (cuBLAS)" : ""), r.served_ratio()});
    std::ofstream out(o.plot);
    out << ratio_chart_svg(
        fmt::format("gemmforge (served) / cuBLAS {} speed on {}", cublas_routine(o.dtype), device.name), bars,
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
  add_layout_option(cmd, o->layout);
  add_order_option(cmd, o->order);
  cmd->add_option("--dtype", o->dtype,
                  std::string(kDtypeHelp) + "; compared with cuBLAS GemmEx (SGEMM for f32)")
      ->capture_default_str();
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_flag("--tune-missing", o->tune_missing, "Tune problems without an exact result first");
  cmd->add_flag("--no-vendor", o->no_vendor, "Serve generated kernels only (cuBLAS never serves a call)");
  cmd->add_option("--tune-time", o->tune_time_s, "Seconds of tuning per missing problem")
      ->capture_default_str();
  cmd->add_option("--budget-ms", o->budget_ms, "Timed milliseconds per contender and problem")
      ->capture_default_str();
  cmd->add_option(
      "--error-bound", o->error_bound,
      "Relative Frobenius error tolerated against cuBLAS (default: the types' verification tolerance)");
  cmd->add_flag("--json", o->json, "Print JSON instead of the table");
  cmd->add_option("--csv", o->csv, "Also write the results as CSV to this file");
  cmd->add_option("--plot", o->plot, "Also write an SVG bar chart of the ratio per problem to this file");
  cmd->add_flag(
      "--first-use-tuning", o->first_use,
      "Measure tuning at first use: host time per call without it, then with it while the problems are "
      "called in turn, and the speed each ends at (on a fresh database unless --db is given)");
  cmd->add_option("--duration", o->duration_s, "--first-use-tuning: seconds of calls while tuning")
      ->capture_default_str();
  cmd->add_option("--baseline-duration", o->baseline_s,
                  "--first-use-tuning: seconds of calls without tuning, measured first")
      ->capture_default_str();
  cmd->add_option("--tune-budget", o->tune_budget, "--first-use-tuning: evaluations per problem")
      ->capture_default_str();
  return {cmd, [o] { return run_bench(*o); }};
}

}  // namespace

static const bool registered = register_command(50, register_bench);

}  // namespace gemmforge::cli
