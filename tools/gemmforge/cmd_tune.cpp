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
#include "core/template_library.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"
#include "runtime/model_starts.hpp"
#include "runtime/shipped_results.hpp"
#include "tuner/launcher.hpp"
#include "tuner/replay_evaluator.hpp"
#include "tuner/search.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::cli {
namespace {

struct TuneCliOptions {
  std::string device;
  std::string devices;
  std::string rank = "auto";
  std::string replay;
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
  std::string retune;  ///< a template: tune it again on the problems it has results on for this GPU model
  double error_bound = 1e-5;
  double timeout_s = 0;
  unsigned threads = 0;
  size_t batch = 0;
  size_t searches = tuner::TuneOptions().searches_per_gpu;
  int compile_ahead = tuner::TuneOptions().guessed_batches;
  size_t patience = tuner::TuneOptions().patience;
  int model_starts = -1;           ///< -1: runtime::kModelStarts, none with --replay
  std::vector<std::string> first;  ///< TEMPLATE:CONFIG, measured first instead of the model's starts
  bool json = false;
};

// --first's configs, in the order their templates' manifests list the parameters.
std::vector<Config> first_configs(const std::vector<std::string>& texts) {
  std::vector<Config> out;
  for (const std::string& text : texts) {
    const size_t colon = text.find(':');
    if (colon == std::string::npos || colon == 0) {
      throw InvalidArgumentError(
          fmt::format("--first '{}': expected TEMPLATE:CONFIG, such as sgemm_simt:BM=128,BN=128,...", text));
    }
    const std::string name = text.substr(0, colon);
    try {
      const KernelTemplate& kernel_template = TemplateLibrary::instance().get(name);
      out.push_back(kernel_template.manifest.normalize(Config::parse_key(name, text.substr(colon + 1))));
    } catch (const Error& e) {
      throw InvalidArgumentError(fmt::format("--first '{}': {}", text, e.what()));
    }
  }
  return out;
}

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

// --retune: adds to `problems`, each once, those `template_name` has results on for GPUs of `gpu`'s model
// (without a `gpu`, of the one model `named` names a part of), in the database or export at `path` (the
// default database when empty; none when that does not exist), the site database and the shipped results.
void add_problems_to_retune(std::vector<KernelProblem>& problems, const std::string& path,
                            const std::string& template_name, std::optional<DeviceInfo> gpu,
                            const std::string& named) {
  runtime::ResultSources opened = runtime::open_result_sources(path, TemplateLibrary::instance());
  std::vector<runtime::ResultSource*> sources;
  if (opened.source != nullptr) sources.push_back(opened.source.get());
  sources.push_back(&runtime::shipped_source());
  if (!gpu) {
    const std::vector<DeviceInfo> models = runtime::gpu_models_named(sources, named);
    if (models.size() > 1) {
      std::vector<std::string> names;
      for (const DeviceInfo& m : models) names.push_back(m.name);
      throw InvalidArgumentError(
          fmt::format("--device '{}' names several GPU models: {}", named, fmt::join(names, ", ")));
    }
    gpu = models.front();
  }
  for (runtime::ResultSource* source : sources) {
    for (KernelProblem& p : source->problems_of(*gpu, template_name)) {
      if (std::find(problems.begin(), problems.end(), p) == problems.end()) problems.push_back(std::move(p));
    }
  }
}

// --devices "all" or "0,2,3": CUDA ordinals, each once.
std::vector<int> parse_devices(const std::string& text) {
  std::vector<int> ordinals;
  if (text.empty()) return ordinals;
  const int count = cuda::device_count();
  if (text == "all") {
    for (int i = 0; i < count; ++i) ordinals.push_back(i);
    return ordinals;
  }
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int ordinal = -1;
    try {
      ordinal = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || ordinal < 0 || ordinal >= count) {
      throw InvalidArgumentError(
          fmt::format("--devices '{}': '{}' is not a GPU index from 0 to {} (or give --devices all)", text,
                      item, count - 1));
    }
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) == ordinals.end()) ordinals.push_back(ordinal);
  }
  if (ordinals.empty()) throw InvalidArgumentError("--devices names no GPU");
  return ordinals;
}

void print_summary(const tuner::TuneReport& report) {
  fmt::print("\nTuned {} problem(s) in {:.1f} s on", report.problems.size(), report.wall_s);
  for (const tuner::TuneReport::Gpu& gpu : report.gpus) {
    fmt::print("{} {} {} (run {})", &gpu == &report.gpus.front() ? "" : ",",
               gpu.ordinal >= 0 ? fmt::format("GPU{}", gpu.ordinal) : "a replayed", gpu.device.name,
               gpu.run_id);
  }
  if (report.searches_per_gpu > 1) fmt::print(", {} problems at a time per GPU", report.searches_per_gpu);
  if (report.worker_restarts > 0)
    fmt::print("; the workers were restarted {} time(s)", report.worker_restarts);
  if (report.kernels_compiled > 0) {
    // Batches with few new kernels leave compile threads idle, so the wall-time rate can sit below what
    // the threads sustain; the mean duration shows both.
    fmt::print(
        "\nNVRTC: {} kernels in {:.1f} s of compile wall time on {} threads ({:.1f} kernels/s), {:.2f} s per "
        "kernel on average; {} compiled ahead of the search, {} of them used",
        report.kernels_compiled, report.compile_busy_s, report.compile_threads,
        report.compile_busy_s > 0 ? report.kernels_compiled / report.compile_busy_s : 0.0,
        report.compile_sum_s / report.kernels_compiled, report.kernels_compiled_ahead,
        report.kernels_ahead_used);
    // A compilation that takes longer than its CPU time waited: for a core (involuntary switches) or
    // in the kernel (system time, page faults).
    fmt::print(
        "\nCPU: {:.2f} s of it per kernel in NVRTC; the tuning process used {:.1f} s user and {:.1f} s "
        "system ({:.1f} cores on average), {} involuntary context switches, {} page faults",
        report.compile_cpu_s / report.kernels_compiled, report.process.user_s, report.process.system_s,
        report.wall_s > 0 ? (report.process.user_s + report.process.system_s) / report.wall_s : 0.0,
        report.process.involuntary_switches, report.process.minor_faults);
  }
  if (report.measure_s > 0 && report.wall_s > 0 && !report.gpus.empty()) {
    // Near 100%, the GPUs are the limit; well below, the searches wait for their compilations.
    const tuner::MeasurementPhases& phases = report.measure_phases;
    fmt::print(
        "\nGPU: {:.1f} s measuring candidates (loading {:.1f} s, verifying {:.1f} s, timing {:.1f} s), "
        "{:.0f}% "
        "of the run's time on {} GPU(s)",
        report.measure_s, phases.load_ms / 1e3, phases.verify_ms / 1e3, phases.time_ms / 1e3,
        100 * report.measure_s / (report.wall_s * report.gpus.size()), report.gpus.size());
    // Until then a GPU waits for its workers, its problems' set-up and their first kernels.
    std::vector<std::string> starts;
    for (const tuner::TuneReport::Gpu& gpu : report.gpus) {
      if (gpu.first_measured_s >= 0)
        starts.push_back(fmt::format("GPU{} {:.1f} s", gpu.ordinal, gpu.first_measured_s));
    }
    if (!starts.empty()) fmt::print("; first candidate measured {} into the run", fmt::join(starts, ", "));
  }
  const bool several = report.gpus.size() > 1;
  fmt::print("\n\n{:<36} {:>10} {:>10} {:>8} {:>9} {:>13} {:>7}{}  {}\n", "problem", "cuBLAS ms", "best ms",
             "TFLOP/s", "vs cuBLAS", "evals (new)", "wall s", several ? fmt::format(" {:>6}", "GPUs") : "",
             "best config");
  for (const tuner::ProblemSummary& p : report.problems) {
    const std::string evaluations = fmt::format("{} ({})", p.evaluations, p.measured);
    const std::string gpus = several ? fmt::format(" {:>6}", fmt::join(p.gpus, ",")) : "";
    if (p.candidates == 0) {
      fmt::print("{:<36} no candidate: no template supports this problem on this GPU\n",
                 p.problem.to_string());
      continue;
    }
    if (!p.best) {
      fmt::print("{:<36} {:>10.4f} {:>10} {:>8} {:>9} {:>13} {:>7.1f}{}  no correct kernel found\n",
                 p.problem.to_string(), p.cublas_ms, "-", "-", "-", evaluations, p.wall_s, gpus);
      continue;
    }
    const db::TrialRecord& b = *p.best;
    fmt::print("{:<36} {:>10.4f} {:>10.4f} {:>8.2f} {:>8.3f}x {:>13} {:>7.1f}{}  {} {}\n",
               p.problem.to_string(), p.cublas_ms, b.time_median_ms.value_or(0), b.tflops.value_or(0),
               b.ratio_vs_cublas.value_or(0), evaluations, p.wall_s, gpus, b.template_name, b.config_key);
  }
}

// This process's rank: --rank R/N, none, or (auto) what the cluster's launcher set in the environment.
tuner::RankInfo rank_of(const TuneCliOptions& o) {
  if (o.rank == "auto") return tuner::rank_from_environment();
  if (o.rank == "none") return tuner::RankInfo{};
  return tuner::parse_rank(o.rank);
}

std::vector<tuner::RecordedTable> replay_tables(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgumentError(fmt::format("--replay: cannot read '{}'", path));
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(fmt::format("--replay '{}' is not JSON: {}", path, e.what()));
  }
  std::vector<tuner::RecordedTable> tables =
      tuner::load_recorded_tables(document, TemplateLibrary::instance());
  if (tables.empty()) throw InvalidArgumentError(fmt::format("--replay '{}' holds no trial table", path));
  // One GPU is replayed: the first table's.
  const std::string uuid = tables.front().device.uuid;
  std::erase_if(tables, [&](const tuner::RecordedTable& t) { return t.device.uuid != uuid; });
  return tables;
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
                        {"device", p.device},
                        {"gpus", p.gpus},
                        {"candidates", p.candidates},
                        {"evaluations", p.evaluations},
                        {"measured", p.measured},
                        {"failed", p.failed},
                        {"compiled", p.compiled},
                        {"cublas_ms", p.cublas_ms},
                        {"wall_s", p.wall_s},
                        {"best", best}});
  }
  nlohmann::json gpus = nlohmann::json::array();
  for (const tuner::TuneReport::Gpu& gpu : report.gpus) {
    gpus.push_back({{"ordinal", gpu.ordinal},
                    {"device", gpu.device.name},
                    {"uuid", gpu.device.uuid},
                    {"run", gpu.run_id},
                    {"worker_restarts", gpu.worker_restarts}});
  }
  return {{"device", report.device.name},
          {"run", report.run_id},
          {"gpus", gpus},
          {"searches_per_gpu", report.searches_per_gpu},
          {"wall_s", report.wall_s},
          {"measure_s", report.measure_s},
          {"measure_phases_s",
           {{"load", report.measure_phases.load_ms / 1e3},
            {"verify", report.measure_phases.verify_ms / 1e3},
            {"time", report.measure_phases.time_ms / 1e3}}},
          {"worker_restarts", report.worker_restarts},
          {"compile",
           {{"threads", report.compile_threads},
            {"kernels", report.kernels_compiled},
            {"busy_s", report.compile_busy_s},
            {"sum_s", report.compile_sum_s},
            {"cpu_s", report.compile_cpu_s},
            {"kernels_compiled_ahead", report.kernels_compiled_ahead},
            {"kernels_ahead_used", report.kernels_ahead_used}}},
          {"process",
           {{"user_s", report.process.user_s},
            {"system_s", report.process.system_s},
            {"involuntary_switches", report.process.involuntary_switches},
            {"minor_faults", report.process.minor_faults}}},
          {"problems", problems}};
}

int run_tune(const TuneCliOptions& o) {
  // Everything that can be checked without side effects comes first; the database is opened (and
  // created) only once a GPU is known to be there, so a failed start writes nothing.
  tuner::make_strategy(o.strategy, o.seed);
  Pins pins;
  for (const std::string& pin : o.pins) add_pin(pins, pin);
  const std::vector<Config> first = first_configs(o.first);
  std::vector<KernelProblem> problems = problems_from_shapes(o);
  const tuner::RankInfo rank = rank_of(o);
  const bool replay = !o.replay.empty();
  std::vector<std::string> templates = o.templates;
  if (!o.retune.empty()) {
    TemplateLibrary::instance().get(o.retune);  // an unknown template is refused, naming the known ones
    if (!templates.empty() && (templates.size() > 1 || templates.front() != o.retune)) {
      throw InvalidArgumentError(fmt::format(
          "--retune {} tunes {} alone: drop --template, or name that template only", o.retune, o.retune));
    }
    templates = {o.retune};
  }
  if ((o.from_misses || !o.retune.empty()) && rank.size > 1) {
    throw InvalidArgumentError(fmt::format("{} reads one GPU's results; give the ranks --shape or --shapes",
                                           o.from_misses ? "--from-misses" : "--retune"));
  }
  if (o.print_problems) {
    if (o.from_misses) {
      throw InvalidArgumentError(
          "--print-problems lists the problems of --shape and --shapes; those of --from-misses need the GPU");
    }
    if (!o.retune.empty()) {
      if (o.device.empty()) {
        throw InvalidArgumentError(
            "--print-problems --retune lists one GPU model's problems: name the model with --device, "
            "a part of its name such as h200");
      }
      add_problems_to_retune(problems, o.db, o.retune, std::nullopt, o.device);
    }
    if (rank.size > 1) problems = tuner::shard_problems(problems, rank.rank, rank.size);
    for (const KernelProblem& p : problems) fmt::print("{}\n", p.to_string());
    return 0;
  }
  if (replay && (o.from_misses || !o.retune.empty() || !o.devices.empty() || !o.device.empty())) {
    throw InvalidArgumentError(
        "--replay stands for the GPU: it takes no --device, --devices, --from-misses or --retune");
  }
  std::vector<tuner::RecordedTable> tables;
  if (replay) {
    tables = replay_tables(o.replay);
    if (problems.empty()) {
      for (const tuner::RecordedTable& t : tables) problems.push_back(t.problem);
    }
  }
  if (problems.empty() && !o.from_misses && o.retune.empty()) {
    throw InvalidArgumentError(
        "nothing to tune: give --shape MxNxK, --shapes FILE, --from-misses or --retune TEMPLATE");
  }
  if (!o.devices.empty() && !o.device.empty()) {
    throw InvalidArgumentError("give --device or --devices, not both");
  }
  if (const std::string reason = cuda::unavailable_reason(); !reason.empty() && !replay) {
    throw NoDeviceError(fmt::format(
        "gemmforge tune measures kernels on a GPU, and {}; nothing was written. Run it on a machine with a "
        "GPU, then copy the results here with gemmforge export / import",
        reason));
  }
  const std::vector<int> ordinals = replay ? std::vector<int>{} : parse_devices(o.devices);
  const int ordinal = replay ? 0 : ordinals.empty() ? cuda::find_device(o.device) : ordinals.front();

  std::string path = o.db.empty() ? db::Database::default_path() : o.db;
  if (rank.size > 1) {
    const size_t all = problems.size();
    problems = tuner::shard_problems(problems, rank.rank, rank.size);
    path = tuner::rank_database_path(path, rank);
    fmt::print(stderr, "Rank {} of {} ({}): {} of {} problem(s), database {}\n", rank.rank, rank.size,
               rank.source, problems.size(), all, path);
    if (problems.empty()) {
      fmt::print(stderr, "Nothing to tune on this rank.\n");
      return 0;
    }
  }
  db::Database database = db::Database::open(path);
  if (o.from_misses) {
    const std::vector<KernelProblem> missed = problems_from_misses(database, ordinal);
    if (missed.empty() && problems.empty()) {
      fmt::print("No misses recorded for this GPU in {}: nothing to tune.\n", database.path());
      return 0;
    }
    problems.insert(problems.end(), missed.begin(), missed.end());
  }
  if (!o.retune.empty()) {
    const DeviceInfo gpu = cuda::query_device(ordinal);
    const size_t given = problems.size();
    add_problems_to_retune(problems, database.path(), o.retune, gpu, "");
    if (problems.empty()) {
      fmt::print(
          "{} has no results for {} in {}, a site database or the shipped results: nothing to retune.\n",
          o.retune, gpu.name, database.path());
      return 0;
    }
    fmt::print(stderr, "Retuning {} on {} problem(s) it has results on for {}\n", o.retune,
               problems.size() - given, gpu.name);
  }

  tuner::TuneOptions options;
  options.problems = std::move(problems);
  options.templates = templates;
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
  options.searches_per_gpu = o.searches;
  options.guessed_batches = o.compile_ahead;
  options.patience = o.patience;
  options.command = command_line();
  options.worker.device = ordinal;
  options.devices = ordinals;
  if (replay) options.replay = &tables;
  // A replay measures only the configs its recorded tables hold, on the GPU they stand for.
  const int model_starts = o.model_starts >= 0 ? o.model_starts
                           : replay            ? 0
                                               : static_cast<int>(runtime::kModelStarts);
  if (!first.empty()) {
    options.first_candidates = [first](const DeviceInfo&, const KernelProblem&) { return first; };
  } else if (model_starts > 0) {
    // The model of each GPU fits while the workers start.
    std::vector<DeviceInfo> gpus;
    if (!replay) {
      for (int gpu : ordinals.empty() ? std::vector<int>{ordinal} : ordinals) {
        gpus.push_back(cuda::query_device(gpu));
      }
    }
    options.first_candidates = runtime::model_first_candidates(TemplateLibrary::instance(), database.path(),
                                                               static_cast<size_t>(model_starts), gpus);
  }
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
  cmd->add_option(
      "--devices", o->devices,
      "Tune on several GPUs at once: all, or indices such as 0,1 (one worker per GPU, one compile "
      "pool, one database; GPUs of one model share the problems)");
  cmd->add_option("--rank", o->rank,
                  "This process's share of the problems under a cluster launcher: auto (SLURM_PROCID/NTASKS, "
                  "OMPI_COMM_WORLD_RANK/SIZE or PMI_RANK/SIZE), none, or R/N. A rank writes its own database "
                  "(--db with {rank} replaced, or NAME.rankR-of-N.db); gemmforge merge pools them")
      ->capture_default_str();
  cmd->add_option(
      "--replay", o->replay,
      "Answer from this export with all trials instead of a GPU (no worker, no compiler): tests the "
      "tuning path, sharding and merging without a GPU");
  cmd->add_option("--shape", o->shapes, "Problem MxNxK (repeatable)");
  cmd->add_option("--shapes", o->shapes_file,
                  "File of shapes: one \"M N K [layout] [order]\" per line, # starts a comment");
  add_layout_option(cmd, o->layout);
  add_order_option(cmd, o->order);
  cmd->add_option("--dtype", o->dtype,
                  std::string(kDtypeHelp) + "; verified against cuBLAS GemmEx with FP32 accumulation")
      ->capture_default_str();
  cmd->add_option("--align", o->align,
                  "Vector width in elements (1, 2 or 4; 8 for 16-bit types) of A, B and C, e.g. 4,4,1: the "
                  "tuner picks leading dimensions that give exactly these (default: those of tight leading "
                  "dimensions)");
  cmd->add_flag("--print-problems", o->print_problems,
                "Print the canonical problems that would be tuned, one per line, and exit (needs no GPU)");
  cmd->add_option("--strategy", o->strategy, "exhaustive, random or guided")->capture_default_str();
  cmd->add_option("--max-evals", o->max_evals, "Evaluations per problem, stored ones included (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--time", o->time_s, "Seconds of search per problem (0: no limit)")->capture_default_str();
  cmd->add_option("--patience", o->patience,
                  "Stop a problem's search after this many evaluations in a row that made its best time no "
                  "more than 0.5% faster (0: only --max-evals and --time stop it)")
      ->capture_default_str();
  cmd->add_option("--db", o->db,
                  "Tuning database (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_option(
         "--model-starts", o->model_starts,
         fmt::format("Measure first the N configs the performance model ranks best for each problem "
                     "(those `query --candidates` lists, fitted on the database and the shipped "
                     "results), so a tune ends no slower than the untuned plan, after the {} fastest "
                     "shipped configs of each template measured with an earlier source of it; 0: "
                     "none (default: {}; none with --replay)",
                     runtime::kRetiredStarts, runtime::kModelStarts))
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--first", o->first,
                  "Measure this config first, as TEMPLATE:CONFIG (repeatable, in order; a problem's search "
                  "passes over those outside its space), instead of the model's starts");
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
  cmd->add_option("--retune", o->retune,
                  "Tune this template alone again on every problem it has results on for this GPU's model "
                  "(the database, a site database, the shipped results), as after a change of its source "
                  "retires them: each search starts from its fastest configs of the earlier source "
                  "(--model-starts). With --print-problems, --device names the GPU model");
  cmd->add_option("--error-bound", o->error_bound, "Relative Frobenius error allowed against cuBLAS")
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds before a candidate counts as hung (0: from the cuBLAS time)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "NVRTC compile threads (0: one per core but one per GPU)")
      ->capture_default_str();
  cmd->add_option(
         "--batch", o->batch,
         "Candidates proposed per search step, compiled together (0: one per compile thread, 4 to 16)")
      ->capture_default_str();
  cmd->add_option("--searches", o->searches,
                  "Problems each GPU searches at once, each with a worker of its own: one's batch compiles "
                  "while another's is measured, and the GPU measures one at a time (0: one per three cores "
                  "each GPU has, 2 to 6)")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  cmd->add_option("--compile-ahead", o->compile_ahead,
                  "Batches' worth of the strategy's guesses at a search's next candidates compiled while its "
                  "batch is measured (-1: 2 with one search per GPU, else none)")
      ->capture_default_str()
      ->check(CLI::Range(-1, 4));
  return {cmd, [o] { return run_tune(*o); }};
}

}  // namespace

static const bool registered = register_command(30, register_tune);

}  // namespace gemmforge::cli
