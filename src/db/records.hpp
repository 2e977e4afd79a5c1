// Rows of the tuning database as plain structs, and the vocabulary they share (trial status).
// Ids are outputs: they are filled when a row is read and ignored where a record is written.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace gemmforge::db {

/// Outcome of one trial.
enum class TrialStatus {
  kOk,            ///< ran, verified against cuBLAS, timed
  kWrongResult,   ///< ran but disagreed with cuBLAS
  kCompileError,  ///< NVRTC rejected it
  kLaunchError,   ///< the launch failed (e.g. too many resources)
  kCrashed,       ///< the worker process died
  kTimeout,       ///< the worker was killed after its deadline
  kSpills,        ///< skipped: the kernel spills registers
  kInvalid,       ///< skipped: the config breaks a constraint of its manifest
};

/// The template name of cuBLAS's trial of a problem, which `gemmforge tune` records as one more candidate:
/// the yardstick every generated kernel is compared with. It is never a problem's best (the best table serves
/// generated kernels; whether cuBLAS serves instead is the runtime's decision).
inline constexpr const char* kVendorTemplate = "cublas";
/// Its config: cublasSgemm with math mode 0, CUBLAS_DEFAULT_MATH (no TF32).
inline constexpr const char* kVendorConfig = "MATH_MODE=0";

/// "ok", "wrong_result", "compile_error", "launch_error", "crashed", "timeout", "spills", "invalid".
const char* to_string(TrialStatus status) noexcept;
/// Inverse of to_string; throws InvalidArgumentError listing the known values.
TrialStatus parse_trial_status(const std::string& text);

/// The key a device is stored under: its UUID, or "model:<name>" for a device without one.
std::string device_key(const DeviceInfo& device);

/// A row of `devices`. info.uuid is the stored key (see device_key); info.ordinal is -1.
struct DeviceRecord {
  int64_t id = 0;
  DeviceInfo info;
  std::string first_seen;
  std::string last_seen;
};

/// Clocks a tuning run measured at, in kHz (0: unknown).
struct RunClocks {
  int clock_khz = 0;
  int memory_clock_khz = 0;
};

/// A row of `runs`: one `gemmforge tune` invocation.
struct RunRecord {
  int64_t id = 0;
  int64_t device_id = 0;
  std::string started_at;
  std::optional<std::string> finished_at;  ///< empty while running, or when the run was killed
  std::string command;
  std::string gemmforge_version;
  RunClocks clocks;
  std::string strategy;
};

/// A row of `trials` with what it refers to spelled out: the problem, the template and the device key.
/// Measurements are optional because failed trials have none.
struct TrialRecord {
  int64_t id = 0;
  std::optional<int64_t> run_id;  ///< empty for imported results
  int64_t device_id = 0;
  int64_t problem_id = 0;  ///< filled on read; record_trial stores `problem` and fills nothing here
  KernelProblem problem;
  std::string template_name;
  std::string template_hash;
  std::string config_key;  ///< Config::key(), e.g. "BM=128,BN=128,BK=8"
  TrialStatus status = TrialStatus::kOk;
  std::string reason;  ///< why a trial failed or was skipped; empty when ok

  std::optional<double> time_median_ms;  ///< required when status is ok
  std::optional<double> time_min_ms;
  std::optional<double> time_max_ms;
  std::optional<int64_t> repetitions;
  std::optional<double> cublas_ms;
  std::optional<double> tflops;
  std::optional<double> ratio_vs_cublas;  ///< cublas_ms / time_median_ms: above 1 beats cuBLAS
  std::optional<int64_t> registers;
  std::optional<int64_t> smem_bytes;
  std::optional<int64_t> spill_bytes;
  std::optional<int64_t> occupancy_blocks;
  std::optional<double> occupancy_pct;
  std::optional<double> compile_ms;
  std::optional<double> rel_error;

  /// False for a result kept for the record but never served: imported with a template source (hash)
  /// the importing gemmforge does not know. Such a trial never becomes best.
  bool servable = true;

  std::string created_at;         ///< filled on write unless given (imports keep the original)
  std::string gemmforge_version;  ///< filled on write unless given
  std::string device_uuid;        ///< filled on read
  bool is_best = false;           ///< filled on read
};

/// Whether the trial's cuBLAS time counts as one cuBLAS took of its problem: an ok, timed trial with a
/// positive cuBLAS time (what the vendor model learns from, and an export's "vendor" sums up; the SQL of
/// Database::fastest_cublas_ms says the same).
bool counts_cublas_time(const TrialRecord& trial);

/// A row of `best`: the trial served for a problem on a device.
struct BestRecord {
  int64_t device_id = 0;
  int64_t problem_id = 0;
  int64_t trial_id = 0;
};

/// A row of `cubins`: a compiled kernel, kept so a later process needs no NVRTC call.
struct CubinRecord {
  std::string key;
  std::string template_name;
  std::string template_hash;
  std::string arch;
  std::string nvrtc_version;
  std::vector<std::string> options;  ///< stored as a JSON array, so options may hold spaces
  std::string config_key;
  std::vector<char> cubin;
  std::string log;
  std::optional<int64_t> registers;
  std::optional<int64_t> spill_bytes;
  std::optional<int64_t> static_smem_bytes;
  std::optional<double> compile_ms;
  std::string created_at;  ///< filled on write
};

/// A row of `misses`: a problem served without a tuned config, and how often.
struct MissRecord {
  int64_t device_id = 0;
  int64_t problem_id = 0;
  KernelProblem problem;
  int64_t count = 0;
  std::string first_seen;
  std::string last_seen;
};

}  // namespace gemmforge::db
