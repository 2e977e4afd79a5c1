// Evaluating a batch: resume from stored trials, reuse cached cubins, compile the rest while measuring
// what is ready, and record each outcome the moment it is known.
#include "tuner/gpu_evaluator.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"
#include "tuner/compile_stream.hpp"

namespace gemmforge::tuner {

struct GpuEvaluator::Candidate {
  size_t index = 0;
  const KernelTemplate* kernel_template = nullptr;
  Config config;
  std::string config_key;
  std::string cubin_key;
};

// A loaded-or-compiled kernel image and what ptxas said about it.
struct GpuEvaluator::Compiled {
  const std::vector<char>* cubin = nullptr;
  std::optional<int64_t> registers;
  std::optional<int64_t> spill_bytes;
  std::optional<int64_t> static_smem_bytes;
  std::optional<double> compile_ms;
};

namespace {

constexpr size_t kMaxLogInReason = 2000;

// A candidate whose first repetitions all ran this much slower than the best so far is timed no further:
// three repetitions place it well enough for the search and the model, and the GPU turns to the next.
// Anything that could become the best is timed in full.
constexpr double kClearlyBeaten = 1.25;

std::string stored_key(const std::string& template_hash, const std::string& config_key) {
  return template_hash + "\n" + config_key;
}

// TrialStatus and Outcome share their names, which is what the database stores.
db::TrialStatus status_of(Outcome outcome) {
  return db::parse_trial_status(to_string(outcome));
}

Outcome outcome_of(db::TrialStatus status) {
  for (Outcome o : {Outcome::kOk, Outcome::kWrongResult, Outcome::kCompileError, Outcome::kLaunchError,
                    Outcome::kCrashed, Outcome::kTimeout, Outcome::kSpills, Outcome::kInvalid}) {
    if (std::string(to_string(o)) == db::to_string(status)) return o;
  }
  throw InternalError(fmt::format("trial status '{}' has no tuner outcome", db::to_string(status)));
}

Observation observation_of(size_t candidate, const db::TrialRecord& trial) {
  Observation o;
  o.candidate = candidate;
  o.outcome = outcome_of(trial.status);
  if (o.ok() && trial.time_median_ms) o.time_ms = *trial.time_median_ms;
  o.registers = static_cast<int>(trial.registers.value_or(0));
  o.occupancy_blocks = static_cast<int>(trial.occupancy_blocks.value_or(0));
  return o;
}

// Spill traffic per thread as ptxas reports it: bytes of spill stores plus spill loads.
int64_t spill_bytes(const rtc::ResourceUsage& usage) {
  return usage.spill_store_bytes + usage.spill_load_bytes;
}

std::string compile_failure(const rtc::CompileResult& result) {
  std::string log = result.log;
  if (log.size() > kMaxLogInReason) log = log.substr(0, kMaxLogInReason) + " [...]";
  return log.empty() ? result.error : fmt::format("{}\n{}", result.error, log);
}

}  // namespace

GpuEvaluator::GpuEvaluator(db::Database& database, WorkerClient& worker, const TemplateLibrary& library,
                           int64_t device_id, const DeviceInfo& device, const KernelProblem& problem,
                           EvaluatorOptions options)
    : database_(database),
      worker_(worker),
      library_(library),
      device_id_(device_id),
      device_(device),
      problem_(problem),
      options_(std::move(options)),
      compile_service_(options_.compile_service) {
  if (!compile_service_) {
    compile_service_ = std::make_shared<rtc::CompileService>(
        options_.compile_threads > 0 ? options_.compile_threads : default_tuning_compile_threads());
  }
  load_stored_trials();
}

std::unique_lock<std::mutex> GpuEvaluator::lock_database() const {
  return options_.database_mutex != nullptr ? std::unique_lock<std::mutex>(*options_.database_mutex)
                                            : std::unique_lock<std::mutex>();
}

void GpuEvaluator::ensure_problem_set() {
  const std::optional<SetProblemRequest>& current = worker_.problem();
  if (current && current->problem == problem_ && current->seed == options_.seed && cublas_measured_) return;
  SetProblemRequest request;
  request.problem = problem_;
  request.seed = options_.seed;
  request.timing = options_.timing;
  const auto start = std::chrono::steady_clock::now();
  const Timing cublas = worker_.set_problem(request);
  spdlog::debug("{} set up on GPU {} in {:.0f} ms (cuBLAS {:.4f} ms)", problem_.to_string(),
                worker_.options().device,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count(),
                cublas.median_ms);
  // The first measurement stays the yardstick: ratios of one evaluator's trials compare with one figure.
  if (!cublas_measured_) cublas_ms_ = cublas.median_ms;
  cublas_measured_ = true;
}

const db::TrialRecord* GpuEvaluator::trial(size_t candidate) const {
  auto it = by_candidate_.find(candidate);
  return it == by_candidate_.end() ? nullptr : &it->second;
}

void GpuEvaluator::load_stored_trials() {
  const auto lock = lock_database();
  const std::optional<int64_t> problem_id = database_.find_problem(problem_);
  if (!problem_id) return;
  // This device's own trials last: of one config measured on several GPUs of the model, its own stays.
  std::vector<int64_t> devices = options_.peer_device_ids;
  devices.push_back(device_id_);
  for (int64_t device_id : devices) {
    for (db::TrialRecord& t : database_.trials(device_id, *problem_id)) {
      if (device_id == device_id_ && !cublas_ms_ && t.cublas_ms) cublas_ms_ = t.cublas_ms;
      std::string key = stored_key(t.template_hash, t.config_key);
      stored_.insert_or_assign(std::move(key), std::move(t));
    }
  }
}

const db::TrialRecord* GpuEvaluator::find_stored(const Candidate& candidate) {
  const std::string key = stored_key(candidate.kernel_template->hash, candidate.config_key);
  auto it = stored_.find(key);
  if (it != stored_.end()) return &it->second;
  // Another tuner on the same database may have recorded it since this one started.
  {
    const auto lock = lock_database();
    const std::optional<int64_t> problem_id = database_.find_problem(problem_);
    if (!problem_id) return nullptr;
    std::vector<int64_t> devices = options_.peer_device_ids;
    devices.push_back(device_id_);
    if (std::none_of(devices.begin(), devices.end(), [&](int64_t device_id) {
          return database_.has_trial(device_id, *problem_id, candidate.kernel_template->hash,
                                     candidate.config_key);
        })) {
      return nullptr;
    }
  }
  load_stored_trials();
  it = stored_.find(key);
  return it == stored_.end() ? nullptr : &it->second;
}

db::TrialRecord GpuEvaluator::new_trial(const Candidate& candidate, Outcome outcome,
                                        std::string reason) const {
  db::TrialRecord t;
  t.run_id = options_.run_id;
  t.device_id = device_id_;
  t.problem = problem_;
  t.template_name = candidate.kernel_template->manifest.name();
  t.template_hash = candidate.kernel_template->hash;
  t.config_key = candidate.config_key;
  t.status = status_of(outcome);
  t.reason = std::move(reason);
  t.cublas_ms = cublas_ms_;
  return t;
}

void GpuEvaluator::record(const Candidate& candidate, db::TrialRecord trial, bool resumed) {
  if (!resumed) {
    trial.id = [&] {
      const auto lock = lock_database();
      return database_.record_trial(trial);
    }();
    stored_.insert_or_assign(stored_key(trial.template_hash, trial.config_key), trial);
  }
  if (trial.status == db::TrialStatus::kOk && trial.time_median_ms)
    best_ms_ = std::min(best_ms_.value_or(*trial.time_median_ms), *trial.time_median_ms);
  const db::TrialRecord& kept =
      by_candidate_.insert_or_assign(candidate.index, std::move(trial)).first->second;
  if (on_trial_) on_trial_(TrialEvent{candidate.index, &kept, resumed});
}

void GpuEvaluator::measure(const Candidate& candidate, const Compiled& compiled) {
  if (compiled.spill_bytes.value_or(0) > 0 && !options_.allow_spills) {
    db::TrialRecord t = new_trial(
        candidate, Outcome::kSpills,
        fmt::format(
            "ptxas reports {} bytes of spill traffic per thread; skipped (--allow-spills measures it)",
            *compiled.spill_bytes));
    t.registers = compiled.registers;
    t.spill_bytes = compiled.spill_bytes;
    t.compile_ms = compiled.compile_ms;
    ++stats_.skipped;
    record(candidate, std::move(t));
    return;
  }
  EvaluateRequest request;
  request.template_name = candidate.kernel_template->manifest.name();
  request.template_hash = candidate.kernel_template->hash;
  request.config_key = candidate.config_key;
  request.timing = options_.timing;
  if (best_ms_) request.timing.beaten_above_ms = *best_ms_ * kClearlyBeaten;
  request.error_bound = options_.error_bound;
  request.cubin = *compiled.cubin;
  const Measurement m = [&] {
    std::unique_lock<std::mutex> gpu;
    if (options_.gpu_mutex != nullptr) gpu = std::unique_lock(*options_.gpu_mutex);
    ensure_problem_set();
    const auto start = std::chrono::steady_clock::now();
    if (!stats_.first_measured) stats_.first_measured = start;
    Measurement measurement = worker_.evaluate(request);
    stats_.measure_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return measurement;
  }();
  ++stats_.measured;
  stats_.phases += m.phases;

  db::TrialRecord t = new_trial(candidate, m.outcome, m.reason);
  if (m.outcome == Outcome::kOk) {
    t.time_median_ms = m.timing.median_ms;
    t.time_min_ms = m.timing.min_ms;
    t.time_max_ms = m.timing.max_ms;
    t.repetitions = m.timing.repetitions;
    t.tflops = problem_.flops() / m.timing.median_ms / 1e9;
    t.ratio_vs_cublas = *cublas_ms_ / m.timing.median_ms;
  }
  t.registers = m.registers > 0 ? std::optional<int64_t>(m.registers) : compiled.registers;
  if (m.threads > 0) {  // the worker loaded the kernel and described its resources
    t.smem_bytes = m.smem_bytes + compiled.static_smem_bytes.value_or(0);
    t.occupancy_blocks = m.occupancy_blocks;
    t.occupancy_pct = m.occupancy_pct;
  }
  if ((m.outcome == Outcome::kOk || m.outcome == Outcome::kWrongResult) && std::isfinite(m.rel_error))
    t.rel_error = m.rel_error;
  t.spill_bytes = compiled.spill_bytes;
  t.compile_ms = compiled.compile_ms;
  record(candidate, std::move(t));
}

History GpuEvaluator::resume(const SearchSpace& space) {
  std::vector<const db::TrialRecord*> stored;
  for (const auto& [key, trial] : stored_) stored.push_back(&trial);
  std::sort(stored.begin(), stored.end(), [](const auto* a, const auto* b) { return a->id < b->id; });
  History history;
  for (const db::TrialRecord* trial : stored) {
    const KernelTemplate* kernel_template = library_.find(trial->template_name);
    if (kernel_template == nullptr || kernel_template->hash != trial->template_hash) continue;
    Candidate c;
    c.kernel_template = kernel_template;
    try {
      c.config = Config::parse_key(trial->template_name, trial->config_key);
    } catch (const InvalidArgumentError&) {
      continue;  // an imported key this build cannot read: not a candidate of this space
    }
    const int64_t index = space.find(c.config);
    if (index < 0 || by_candidate_.count(static_cast<size_t>(index)) != 0) continue;
    c.index = static_cast<size_t>(index);
    c.config_key = trial->config_key;
    ++stats_.resumed;
    record(c, *trial, /*resumed=*/true);
    history.add(observation_of(c.index, *trial));
  }
  return history;
}

std::optional<std::string> GpuEvaluator::spec_key(const Candidate& candidate, rtc::KernelSpec& spec,
                                                  std::string& error) const {
  try {
    spec = rtc::make_spec(*candidate.kernel_template, candidate.config, problem_, device_.arch(), &device_);
  } catch (const InvalidArgumentError& e) {
    error = e.what();
    return std::nullopt;
  }
  return spec.cubin_key(library_);
}

void GpuEvaluator::prefetch(const SearchSpace& space, const std::vector<size_t>& candidates) {
  if (space.problem() != problem_) return;
  for (size_t index : candidates) {
    if (index >= space.size() || by_candidate_.count(index) != 0) continue;
    Candidate c;
    c.index = index;
    c.kernel_template = &space.space(index).kernel_template();
    c.config = space.config(index);
    c.config_key = c.config.key();
    if (stored_.count(stored_key(c.kernel_template->hash, c.config_key)) != 0) continue;
    rtc::KernelSpec spec;
    std::string error;
    const std::optional<std::string> key = spec_key(c, spec, error);
    if (!key || compile_service_->known(*key)) continue;
    {
      const auto lock = lock_database();
      if (database_.get_cubin(*key)) continue;
    }
    compile_service_->ahead(*key, spec.request(library_));
  }
}

std::vector<Observation> GpuEvaluator::evaluate(const SearchSpace& space,
                                                const std::vector<size_t>& candidates) {
  if (space.problem() != problem_) {
    throw InternalError(fmt::format("an evaluator of {} was asked about {}", problem_.to_string(),
                                    space.problem().to_string()));
  }
  const double batch_start_s = compile_service_->now_s();
  std::vector<std::pair<Candidate, Compiled>> cached;
  std::vector<db::CubinRecord> cached_cubins;
  cached_cubins.reserve(candidates.size());  // Compiled points into it
  std::vector<rtc::CompileService::Ticket> tickets;
  std::vector<std::string> arch_of;
  std::vector<std::vector<Candidate>> waiting;  // per ticket: candidates sharing its cubin
  std::map<std::string, size_t> ticket_of;      // cubin key -> ticket

  for (size_t index : candidates) {
    if (by_candidate_.count(index) != 0) continue;  // asked twice: the first answer stands
    Candidate c;
    c.index = index;
    c.kernel_template = &space.space(index).kernel_template();
    c.config = space.config(index);
    c.config_key = c.config.key();
    if (const db::TrialRecord* stored = find_stored(c)) {
      ++stats_.resumed;
      record(c, *stored, /*resumed=*/true);
      continue;
    }
    rtc::KernelSpec spec;
    std::string error;
    const std::optional<std::string> key = spec_key(c, spec, error);
    if (!key) {
      ++stats_.skipped;
      record(c, new_trial(c, Outcome::kInvalid, error));
      continue;
    }
    c.cubin_key = *key;
    if (auto it = ticket_of.find(c.cubin_key); it != ticket_of.end()) {
      waiting[it->second].push_back(std::move(c));
      continue;
    }
    // A kernel compiling or compiled for another evaluator, or ahead of this search, is not looked up.
    if (!compile_service_->known(c.cubin_key)) {
      std::optional<db::CubinRecord> cubin;
      {
        const auto lock = lock_database();
        cubin = database_.get_cubin(c.cubin_key);
      }
      if (cubin) {
        ++stats_.cubins_cached;
        cached_cubins.push_back(std::move(*cubin));
        const db::CubinRecord& r = cached_cubins.back();
        cached.emplace_back(
            std::move(c), Compiled{&r.cubin, r.registers, r.spill_bytes, r.static_smem_bytes, r.compile_ms});
        continue;
      }
    }
    ticket_of.emplace(c.cubin_key, tickets.size());
    tickets.push_back(
        compile_service_->submit(c.cubin_key, spec.request(library_), rtc::CompilePriority::kNow));
    arch_of.push_back(spec.arch);
    waiting.push_back({std::move(c)});
  }

  if (after_submission_) std::exchange(after_submission_, nullptr)();
  // Measuring what is cached first keeps the GPU busy while the pool compiles the rest.
  double batch_end_s = batch_start_s;
  for (const auto& [candidate, compiled] : cached) measure(candidate, compiled);
  std::vector<bool> taken(tickets.size(), false);
  while (std::optional<size_t> done = compile_service_->wait_any(tickets, taken)) {
    taken[*done] = true;
    const rtc::CompileService::Ticket& ticket = tickets[*done];
    const rtc::CompileResult& result = rtc::CompileService::result(ticket);
    const double finished_s = compile_service_->finished_at(ticket).value_or(batch_start_s);
    if (finished_s <= batch_start_s) {
      ++stats_.compiled_ahead;  // compiled before this batch asked for it
    } else {
      batch_end_s = std::max(batch_end_s, finished_s);
    }
    ++stats_.compiled;
    stats_.compile_sum_s += result.compile_ms / 1e3;
    const std::vector<Candidate>& sharing = waiting[*done];
    if (!result.ok) {
      ++stats_.compile_failures;
      spdlog::debug("{} {}: {}", sharing.front().kernel_template->manifest.name(), sharing.front().config_key,
                    result.error);
      for (const Candidate& c : sharing) {
        db::TrialRecord t = new_trial(c, Outcome::kCompileError, compile_failure(result));
        t.compile_ms = result.compile_ms;
        ++stats_.skipped;
        record(c, std::move(t));
      }
      continue;
    }
    const Candidate& first = sharing.front();
    db::CubinRecord cubin;
    cubin.key = first.cubin_key;
    cubin.template_name = first.kernel_template->manifest.name();
    cubin.template_hash = first.kernel_template->hash;
    cubin.arch = arch_of[*done];
    cubin.nvrtc_version = rtc::nvrtc_version();  // this process compiled it
    cubin.options = result.options;
    cubin.config_key = first.config_key;
    cubin.cubin = result.cubin;
    cubin.log = result.log;
    if (result.usage.registers >= 0) cubin.registers = result.usage.registers;
    cubin.spill_bytes = spill_bytes(result.usage);
    cubin.static_smem_bytes = result.usage.static_smem_bytes;
    cubin.compile_ms = result.compile_ms;
    {
      const auto lock = lock_database();
      database_.put_cubin(cubin);
    }
    const Compiled compiled{&result.cubin, cubin.registers, cubin.spill_bytes, cubin.static_smem_bytes,
                            cubin.compile_ms};
    for (const Candidate& c : sharing) measure(c, compiled);
  }
  stats_.compile_busy_s += batch_end_s - batch_start_s;

  std::vector<Observation> observations;
  observations.reserve(candidates.size());
  for (size_t index : candidates) observations.push_back(observation_of(index, by_candidate_.at(index)));
  return observations;
}

}  // namespace gemmforge::tuner
