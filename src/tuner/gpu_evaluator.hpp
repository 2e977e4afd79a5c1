// The Evaluator of real tuning: candidates are answered from the database when already tried, compiled
// (or taken from the cubin cache) on a thread pool, measured one by one in the worker process as their
// compilation finishes, and every outcome is recorded as a trial in a transaction of its own.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "db/database.hpp"
#include "rtc/compile_service.hpp"
#include "rtc/kernel_spec.hpp"
#include "tuner/search.hpp"
#include "tuner/timing.hpp"
#include "tuner/worker_client.hpp"

namespace gemmforge::tuner {

struct EvaluatorOptions {
  TimingOptions timing;           ///< of the candidates and of cuBLAS
  uint64_t seed = 42;             ///< of the random operands
  double error_bound = 1e-5;      ///< relative Frobenius error allowed against cuBLAS
  bool allow_spills = false;      ///< measure configs that spill registers instead of skipping them
  unsigned compile_threads = 0;   ///< 0: default_tuning_compile_threads(); unused with compile_service
  std::optional<int64_t> run_id;  ///< the run recorded trials belong to
  /// The compile pool shared with other evaluators (of other problems and GPUs); nullptr: one of the
  /// evaluator's own with compile_threads threads.
  std::shared_ptr<rtc::CompileService> compile_service;
  /// Held around every use of the database when other threads use it too (one connection, one writer).
  std::mutex* database_mutex = nullptr;
  /// Held while the worker sets a problem up or measures, when other evaluators measure on the same GPU
  /// through workers of their own: one measurement at a time per GPU.
  std::mutex* gpu_mutex = nullptr;
  /// Other devices of the same GPU model: their stored trials of the problem answer for this one.
  std::vector<int64_t> peer_device_ids;
};

/// What an evaluator did, for summaries and tests.
struct EvaluatorStats {
  size_t resumed = 0;         ///< candidates answered by trials already in the database
  size_t cubins_cached = 0;   ///< candidates whose cubin was already in the database
  size_t compiled = 0;        ///< NVRTC compilations used, failed ones included
  size_t compiled_ahead = 0;  ///< of those, compiled ahead of the search (or for another evaluator)
  size_t compile_failures = 0;
  double compile_busy_s = 0;  ///< wall time while compiling: throughput is compiled / compile_busy_s
  double compile_sum_s = 0;   ///< the compilations' own durations added up
  size_t measured = 0;        ///< candidates sent to the worker
  double measure_s = 0;       ///< wall time the worker spent loading, verifying and timing them
  MeasurementPhases phases;   ///< the worker's share of that in each phase, added up
  size_t skipped = 0;         ///< recorded without measuring: invalid, spilling or not compiling
  /// When the first candidate went to the worker, its problem set up: what came before is the start.
  std::optional<std::chrono::steady_clock::time_point> first_measured;
};

/// A trial just recorded, or found in the database; for progress reports.
struct TrialEvent {
  size_t candidate = 0;
  const db::TrialRecord* trial = nullptr;
  bool resumed = false;
};

class GpuEvaluator : public Evaluator {
 public:
  /// Evaluates candidates of `problem` for the device stored as `device_id`, compiling with `library`
  /// (whose template hashes must be those the worker knows). The problem is set in the worker, and cuBLAS
  /// timed there, only when the first candidate needs measuring: a fully resumed problem costs no GPU time.
  GpuEvaluator(db::Database& database, WorkerClient& worker, const TemplateLibrary& library,
               int64_t device_id, const DeviceInfo& device, const KernelProblem& problem,
               EvaluatorOptions options);

  /// The stored trials of this problem whose configs belong to `space`, as a history in the order they
  /// were recorded: a search continuing from it measures none of them again. Each counts as resumed.
  History resume(const SearchSpace& space);

  /// Never throws for a candidate's failure (it is recorded); throws when the database cannot be written
  /// or the worker refuses a request or cannot be restarted.
  std::vector<Observation> evaluate(const SearchSpace& space, const std::vector<size_t>& candidates) override;
  /// Queues the kernels of `candidates` that are neither tried nor cached on the compile pool, behind
  /// every kernel wanted now.
  void note_best(double ms) override { best_ms_ = std::min(best_ms_.value_or(ms), ms); }
  void prefetch(const SearchSpace& space, const std::vector<size_t>& candidates) override;

  /// Runs `action` once, right after the next evaluate() has queued its compilations (or at once when
  /// that evaluate has nothing to compile).
  void after_next_submission(std::function<void()> action) { after_submission_ = std::move(action); }
  /// Called once per candidate evaluated, as soon as its trial is known.
  void on_trial(std::function<void(const TrialEvent&)> callback) { on_trial_ = std::move(callback); }
  const EvaluatorStats& stats() const { return stats_; }
  /// The trial of a candidate evaluated so far, or nullptr.
  const db::TrialRecord* trial(size_t candidate) const;
  /// cuBLAS's time on the problem: as measured for this evaluator, else as stored with earlier trials.
  std::optional<double> cublas_ms() const { return cublas_ms_; }

 private:
  struct Candidate;
  struct Compiled;

  void load_stored_trials();
  void ensure_problem_set();
  const db::TrialRecord* find_stored(const Candidate& candidate);
  void measure(const Candidate& candidate, const Compiled& compiled);
  void record(const Candidate& candidate, db::TrialRecord trial, bool resumed = false);
  db::TrialRecord new_trial(const Candidate& candidate, Outcome outcome, std::string reason) const;
  std::unique_lock<std::mutex> lock_database() const;
  /// The candidate's kernel spec and cubin key, or nullopt with `error` when the config is invalid.
  std::optional<std::string> spec_key(const Candidate& candidate, rtc::KernelSpec& spec,
                                      std::string& error) const;

  db::Database& database_;
  WorkerClient& worker_;
  const TemplateLibrary& library_;
  int64_t device_id_;
  DeviceInfo device_;
  KernelProblem problem_;
  EvaluatorOptions options_;
  std::shared_ptr<rtc::CompileService> compile_service_;
  std::optional<double> cublas_ms_;
  std::optional<double> best_ms_;  // the fastest correct trial so far: the time candidates must beat
  bool cublas_measured_ = false;   // cublas_ms_ comes from this evaluator's worker
  std::map<std::string, db::TrialRecord> stored_;  // by template hash and config key
  std::map<size_t, db::TrialRecord> by_candidate_;
  std::function<void(const TrialEvent&)> on_trial_;
  std::function<void()> after_submission_;
  EvaluatorStats stats_;
};

}  // namespace gemmforge::tuner
