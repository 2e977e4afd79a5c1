// The members of exported devices and measurements, listed once for the exporter and the importer so
// the two cannot drift apart, with the ranges an import accepts. Internal to src/db.
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

struct DeviceInt {
  const char* name;
  int DeviceInfo::*member;
  int64_t max;
  bool required;
};

// Every DeviceInfo field but the ordinal (a per-process index) and the strings, which are handled apart.
inline constexpr DeviceInt kDeviceInts[] = {
    {"cc_major", &DeviceInfo::cc_major, 99, true},
    {"cc_minor", &DeviceInfo::cc_minor, 9, true},
    {"sm_count", &DeviceInfo::sm_count, kMaxInt32, false},
    {"smem_per_block", &DeviceInfo::smem_per_block, kMaxInt32, false},
    {"smem_per_block_optin", &DeviceInfo::smem_per_block_optin, kMaxInt32, false},
    {"smem_per_sm", &DeviceInfo::smem_per_sm, kMaxInt32, false},
    {"regs_per_block", &DeviceInfo::regs_per_block, kMaxInt32, false},
    {"regs_per_sm", &DeviceInfo::regs_per_sm, kMaxInt32, false},
    {"max_threads_per_block", &DeviceInfo::max_threads_per_block, kMaxInt32, false},
    {"max_threads_per_sm", &DeviceInfo::max_threads_per_sm, kMaxInt32, false},
    {"max_blocks_per_sm", &DeviceInfo::max_blocks_per_sm, kMaxInt32, false},
    {"warp_size", &DeviceInfo::warp_size, kMaxInt32, false},
    {"l2_bytes", &DeviceInfo::l2_bytes, kMaxInt32, false},
    {"clock_khz", &DeviceInfo::clock_khz, kMaxInt32, false},
    {"memory_clock_khz", &DeviceInfo::memory_clock_khz, kMaxInt32, false},
    {"memory_bus_width", &DeviceInfo::memory_bus_width, kMaxInt32, false},
    {"driver_version", &DeviceInfo::driver_version, kMaxInt32, false},
    {"runtime_version", &DeviceInfo::runtime_version, kMaxInt32, false},
};

struct MeasurementReal {
  const char* name;
  std::optional<double> TrialRecord::*member;
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
    {"time_median_ms", &TrialRecord::time_median_ms, kUnbounded, "a finite time"},
    {"time_min_ms", &TrialRecord::time_min_ms, kUnbounded, "a finite time"},
    {"time_max_ms", &TrialRecord::time_max_ms, kUnbounded, "a finite time"},
    {"cublas_ms", &TrialRecord::cublas_ms, kUnbounded, "a finite time"},
    {"tflops", &TrialRecord::tflops, kUnbounded, "a finite rate"},
    {"ratio_vs_cublas", &TrialRecord::ratio_vs_cublas, kUnbounded, "a finite ratio"},
    {"occupancy_pct", &TrialRecord::occupancy_pct, 100.0, "a percentage"},
    {"compile_ms", &TrialRecord::compile_ms, kUnbounded, "a finite time"},
    {"rel_error", &TrialRecord::rel_error, kUnbounded, "a finite error"},
};

inline constexpr MeasurementInt kMeasurementInts[] = {
    {"repetitions", &TrialRecord::repetitions, 1, kMaxInt32, "a count"},
    {"registers", &TrialRecord::registers, 0, 65536, "a register count"},
    {"smem_bytes", &TrialRecord::smem_bytes, 0, kMaxInt32, "a byte count"},
    {"spill_bytes", &TrialRecord::spill_bytes, 0, kMaxInt32, "a byte count"},
    {"occupancy_blocks", &TrialRecord::occupancy_blocks, 0, 65536, "a block count"},
};

}  // namespace gemmforge::db::fields
