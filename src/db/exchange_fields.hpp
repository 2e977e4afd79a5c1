// The fields of devices and measurements, listed once with the range each value must lie in: the
// exporter writes them, the importer reads and checks them, and rows read back from a database are
// checked against the same ranges (record_checks.hpp). Internal to src/db.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>

#include "core/device_info.hpp"
#include "db/records.hpp"

namespace gemmforge::db::fields {

inline constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
inline constexpr double kUnbounded = std::numeric_limits<double>::infinity();

/// Longest failure reason accepted (compile errors may carry part of a log).
inline constexpr size_t kMaxReason = 64 * 1024;
/// Longest time a measurement may claim: an hour, far beyond any GEMM gemmforge can launch.
inline constexpr double kMaxTimeMs = 3.6e6;
/// The verification bound of `gemmforge tune` (relative Frobenius error against cuBLAS): an imported ok
/// result must prove it, unless the import is given a looser one.
inline constexpr double kDefaultErrorBound = 1e-5;

struct DeviceInt {
  const char* name;
  int DeviceInfo::*member;
  int64_t min;  ///< smallest plausible value; 0 also stands for "unknown" where zero_unknown
  int64_t max;
  bool required;
  bool zero_unknown;
  const char* meaning;  ///< completes "<value> is not ..."
};

// Every DeviceInfo field but the ordinal (a per-process index), the memory size and the strings, which
// are handled apart. The ranges hold every GPU CUDA knows with room to spare; "cc_major 99" does not.
inline constexpr DeviceInt kDeviceInts[] = {
    {"cc_major", &DeviceInfo::cc_major, 1, 15, true, false, "a compute capability major version"},
    {"cc_minor", &DeviceInfo::cc_minor, 0, 9, true, false, "a compute capability minor version"},
    {"sm_count", &DeviceInfo::sm_count, 1, 1024, false, true, "an SM count"},
    {"smem_per_block", &DeviceInfo::smem_per_block, 1024, 1 << 20, false, true, "a shared memory size"},
    {"smem_per_block_optin", &DeviceInfo::smem_per_block_optin, 1024, 1 << 20, false, true,
     "a shared memory size"},
    {"smem_per_sm", &DeviceInfo::smem_per_sm, 1024, 1 << 20, false, true, "a shared memory size"},
    {"regs_per_block", &DeviceInfo::regs_per_block, 1024, 1 << 20, false, true, "a register count"},
    {"regs_per_sm", &DeviceInfo::regs_per_sm, 1024, 1 << 20, false, true, "a register count"},
    {"max_threads_per_block", &DeviceInfo::max_threads_per_block, 32, 4096, false, true, "a thread count"},
    {"max_threads_per_sm", &DeviceInfo::max_threads_per_sm, 32, 16384, false, true, "a thread count"},
    {"max_blocks_per_sm", &DeviceInfo::max_blocks_per_sm, 1, 256, false, true, "a block count"},
    {"warp_size", &DeviceInfo::warp_size, 32, 32, false, false, "the warp size of a CUDA GPU"},
    {"l2_bytes", &DeviceInfo::l2_bytes, 1024, kMaxInt32, false, true, "an L2 cache size"},
    {"clock_khz", &DeviceInfo::clock_khz, 1000, 10000000, false, true, "a clock rate in kHz"},
    {"memory_clock_khz", &DeviceInfo::memory_clock_khz, 1000, 100000000, false, true, "a clock rate in kHz"},
    {"memory_bus_width", &DeviceInfo::memory_bus_width, 8, 65536, false, true, "a bus width in bits"},
    {"driver_version", &DeviceInfo::driver_version, 1000, 99999, false, true, "a CUDA version number"},
    {"runtime_version", &DeviceInfo::runtime_version, 1000, 99999, false, true, "a CUDA version number"},
};
/// Device memory: up to 16 TiB, or 0 for unknown.
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 44;

struct MeasurementReal {
  const char* name;
  std::optional<double> TrialRecord::*member;
  double min;
  bool min_exclusive;  ///< the value must be above min (times and rates), not merely at least min
  double max;
  const char* meaning;  ///< completes "<value> is not ..."
};

struct MeasurementInt {
  const char* name;
  std::optional<int64_t> TrialRecord::*member;
  int64_t min;
  int64_t max;
  const char* meaning;
};

inline constexpr MeasurementReal kMeasurementReals[] = {
    {"time_median_ms", &TrialRecord::time_median_ms, 0, true, kMaxTimeMs, "a time in ms"},
    {"time_min_ms", &TrialRecord::time_min_ms, 0, true, kMaxTimeMs, "a time in ms"},
    {"time_max_ms", &TrialRecord::time_max_ms, 0, true, kMaxTimeMs, "a time in ms"},
    {"cublas_ms", &TrialRecord::cublas_ms, 0, true, kMaxTimeMs, "a time in ms"},
    {"tflops", &TrialRecord::tflops, 0, true, 1e5, "a rate in TFLOP/s"},
    {"ratio_vs_cublas", &TrialRecord::ratio_vs_cublas, 0, true, 1e6, "a speed ratio"},
    {"occupancy_pct", &TrialRecord::occupancy_pct, 0, false, 100.0, "a percentage"},
    {"compile_ms", &TrialRecord::compile_ms, 0, false, kMaxTimeMs, "a time in ms"},
    {"rel_error", &TrialRecord::rel_error, 0, false, kUnbounded, "a relative error"},
};

inline constexpr MeasurementInt kMeasurementInts[] = {
    {"repetitions", &TrialRecord::repetitions, 1, 1000000000, "a repetition count"},
    {"registers", &TrialRecord::registers, 0, 255, "a per-thread register count"},
    {"smem_bytes", &TrialRecord::smem_bytes, 0, 1 << 20, "a shared memory size"},
    {"spill_bytes", &TrialRecord::spill_bytes, 0, kMaxInt32, "a byte count"},
    {"occupancy_blocks", &TrialRecord::occupancy_blocks, 0, 256, "a count of blocks per SM"},
};

}  // namespace gemmforge::db::fields
