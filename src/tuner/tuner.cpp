// The tuning run: one worker for the device, one run row, and per problem a search space, a resumed
// history, a strategy and a stop condition handed to search().
#include "tuner/tuner.hpp"
#include "core/eligibility.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "cuda/cublas_handle.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "tuner/compile_stream.hpp"
#include "tuner/gpu_evaluator.hpp"
#include "tuner/progress_line.hpp"

namespace gemmforge::tuner {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<const KernelTemplate*> select_templates(const TemplateLibrary& library,
                                                    const KernelProblem& problem,
                                                    const std::vector<std::string>& names) {
  std::vector<const KernelTemplate*> selected;
  if (names.empty()) {
    for (const KernelTemplate* t : library.all()) {
      if (can_serve(*t, problem)) selected.push_back(t);
    }
    return selected;
  }
  for (const std::string& name : names) {
    const KernelTemplate& t = library.get(name);  // NotFoundError lists the known ones
    require_eligible(t, problem);
    if (std::find(selected.begin(), selected.end(), &t) == selected.end()) selected.push_back(&t);
  }
  return selected;
}

// cuBLAS's trial of a problem: the yardstick every generated kernel was compared with.
db::TrialRecord vendor_trial(int64_t device_id, int64_t run_id, const KernelProblem& problem, double ms) {
  db::TrialRecord t;
  t.run_id = run_id;
  t.device_id = device_id;
  t.problem = problem;
  t.template_name = db::kVendorTemplate;
  t.template_hash = cuda::cublas_version();
  t.config_key = db::kVendorConfig;
  t.time_median_ms = ms;
  t.cublas_ms = ms;
  t.ratio_vs_cublas = 1.0;
  t.tflops = problem.flops() / ms / 1e9;
  return t;
}

std::unique_ptr<StopCondition> make_stop(const TuneOptions& options, size_t candidates) {
  std::vector<std::unique_ptr<StopCondition>> conditions;
  conditions.push_back(stop_after_evaluations(options.max_evals > 0 ? options.max_evals : candidates));
  if (options.time_s > 0) conditions.push_back(stop_after_seconds(options.time_s));
  return stop_when_any(std::move(conditions));
}

// Keeps the progress line up to date from the evaluator's trial events.
class ProgressTracker {
 public:
  ProgressTracker(ProgressLine& line, std::string title, size_t total, double budget_s)
      : line_(line), title_(std::move(title)), total_(total), budget_s_(budget_s) {}

  void add(const TrialEvent& event) {
    ++done_;
    if (!event.resumed) ++measured_;
    const db::TrialRecord& t = *event.trial;
    if (t.status == db::TrialStatus::kOk && t.tflops && (!best_tflops_ || *t.tflops > *best_tflops_)) {
      best_tflops_ = t.tflops;
      best_ratio_ = t.ratio_vs_cublas;
    }
    show();
  }

  void show() {
    ProgressState state;
    state.title = title_;
    state.done = done_;
    state.total = total_;
    state.best_tflops = best_tflops_;
    state.best_ratio = best_ratio_;
    state.elapsed_s = seconds_since(start_);
    state.eta_s = estimate_eta(measured_, total_ > done_ ? total_ - done_ : 0, state.elapsed_s, budget_s_);
    line_.show(state);
  }

 private:
  ProgressLine& line_;
  std::string title_;
  size_t total_;
  double budget_s_;
  Clock::time_point start_ = Clock::now();
  size_t done_ = 0;
  size_t measured_ = 0;
  std::optional<double> best_tflops_;
  std::optional<double> best_ratio_;
};

ProblemSummary tune_problem(db::Database& database, WorkerClient& worker, const TemplateLibrary& library,
                            int64_t device_id, const DeviceInfo& device, int64_t run_id,
                            const KernelProblem& problem, const TuneOptions& options, ProgressLine& progress,
                            const std::string& title) {
  const auto start = Clock::now();
  ProblemSummary summary;
  summary.problem = problem;
  const SearchSpace space = build_search_space(library, device, problem, options.templates, options.pins);
  summary.candidates = space.size();
  if (space.empty()) {
    spdlog::warn("{}: no template has a candidate for this problem on {} (see gemmforge space)",
                 problem.to_string(), device.name);
    return summary;
  }

  EvaluatorOptions evaluator_options;
  evaluator_options.timing = options.timing;
  evaluator_options.seed = options.seed;
  evaluator_options.error_bound = options.error_bound;
  evaluator_options.allow_spills = options.allow_spills;
  evaluator_options.compile_threads = options.compile_threads;
  evaluator_options.run_id = run_id;
  GpuEvaluator evaluator(database, worker, library, device_id, device, problem, evaluator_options);

  const size_t total = std::min(space.size(), options.max_evals > 0 ? options.max_evals : space.size());
  ProgressTracker tracker(progress, title, total, options.time_s);
  evaluator.on_trial([&](const TrialEvent& event) {
    tracker.add(event);
    if (!event.resumed && event.trial->status != db::TrialStatus::kOk) ++summary.failed;
  });
  History resumed = evaluator.resume(space);
  spdlog::info("{}: {} candidates, {} trials stored before", problem.to_string(), space.size(),
               resumed.size());

  const std::unique_ptr<Strategy> strategy = make_strategy(options.strategy, options.seed);
  const std::unique_ptr<StopCondition> stop = make_stop(options, space.size());
  const unsigned threads =
      options.compile_threads > 0 ? options.compile_threads : default_tuning_compile_threads();
  const size_t batch = options.batch > 0 ? options.batch : std::clamp<size_t>(threads, 4, 16);
  tracker.show();
  const History history = search(space, *strategy, evaluator, *stop, batch, std::move(resumed));
  progress.finish();

  if (options.vendor_candidate && evaluator.cublas_ms() && problem.dtype == Dtype::kF32) {
    database.record_trial(vendor_trial(device_id, run_id, problem, *evaluator.cublas_ms()));
  }
  const EvaluatorStats& stats = evaluator.stats();
  summary.evaluations = history.size();
  summary.resumed = stats.resumed;
  summary.measured = stats.measured;
  summary.compiled = stats.compiled;
  summary.cubins_cached = stats.cubins_cached;
  summary.cublas_ms = evaluator.cublas_ms().value_or(0);
  summary.compile_busy_s = stats.compile_busy_s;
  summary.compile_sum_s = stats.compile_sum_s;
  if (const Observation* best = history.best()) {
    if (const db::TrialRecord* trial = evaluator.trial(best->candidate)) summary.best = *trial;
  }
  summary.wall_s = seconds_since(start);
  return summary;
}

}  // namespace

SearchSpace build_search_space(const TemplateLibrary& library, const DeviceInfo& device,
                               const KernelProblem& problem, const std::vector<std::string>& templates,
                               const Pins& pins) {
  const std::vector<const KernelTemplate*> selected = select_templates(library, problem, templates);
  std::set<std::string> used_pins;
  std::vector<Space> spaces;
  for (const KernelTemplate* t : selected) {
    if (const std::string why = ineligibility(*t, problem, device.cc()); !why.empty()) {
      spdlog::info("{}", why);
      continue;
    }
    Pins own;
    for (const auto& [name, value] : pins) {
      if (t->manifest.find_parameter(name) == nullptr) continue;
      own.emplace(name, value);
      used_pins.insert(name);
    }
    Space space = Space::build(*t, device, problem, own);
    if (space.empty()) {
      spdlog::info("template {} has no valid config for {} on {}", t->manifest.name(), problem.to_string(),
                   device.name);
      continue;
    }
    spaces.push_back(std::move(space));
  }
  for (const auto& [name, value] : pins) {
    if (used_pins.count(name) == 0) {
      std::vector<std::string> names;
      for (const KernelTemplate* t : selected) names.push_back(t->manifest.name());
      throw InvalidArgumentError(fmt::format("pin {}={}: no selected template ({}) has a parameter {}", name,
                                             value, fmt::join(names, ", "), name));
    }
  }
  return SearchSpace(std::move(spaces), device, problem);
}

TuneReport tune(db::Database& database, const TuneOptions& options) {
  const auto start = Clock::now();
  if (options.problems.empty()) throw InvalidArgumentError("nothing to tune: no problem given");
  make_strategy(options.strategy, options.seed);  // an unknown name fails before the GPU is touched
  const TemplateLibrary& library =
      options.library != nullptr ? *options.library : TemplateLibrary::instance();

  WorkerOptions worker_options = options.worker;
  if (options.timeout_s > 0) worker_options.evaluate_timeout_s = options.timeout_s;
  WorkerClient worker(worker_options);
  TuneReport report;
  report.device = worker.start().device;
  report.device.nvrtc_version = rtc::nvrtc_version();  // this process compiles the candidates
  report.compile_threads =
      options.compile_threads > 0 ? options.compile_threads : default_tuning_compile_threads();
  const int64_t device_id = database.upsert_device(report.device);
  report.run_id = database.begin_run(device_id, options.command, options.strategy,
                                     db::RunClocks{report.device.clock_khz, report.device.memory_clock_khz});
  spdlog::info("run {} on {} ({}), {} problem(s), strategy {}", report.run_id, report.device.name,
               report.device.uuid, options.problems.size(), options.strategy);

  ProgressLine progress(!options.quiet);
  for (size_t i = 0; i < options.problems.size(); ++i) {
    const KernelProblem& problem = options.problems[i];
    const std::string title = fmt::format("[{}/{}] {}", i + 1, options.problems.size(), problem.to_string());
    report.problems.push_back(tune_problem(database, worker, library, device_id, report.device, report.run_id,
                                           problem, options, progress, title));
  }
  database.finish_run(report.run_id);
  report.worker_restarts = worker.restarts();
  report.wall_s = seconds_since(start);
  return report;
}

}  // namespace gemmforge::tuner
