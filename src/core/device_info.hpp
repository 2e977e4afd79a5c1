// What gemmforge knows of a GPU: identity, limits that shape the search space, and software versions.
#pragma once

#include <cstdint>
#include <string>

namespace gemmforge {

struct DeviceInfo {
  int ordinal = -1;  ///< CUDA device index; -1 for a device described without a GPU (nominal limits)
  std::string name;
  std::string uuid;  ///< "GPU-xxxxxxxx-..." as nvidia-smi prints it; empty for nominal devices
  std::string pci_bus_id;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  int64_t total_memory = 0;
  int smem_per_block = 0;        ///< without opt-in
  int smem_per_block_optin = 0;  ///< with cudaFuncAttributeMaxDynamicSharedMemorySize
  int smem_per_sm = 0;
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;
  int warp_size = 32;
  int l2_bytes = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int memory_bus_width = 0;
  int driver_version = 0;   ///< e.g. 13000
  int runtime_version = 0;  ///< e.g. 13000
  std::string nvrtc_version;

  /// Compute capability as one number, e.g. 90.
  int cc() const { return cc_major * 10 + cc_minor; }
  /// NVRTC architecture, e.g. "sm_90".
  std::string arch() const;
  /// Peak FP32 FFMA rate from SM count and clock, in TFLOP/s (128 lanes per SM on sm_80+ except sm_80).
  double fp32_peak_tflops() const;

  /// Limits of a GPU architecture ("sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"), for work without a GPU.
  /// Throws InvalidArgumentError for an unknown architecture.
  static DeviceInfo nominal(const std::string& arch);
};

/// Whether two device names are of one GPU model: the whole name, case ignored. Results measured on one
/// card of a model serve every card of it.
bool same_gpu_model(const std::string& a, const std::string& b);

/// Whether a device name holds `part`, case ignored: how a user names a GPU model by a part of its name
/// ("h200").
bool gpu_name_contains(const std::string& name, const std::string& part);

/// "13.0" from 13000.
std::string format_cuda_version(int version);

/// Normalizes an architecture name: "90" and "sm_90" give "sm_90", "sm_90a" stays; throws if malformed.
std::string normalize_arch(const std::string& arch);

/// Compute capability number (90) of an architecture name ("sm_90a").
int arch_cc(const std::string& arch);

}  // namespace gemmforge
