// The tuning run: per GPU a run row and a worker per search, and per problem a search space, a resumed
// history, a strategy and a stop condition handed to search().
#include "tuner/tuner.hpp"
#include "core/eligibility.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cuda/cublas_handle.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/compiler.hpp"
#include "tuner/compile_stream.hpp"
#include "tuner/gpu_evaluator.hpp"
#include "tuner/lanes.hpp"
#include "tuner/progress_line.hpp"
#include "tuner/replay_evaluator.hpp"

namespace gemmforge::tuner {
namespace {

using Clock = std::chrono::steady_clock;

// Lanes per GPU: as many searches as asked (0: as the cores allow), but no more than each GPU has
// problems for.
size_t searches_per_gpu(size_t asked, size_t problems, size_t gpus) {
  if (asked == 0) asked = auto_searches_per_gpu(rtc::default_compile_threads(), gpus);
  const size_t per_gpu = (problems + gpus - 1) / std::max<size_t>(1, gpus);
  return std::max<size_t>(1, std::min(asked, per_gpu));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TuneReport::ProcessUsage process_usage() {
  rusage usage{};
  TuneReport::ProcessUsage out;
  if (::getrusage(RUSAGE_SELF, &usage) != 0) return out;
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  out.user_s = seconds(usage.ru_utime);
  out.system_s = seconds(usage.ru_stime);
  out.involuntary_switches = usage.ru_nivcsw;
  out.minor_faults = usage.ru_minflt;
  return out;
}

// What the process used since `start` was read.
TuneReport::ProcessUsage process_usage_since(const TuneReport::ProcessUsage& start) {
  TuneReport::ProcessUsage used = process_usage();
  used.user_s -= start.user_s;
  used.system_s -= start.system_s;
  used.involuntary_switches -= start.involuntary_switches;
  used.minor_faults -= start.minor_faults;
  return used;
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
  if (options.patience > 0)
    conditions.push_back(stop_without_improvement(options.patience, options.patience_gain));
  return stop_when_any(std::move(conditions));
}

// The progress of every problem in flight and which GPU works on which, drawn as one line.
class LanesProgress {
 public:
  LanesProgress(ProgressLine& line, std::vector<std::string> gpus, size_t problems, double budget_s)
      : line_(line),
        gpus_(std::move(gpus)),
        lane_problem_(gpus_.size(), kIdle),
        problems_(problems),
        budget_s_(budget_s) {}

  void start(size_t lane, size_t problem, size_t total) {
    std::lock_guard lock(mutex_);
    State& s = states_[problem];
    s.title = fmt::format("[{}/{}] {}", problem + 1, problems_, titles_.at(problem));
    s.total = total;
    s.start = Clock::now();
    lane_problem_[lane] = problem;
    show();
  }
  void help(size_t lane, size_t problem) {
    std::lock_guard lock(mutex_);
    lane_problem_[lane] = problem;
    show();
  }
  void idle(size_t lane) {
    std::lock_guard lock(mutex_);
    lane_problem_[lane] = kIdle;
    show();
  }
  void trial(size_t problem, const TrialEvent& event) {
    std::lock_guard lock(mutex_);
    State& s = states_[problem];
    ++s.done;
    if (!event.resumed) ++s.measured;
    const db::TrialRecord& t = *event.trial;
    if (t.status == db::TrialStatus::kOk && t.tflops && (!s.best_tflops || *t.tflops > *s.best_tflops)) {
      s.best_tflops = t.tflops;
      s.best_ratio = t.ratio_vs_cublas;
    }
    show();
  }
  void set_titles(std::vector<std::string> titles) { titles_ = std::move(titles); }

 private:
  struct State {
    std::string title;
    size_t done = 0;
    size_t measured = 0;
    size_t total = 0;
    std::optional<double> best_tflops;
    std::optional<double> best_ratio;
    Clock::time_point start = Clock::now();
  };
  static constexpr size_t kIdle = static_cast<size_t>(-1);

  ProgressState state_of(size_t problem) const {
    const State& s = states_.at(problem);
    ProgressState state;
    state.title = s.title;
    state.done = s.done;
    state.total = s.total;
    state.best_tflops = s.best_tflops;
    state.best_ratio = s.best_ratio;
    state.elapsed_s = seconds_since(s.start);
    state.eta_s =
        estimate_eta(s.measured, s.total > s.done ? s.total - s.done : 0, state.elapsed_s, budget_s_);
    return state;
  }

  void show() {
    if (gpus_.size() == 1) {
      if (lane_problem_[0] != kIdle) line_.show(state_of(lane_problem_[0]));
      return;
    }
    std::vector<std::pair<std::string, ProgressState>> lanes;
    for (size_t lane = 0; lane < gpus_.size(); ++lane) {
      lanes.emplace_back(gpus_[lane],
                         lane_problem_[lane] == kIdle ? ProgressState() : state_of(lane_problem_[lane]));
    }
    line_.show_text(format_lanes(lanes));
  }

  std::mutex mutex_;
  ProgressLine& line_;
  std::vector<std::string> gpus_;
  std::vector<size_t> lane_problem_;
  std::map<size_t, State> states_;
  std::vector<std::string> titles_;
  size_t problems_;
  double budget_s_;
};

// An evaluator that records every trial in the tuning database and can say what it did.
class RecordingEvaluator : public LaneEvaluator {
 public:
  virtual const db::TrialRecord* trial(size_t candidate) const = 0;
  virtual std::optional<double> cublas_ms() const = 0;
  virtual EvaluatorStats stats() const = 0;
};

// One lane's place in the database: its device row and its run, and what its evaluators share.
class RecordingLane : public DeviceLane {
 public:
  RecordingLane(db::Database& database, std::mutex& database_mutex, const TemplateLibrary& library)
      : database_(database), database_mutex_(database_mutex), library_(library) {}

  const DeviceInfo& device() const override { return device_; }
  void set_evaluator_options(EvaluatorOptions options) { evaluator_options_ = std::move(options); }
  void on_trial(std::function<void(const KernelProblem&, const TrialEvent&)> f) { on_trial_ = std::move(f); }
  int64_t device_id() const { return device_id_; }
  int64_t run_id() const { return run_id_; }
  virtual int ordinal() const = 0;
  virtual int worker_restarts() const { return 0; }
  /// Starts what measures and records the device and its run.
  virtual void start(const TuneOptions& options) = 0;
  /// Whether this lane recorded its GPU's run (the first lane of its GPU), rather than joining it.
  bool owns_run() const { return owns_run_; }

 protected:
  void record_device(const TuneOptions& options) {
    std::lock_guard lock(database_mutex_);
    device_id_ = database_.upsert_device(device_);
    run_id_ = database_.begin_run(device_id_, options.command, options.strategy,
                                  db::RunClocks{device_.clock_khz, device_.memory_clock_khz});
    owns_run_ = true;
  }
  // Another search on `first`'s GPU: its trials go to the same device row and run.
  void join_run(const RecordingLane& first) {
    device_id_ = first.device_id_;
    run_id_ = first.run_id_;
  }
  EvaluatorOptions options_for_run() const {
    EvaluatorOptions o = evaluator_options_;
    o.run_id = run_id_;
    return o;
  }
  void trial_event(const KernelProblem& problem, const TrialEvent& event) const {
    if (on_trial_) on_trial_(problem, event);
  }

  db::Database& database_;
  std::mutex& database_mutex_;
  const TemplateLibrary& library_;
  DeviceInfo device_;
  int64_t device_id_ = 0;
  int64_t run_id_ = 0;
  bool owns_run_ = false;
  EvaluatorOptions evaluator_options_;
  std::function<void(const KernelProblem&, const TrialEvent&)> on_trial_;
};

// The evaluator of a GPU lane: the GpuEvaluator of one problem on that GPU's worker.
class GpuLaneEvaluator : public RecordingEvaluator {
 public:
  template <class... Args>
  explicit GpuLaneEvaluator(Args&&... args) : evaluator_(std::forward<Args>(args)...) {}
  History resume(const SearchSpace& space) override { return evaluator_.resume(space); }
  std::vector<Observation> evaluate(const SearchSpace& space,
                                    const std::vector<size_t>& candidates) override {
    return evaluator_.evaluate(space, candidates);
  }
  void prefetch(const SearchSpace& space, const std::vector<size_t>& candidates) override {
    evaluator_.prefetch(space, candidates);
  }
  void note_best(double ms) override { evaluator_.note_best(ms); }
  void after_next_submission(std::function<void()> action) override {
    evaluator_.after_next_submission(std::move(action));
  }
  const db::TrialRecord* trial(size_t candidate) const override { return evaluator_.trial(candidate); }
  std::optional<double> cublas_ms() const override { return evaluator_.cublas_ms(); }
  EvaluatorStats stats() const override { return evaluator_.stats(); }
  GpuEvaluator& gpu() { return evaluator_; }

 private:
  GpuEvaluator evaluator_;
};

// One search on a GPU: its worker process; its evaluators share the compile pool and the database
// connection with every other lane, and the GPU with the other lanes of the GPU (see gpu_mutex).
class GpuLane : public RecordingLane {
 public:
  GpuLane(WorkerOptions worker, db::Database& database, std::mutex& database_mutex,
          const TemplateLibrary& library)
      : RecordingLane(database, database_mutex, library), worker_(std::move(worker)) {}

  // Starts the worker process without waiting for it to set CUDA up.
  void launch() { worker_.launch(); }
  void start(const TuneOptions& options) override {
    start_worker();
    record_device(options);
  }
  // A further search on the GPU of `first` (started): a worker of its own, the run of `first`.
  void start_beside(const GpuLane& first) {
    start_worker();
    if (device_.uuid != first.device_.uuid) {
      throw InternalError(fmt::format("a second worker for GPU {} measures on {} ({}), the first on {} ({})",
                                      ordinal(), device_.name, device_.uuid, first.device_.name,
                                      first.device_.uuid));
    }
    join_run(first);
  }
  int gpu() const override { return ordinal(); }

  std::unique_ptr<LaneEvaluator> open(const SearchSpace& space) override {
    auto evaluator = std::make_unique<GpuLaneEvaluator>(database_, worker_, library_, device_id_, device_,
                                                        space.problem(), options_for_run());
    const KernelProblem problem = space.problem();
    evaluator->gpu().on_trial([this, problem](const TrialEvent& event) { trial_event(problem, event); });
    return evaluator;
  }

  int worker_restarts() const override { return worker_.restarts(); }
  int ordinal() const override { return worker_.options().device; }

 private:
  void start_worker() {
    device_ = worker_.start().device;
    device_.nvrtc_version = rtc::nvrtc_version();  // this process compiles the candidates
  }

  WorkerClient worker_;
};

// A config's identity whatever order its parameters were written in.
std::string canonical_key(const std::string& template_name, const Config& config) {
  Config::Values values = config.values();
  std::sort(values.begin(), values.end());
  return template_name + "/" + Config(template_name, std::move(values)).key();
}

// The evaluator of a replayed lane: answers from the recorded trials of the problem and records them as
// this run's trials, exactly as a GPU's would be recorded; nothing is compiled.
class ReplayLaneEvaluator : public RecordingEvaluator {
 public:
  ReplayLaneEvaluator(db::Database& database, std::mutex& database_mutex, const TemplateLibrary& library,
                      const RecordedTable* table, int64_t device_id, const KernelProblem& problem,
                      EvaluatorOptions options, std::function<void(const TrialEvent&)> on_trial)
      : database_(database),
        database_mutex_(database_mutex),
        library_(library),
        device_id_(device_id),
        problem_(problem),
        options_(std::move(options)),
        on_trial_(std::move(on_trial)) {
    if (table != nullptr) {
      for (const db::TrialRecord& t : table->trials) {
        if (t.template_name == db::kVendorTemplate) {
          if (t.time_median_ms) cublas_ms_ = t.time_median_ms;
          continue;
        }
        try {
          recorded_.emplace(canonical_key(t.template_name, Config::parse_key(t.template_name, t.config_key)),
                            t);
        } catch (const InvalidArgumentError&) {
        }
        if (!cublas_ms_ && t.cublas_ms) cublas_ms_ = t.cublas_ms;
      }
    }
    std::lock_guard lock(database_mutex_);
    if (const std::optional<int64_t> id = database_.find_problem(problem_)) {
      for (db::TrialRecord& t : database_.trials(device_id_, *id)) {
        stored_.insert_or_assign(t.template_hash + "\n" + t.config_key, std::move(t));
      }
    }
  }

  History resume(const SearchSpace& space) override {
    std::vector<const db::TrialRecord*> stored;
    for (const auto& [key, trial] : stored_) stored.push_back(&trial);
    std::sort(stored.begin(), stored.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
    History history;
    for (const db::TrialRecord* t : stored) {
      const KernelTemplate* kernel_template = library_.find(t->template_name);
      if (kernel_template == nullptr || kernel_template->hash != t->template_hash) continue;
      int64_t index = -1;
      try {
        index = space.find(Config::parse_key(t->template_name, t->config_key));
      } catch (const InvalidArgumentError&) {
      }
      if (index < 0 || by_candidate_.count(static_cast<size_t>(index)) != 0) continue;
      ++stats_.resumed;
      history.add(observe(static_cast<size_t>(index), *t, true));
    }
    return history;
  }

  std::vector<Observation> evaluate(const SearchSpace& space,
                                    const std::vector<size_t>& candidates) override {
    std::vector<Observation> out;
    for (size_t index : candidates) {
      if (auto it = by_candidate_.find(index); it != by_candidate_.end()) {
        out.push_back(observation_from(index, it->second));
        continue;
      }
      const KernelTemplate& kernel_template = space.space(index).kernel_template();
      const Config config = space.config(index);
      const std::string key = config.key();
      if (auto it = stored_.find(kernel_template.hash + "\n" + key); it != stored_.end()) {
        ++stats_.resumed;
        out.push_back(observe(index, it->second, true));
        continue;
      }
      db::TrialRecord t;
      auto recorded = recorded_.find(canonical_key(kernel_template.manifest.name(), config));
      if (recorded != recorded_.end()) {
        t = recorded->second;
      } else {
        t.status = db::TrialStatus::kInvalid;
        t.reason = "not in the replayed table";
      }
      t.id = 0;
      t.run_id = options_.run_id;
      t.device_id = device_id_;
      t.problem = problem_;
      t.template_name = kernel_template.manifest.name();
      t.template_hash = kernel_template.hash;
      t.config_key = key;
      {
        std::lock_guard lock(database_mutex_);
        t.id = database_.record_trial(t);
      }
      ++stats_.measured;
      stored_.insert_or_assign(t.template_hash + "\n" + key, t);
      out.push_back(observe(index, t, false));
    }
    return out;
  }

  const db::TrialRecord* trial(size_t candidate) const override {
    auto it = by_candidate_.find(candidate);
    return it == by_candidate_.end() ? nullptr : &it->second;
  }
  std::optional<double> cublas_ms() const override { return cublas_ms_; }
  EvaluatorStats stats() const override { return stats_; }

 private:
  static Observation observation_from(size_t index, const db::TrialRecord& t) {
    Observation o;
    o.candidate = index;
    o.outcome = outcome_of(t.status);
    if (o.ok() && t.time_median_ms) o.time_ms = *t.time_median_ms;
    o.registers = static_cast<int>(t.registers.value_or(0));
    o.occupancy_blocks = static_cast<int>(t.occupancy_blocks.value_or(0));
    return o;
  }
  Observation observe(size_t index, const db::TrialRecord& t, bool resumed) {
    const db::TrialRecord& kept = by_candidate_.insert_or_assign(index, t).first->second;
    if (on_trial_) on_trial_(TrialEvent{index, &kept, resumed});
    return observation_from(index, kept);
  }

  db::Database& database_;
  std::mutex& database_mutex_;
  const TemplateLibrary& library_;
  int64_t device_id_;
  KernelProblem problem_;
  EvaluatorOptions options_;
  std::function<void(const TrialEvent&)> on_trial_;
  std::map<std::string, db::TrialRecord> recorded_;  // by canonical template/config key
  std::map<std::string, db::TrialRecord> stored_;    // by template hash and config key
  std::map<size_t, db::TrialRecord> by_candidate_;
  std::optional<double> cublas_ms_;
  EvaluatorStats stats_;
};

// A GPU replayed from recorded tables: for testing the whole tuning path, sharding and merging included,
// on machines without a GPU.
class ReplayLane : public RecordingLane {
 public:
  ReplayLane(const std::vector<RecordedTable>& tables, db::Database& database, std::mutex& database_mutex,
             const TemplateLibrary& library)
      : RecordingLane(database, database_mutex, library), tables_(tables) {}

  void start(const TuneOptions& options) override {
    device_ = tables_.front().device;
    record_device(options);
  }
  const RecordedTable* table(const KernelProblem& problem) const {
    for (const RecordedTable& t : tables_) {
      if (t.problem == problem && t.device.uuid == device_.uuid) return &t;
    }
    return nullptr;
  }
  std::unique_ptr<LaneEvaluator> open(const SearchSpace& space) override {
    const KernelProblem problem = space.problem();
    return std::make_unique<ReplayLaneEvaluator>(
        database_, database_mutex_, library_, table(problem), device_id_, problem, options_for_run(),
        [this, problem](const TrialEvent& event) { trial_event(problem, event); });
  }
  int ordinal() const override { return -1; }  // no CUDA device

 private:
  const std::vector<RecordedTable>& tables_;
};

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

size_t auto_searches_per_gpu(unsigned cores, size_t gpus) {
  return std::clamp<size_t>(cores / (3 * std::max<size_t>(1, gpus)), 2, 6);
}

TuneReport tune(db::Database& database, const TuneOptions& options) {
  const auto start = Clock::now();
  const TuneReport::ProcessUsage usage_at_start = process_usage();
  if (options.problems.empty()) throw InvalidArgumentError("nothing to tune: no problem given");
  make_strategy(options.strategy, options.seed);  // an unknown name fails before the GPU is touched
  const TemplateLibrary& library =
      options.library != nullptr ? *options.library : TemplateLibrary::instance();
  // A problem named twice is tuned once.
  std::vector<KernelProblem> problems;
  for (const KernelProblem& p : options.problems) {
    if (std::find(problems.begin(), problems.end(), p) == problems.end()) problems.push_back(p);
  }

  std::vector<int> ordinals = options.devices;
  if (ordinals.empty()) ordinals.push_back(options.worker.device);
  std::mutex database_mutex;
  // The lanes: `searches` per GPU, the first of each GPU recording its run. Lanes of one GPU take turns
  // on it through its mutex.
  std::vector<std::unique_ptr<RecordingLane>> gpus;
  std::map<int, std::mutex> gpu_mutexes;
  const size_t searches = searches_per_gpu(options.searches_per_gpu, problems.size(), ordinals.size());
  if (options.replay != nullptr) {
    if (options.replay->empty()) throw InvalidArgumentError("the replayed document holds no trial table");
    gpus.push_back(std::make_unique<ReplayLane>(*options.replay, database, database_mutex, library));
    gpus.front()->start(options);
  } else {
    // Every worker is launched before any is waited for, so they set CUDA up at the same time. On this
    // thread: a worker is killed when the thread that started it ends (PR_SET_PDEATHSIG).
    std::vector<GpuLane*> lanes_of_gpus;
    for (int ordinal : ordinals) {
      WorkerOptions worker_options = options.worker;
      worker_options.device = ordinal;
      if (options.timeout_s > 0) worker_options.evaluate_timeout_s = options.timeout_s;
      for (size_t s = 0; s < searches; ++s) {
        auto lane = std::make_unique<GpuLane>(worker_options, database, database_mutex, library);
        lane->launch();
        lanes_of_gpus.push_back(lane.get());
        gpus.push_back(std::move(lane));
      }
    }
    for (size_t i = 0; i < lanes_of_gpus.size(); ++i) {
      if (i % searches == 0) {
        lanes_of_gpus[i]->start(options);
      } else {
        lanes_of_gpus[i]->start_beside(*lanes_of_gpus[i - i % searches]);
      }
    }
  }

  TuneReport report;
  report.device = gpus.front()->device();
  report.run_id = gpus.front()->run_id();
  report.searches_per_gpu = options.replay != nullptr ? 1 : searches;
  // By default every core compiles but one per GPU, left to its worker's timing loop.
  const unsigned cores = rtc::default_compile_threads();
  const auto physical = static_cast<unsigned>(ordinals.size());
  report.compile_threads = options.compile_threads > 0
                               ? options.compile_threads
                               : std::max(1u, cores > physical ? cores - physical : 1u);
  auto compile_service = std::make_shared<rtc::CompileService>(report.compile_threads);

  const std::vector<db::DeviceRecord> known_devices = database.devices();
  std::vector<DeviceLane*> lanes;
  std::vector<std::string> names;
  for (auto& gpu : gpus) {
    EvaluatorOptions evaluator_options;
    evaluator_options.timing = options.timing;
    evaluator_options.seed = options.seed;
    evaluator_options.error_bound = options.error_bound;
    evaluator_options.allow_spills = options.allow_spills;
    evaluator_options.compile_threads = options.compile_threads;
    evaluator_options.compile_service = compile_service;
    evaluator_options.database_mutex = &database_mutex;
    if (searches > 1 && gpu->ordinal() >= 0) evaluator_options.gpu_mutex = &gpu_mutexes[gpu->ordinal()];
    // Every GPU of the model the database knows, in this run or before: their trials are this one's.
    for (const db::DeviceRecord& other : known_devices) {
      if (other.info.name == gpu->device().name && other.id != gpu->device_id()) {
        evaluator_options.peer_device_ids.push_back(other.id);
      }
    }
    gpu->set_evaluator_options(std::move(evaluator_options));
    lanes.push_back(gpu.get());
    names.push_back(gpu->ordinal() < 0 ? std::string("replay")
                    : searches == 1
                        ? fmt::format("GPU{}", gpu->ordinal())
                        : fmt::format("GPU{}.{}", gpu->ordinal(), (lanes.size() - 1) % searches + 1));
    if (!gpu->owns_run()) continue;
    spdlog::info("run {} on GPU {}: {} ({}), {} problem(s), strategy {}", gpu->run_id(), gpu->ordinal(),
                 gpu->device().name, gpu->device().uuid, problems.size(), options.strategy);
  }

  ProgressLine line(!options.quiet);
  LanesProgress progress(line, names, problems.size(), options.time_s);
  std::vector<std::string> titles;
  for (const KernelProblem& p : problems) titles.push_back(p.to_string());
  progress.set_titles(titles);
  auto problem_index = [&](const KernelProblem& p) {
    return static_cast<size_t>(std::find(problems.begin(), problems.end(), p) - problems.begin());
  };
  for (auto& gpu : gpus) {
    gpu->on_trial(
        [&](const KernelProblem& p, const TrialEvent& event) { progress.trial(problem_index(p), event); });
  }

  const unsigned threads = report.compile_threads;
  LaneSearch search;
  search.space = [&](const DeviceInfo& device, const KernelProblem& problem) {
    if (options.replay != nullptr) {
      // The space the table was recorded over; a problem without a table has none.
      const RecordedTable* table = static_cast<ReplayLane&>(*gpus.front()).table(problem);
      if (table != nullptr) return recorded_space(*table, library);
      spdlog::warn("{}: the replayed document has no table of this problem", problem.to_string());
      return SearchSpace({}, device, problem);
    }
    SearchSpace space = build_search_space(library, device, problem, options.templates, options.pins);
    if (space.empty()) {
      spdlog::warn("{}: no template has a candidate for this problem on {} (see gemmforge space)",
                   problem.to_string(), device.name);
    }
    return space;
  };
  search.strategy = [&] {
    std::unique_ptr<Strategy> strategy = make_strategy(options.strategy, options.seed);
    if (options.first_candidates) strategy = measure_first(options.first_candidates, std::move(strategy));
    return strategy;
  };
  search.stop = [&](const SearchSpace& space) { return make_stop(options, space.size()); };
  search.batch = options.batch > 0 ? options.batch : std::clamp<size_t>(threads, 4, 16);
  search.compile_ahead_problems = options.compile_ahead_problems;
  // Searches sharing a GPU compile while the others measure, so their own batches keep the threads busy:
  // guesses, half of which go unused, would only take their time (the fp32 suite on an H100 with 16
  // cores and four searches: 59.5 s without, 65.5 s with one batch's worth, the same kernels found).
  search.guessed_batches = options.guessed_batches >= 0 ? static_cast<size_t>(options.guessed_batches)
                           : searches > 1               ? 0
                                                        : 2;

  LaneEvents events;
  events.started = [&](size_t lane, size_t problem, const SearchSpace& space, LaneEvaluator&) {
    const size_t total = std::min(space.size(), options.max_evals > 0 ? options.max_evals : space.size());
    progress.start(lane, problem, total);
  };
  events.helping = [&](size_t lane, size_t problem) { progress.help(lane, problem); };
  events.stopped_helping = [&](size_t lane) { progress.idle(lane); };
  events.finished = [&](size_t lane, const LaneResult&) { progress.idle(lane); };

  // The costliest problems start first, so the last ones to finish are short.
  std::vector<double> costs;
  for (const KernelProblem& p : problems) costs.push_back(p.flops());
  std::vector<LaneResult> results = tune_on_lanes(lanes, problems, costs, search, events);
  line.finish();

  std::map<int, Clock::time_point> first_measured;  // by GPU ordinal
  for (LaneResult& r : results) {
    const KernelProblem& problem = problems[r.problem];
    ProblemSummary summary;
    summary.problem = problem;
    summary.device = r.model;
    for (size_t lane : r.lanes) summary.gpus.push_back(gpus[lane]->ordinal());
    summary.candidates = r.space ? r.space->size() : 0;
    summary.evaluations = r.history.size();
    summary.wall_s = r.wall_s;
    RecordingLane& owner = *gpus[r.owner];
    for (size_t e = 0; e < r.evaluators.size(); ++e) {
      const EvaluatorStats stats = static_cast<RecordingEvaluator&>(*r.evaluators[e]).stats();
      if (stats.first_measured) {
        const int gpu = gpus[r.lanes[e]]->ordinal();
        const auto known = first_measured.find(gpu);
        if (known == first_measured.end() || *stats.first_measured < known->second)
          first_measured[gpu] = *stats.first_measured;
      }
      summary.resumed += stats.resumed;
      summary.measured += stats.measured;
      summary.compiled += stats.compiled;
      summary.cubins_cached += stats.cubins_cached;
      summary.compile_busy_s += stats.compile_busy_s;
      summary.compile_sum_s += stats.compile_sum_s;
      summary.measure_s += stats.measure_s;
      summary.measure_phases += stats.phases;
    }
    for (size_t i = r.resumed; i < r.history.size(); ++i)
      summary.failed += r.history.observations()[i].ok() ? 0 : 1;
    if (!r.evaluators.empty()) {
      const RecordingEvaluator& own = static_cast<RecordingEvaluator&>(*r.evaluators.front());
      summary.cublas_ms = own.cublas_ms().value_or(0);
      if (options.vendor_candidate && own.cublas_ms() && problem.dtype == Dtype::kF32) {
        std::lock_guard lock(database_mutex);
        database.record_trial(vendor_trial(owner.device_id(), owner.run_id(), problem, *own.cublas_ms()));
      }
      if (const Observation* best = r.history.best()) {
        for (auto& evaluator : r.evaluators) {
          const RecordingEvaluator& e = static_cast<RecordingEvaluator&>(*evaluator);
          if (const db::TrialRecord* trial = e.trial(best->candidate)) {
            summary.best = *trial;
            break;
          }
        }
      }
    }
    report.problems.push_back(std::move(summary));
  }
  for (auto& gpu : gpus) {
    report.worker_restarts += gpu->worker_restarts();
    if (gpu->owns_run()) {
      database.finish_run(gpu->run_id());
      report.gpus.push_back(TuneReport::Gpu{gpu->ordinal(), gpu->device(), gpu->run_id(), 0});
    }
    report.gpus.back().worker_restarts += gpu->worker_restarts();  // the run's lanes follow it
  }
  for (TuneReport::Gpu& gpu : report.gpus) {
    if (const auto first = first_measured.find(gpu.ordinal); first != first_measured.end())
      gpu.first_measured_s = std::chrono::duration<double>(first->second - start).count();
  }
  const rtc::CompileServiceStats compile = compile_service->stats();
  report.kernels_compiled = compile.compiled;
  report.compile_busy_s = compile.busy_s;
  report.compile_sum_s = compile.compile_sum_s;
  report.kernels_compiled_ahead = compile.ahead;
  report.kernels_ahead_used = compile.ahead_used;
  report.compile_cpu_s = compile.compile_cpu_s;
  for (const ProblemSummary& p : report.problems) {
    report.measure_s += p.measure_s;
    report.measure_phases += p.measure_phases;
  }
  report.process = process_usage_since(usage_at_start);
  report.wall_s = seconds_since(start);
  return report;
}

}  // namespace gemmforge::tuner
