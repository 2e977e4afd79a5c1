// Tuning problems on the GPUs of a host: for each problem, the candidates of every matching template,
// searched by a strategy, measured in a worker process and recorded in the database, one run per GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "db/database.hpp"
#include "tuner/replay_evaluator.hpp"
#include "tuner/search.hpp"
#include "tuner/timing.hpp"
#include "tuner/worker_client.hpp"

namespace gemmforge::tuner {

struct TuneOptions {
  std::vector<KernelProblem> problems;
  std::vector<std::string> templates;  ///< only these; empty: every template of the problem's dtype
  Pins pins;                           ///< each applies to the templates that have the parameter
  std::string strategy = "guided";
  uint64_t seed = 1;       ///< of the strategy and of the operands
  size_t max_evals = 128;  ///< per problem, stored trials included; 0: no limit
  double time_s = 0;       ///< per problem, in seconds; 0: no limit
  /// A problem's search stops after this many evaluations in a row without making its best time faster
  /// by more than patience_gain (relative); 0: only max_evals and time_s stop it.
  size_t patience = 64;
  double patience_gain = 0.005;
  double error_bound = 1e-5;
  bool allow_spills = false;
  /// Record cuBLAS's time of each problem as a trial of its own (db::kVendorTemplate), the candidate the
  /// runtime may serve instead of a slower generated kernel.
  bool vendor_candidate = true;
  double timeout_s = 0;          ///< per candidate; 0: automatic from the cuBLAS time
  bool quiet = false;            ///< no progress line
  size_t batch = 0;              ///< candidates per search step; 0: from the compile threads
  unsigned compile_threads = 0;  ///< 0: default_tuning_compile_threads()
  /// A shorter timing budget than measure's, paid once per candidate only where its launches vary: a
  /// median of at least ten launches known within 0.5% ranks candidates reliably.
  TimingOptions timing = [] {
    TimingOptions t;
    t.budget_ms = 50;
    t.precision = 0.005;
    return t;
  }();
  std::string command;                       ///< the command line, recorded with the run
  const TemplateLibrary* library = nullptr;  ///< nullptr: TemplateLibrary::instance()
  WorkerOptions worker;                      ///< device ordinal, executable, template folder, simulation
  /// CUDA ordinals of the GPUs to tune on; empty: worker.device alone.
  std::vector<int> devices;
  /// Problems each GPU searches at once, each with a worker of its own; the GPU measures one at a time,
  /// so one search's batch compiles while another's is measured. Fewer where a GPU has fewer problems.
  /// 0: one per three cores each GPU has, from 2 to 6 (auto_searches_per_gpu).
  size_t searches_per_gpu = 0;
  /// Problems, not started yet, whose first batch compiles while a GPU searches its problem.
  size_t compile_ahead_problems = 1;
  /// Batches' worth of the strategy's guesses at what a search asks for next, compiled while its batch is
  /// measured; -1: two where a GPU searches one problem at a time, else none.
  int guessed_batches = -1;
  /// Configs each problem's search measures before its strategy's picks (measure_first), such as the
  /// serving model's best-ranked ones; none when empty.
  FirstCandidates first_candidates;
  /// Instead of GPUs: one GPU replayed from these recorded tables (its device is the first table's); no
  /// worker, no compiler. Trials are recorded as a GPU's would be. For testing the tuning path, sharding
  /// and merging without a GPU.
  const std::vector<RecordedTable>* replay = nullptr;
};

/// What tuning one problem did.
struct ProblemSummary {
  KernelProblem problem;
  std::string device;      ///< the GPU model it was tuned for
  std::vector<int> gpus;   ///< CUDA ordinals that measured it, the one that searched it first
  size_t candidates = 0;   ///< size of the search space
  size_t evaluations = 0;  ///< observations of the search, resumed ones included
  size_t resumed = 0;      ///< answered by trials stored before
  size_t measured = 0;     ///< sent to the worker in this run
  size_t failed = 0;       ///< new trials that are not ok (wrong, crashed, timeout, spills, ...)
  size_t compiled = 0;
  size_t cubins_cached = 0;
  double compile_busy_s = 0;         ///< wall time with compilations running
  double compile_sum_s = 0;          ///< the compilations' durations added up
  double measure_s = 0;              ///< wall time its workers spent loading, verifying and timing candidates
  MeasurementPhases measure_phases;  ///< the workers' share of that in each phase
  double cublas_ms = 0;
  std::optional<db::TrialRecord> best;  ///< the fastest ok trial of the search
  double wall_s = 0;
};

struct TuneReport {
  DeviceInfo device;   ///< the first GPU
  int64_t run_id = 0;  ///< of the first GPU
  struct Gpu {
    int ordinal = 0;  ///< CUDA ordinal; -1 for a GPU replayed from recorded trials
    DeviceInfo device;
    int64_t run_id = 0;
    int worker_restarts = 0;
    /// Seconds into the run at which the GPU began measuring its first candidate: the start (workers,
    /// problems set up, first compilations) that it spent idle. Negative where it measured nothing.
    double first_measured_s = -1;
  };
  std::vector<Gpu> gpus;                 ///< every GPU, with its run
  size_t searches_per_gpu = 1;           ///< problems each GPU searched at once
  std::vector<ProblemSummary> problems;  ///< per GPU model, then per problem
  int worker_restarts = 0;
  unsigned compile_threads = 0;
  size_t kernels_compiled = 0;        ///< NVRTC compilations of the whole run
  size_t kernels_compiled_ahead = 0;  ///< of those, queued ahead of the search
  size_t kernels_ahead_used = 0;      ///< of those, wanted later
  double compile_busy_s = 0;          ///< wall time with compilations running
  double compile_sum_s = 0;           ///< the compilations' durations added up
  double compile_cpu_s = 0;           ///< the CPU time the compiling threads spent in them
  double measure_s = 0;               ///< wall time the workers spent measuring, every GPU added up
  MeasurementPhases measure_phases;   ///< the workers' share of that in each phase
  /// What the tuning process itself used during the run (workers not included): where compilations take
  /// far longer than their CPU time, these say whether the threads waited for a core or for the kernel.
  struct ProcessUsage {
    double user_s = 0;
    double system_s = 0;
    long involuntary_switches = 0;  ///< a thread was preempted: more runnable threads than cores
    long minor_faults = 0;          ///< pages mapped on first touch
  } process;
  double wall_s = 0;
};

/// Searches per GPU where none are asked for: a search keeps about two compile threads busy on average (it
/// waits for its measurements in between), so one per three cores the GPU has, from 2 to 6.
size_t auto_searches_per_gpu(unsigned cores, size_t gpus);

/// The candidates of a problem on a device: the spaces of the templates of its dtype (only those named
/// in `templates` when any are) that the device's compute capability supports, each pruned and with
/// the pins it has parameters for. Throws InvalidArgumentError for a named template that is unknown or
/// computes another dtype, and for a pin that no selected template has.
SearchSpace build_search_space(const TemplateLibrary& library, const DeviceInfo& device,
                               const KernelProblem& problem, const std::vector<std::string>& templates,
                               const Pins& pins);

/// Tunes every problem of `options` on each GPU model of options.devices (or the worker's GPU): a worker
/// per search (searches_per_gpu per GPU, taking turns on it), one compile pool, one database connection.
/// GPUs of one model share the problems (each tuned once, by one GPU or, when GPUs are left over,
/// several); every model tunes every problem. Records a run
/// per GPU, every trial and the best configs in `database`. Stored trials of a problem on a GPU of its
/// model are resumed, not measured again.
TuneReport tune(db::Database& database, const TuneOptions& options);

}  // namespace gemmforge::tuner
