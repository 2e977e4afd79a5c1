// Architecture names and nominal limits, so the search space can be built without a GPU.
#include "core/device_info.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gemmforge/error.hpp"

namespace gemmforge {

std::string DeviceInfo::arch() const {
  return fmt::format("sm_{}{}", cc_major, cc_minor);
}

double DeviceInfo::fp32_peak_tflops() const {
  // sm_80 has 64 FP32 lanes per SM; every later architecture gemmforge targets has 128.
  const int lanes = cc() == 80 ? 64 : 128;
  return 2.0 * lanes * sm_count * (clock_khz * 1e3) / 1e12;
}

std::string format_cuda_version(int version) {
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

std::string normalize_arch(const std::string& arch) {
  std::string digits = arch;
  if (digits.rfind("sm_", 0) == 0 || digits.rfind("compute_", 0) == 0)
    digits = digits.substr(digits.find('_') + 1);
  std::string suffix;
  if (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) {
    suffix = digits.substr(digits.size() - 1);
    digits.pop_back();
  }
  bool numeric = digits.size() >= 2 && digits.size() <= 3;
  for (char c : digits) numeric = numeric && std::isdigit(static_cast<unsigned char>(c));
  if (!numeric || (!suffix.empty() && suffix != "a" && suffix != "f")) {
    throw InvalidArgumentError(
        fmt::format("architecture '{}' is not of the form sm_XY (e.g. sm_80, sm_90a)", arch));
  }
  return "sm_" + digits + suffix;
}

int arch_cc(const std::string& arch) {
  std::string name = normalize_arch(arch).substr(3);
  while (!name.empty() && std::isalpha(static_cast<unsigned char>(name.back()))) name.pop_back();
  return std::stoi(name);
}

DeviceInfo DeviceInfo::nominal(const std::string& arch) {
  const std::string normalized = normalize_arch(arch);
  const int cc = arch_cc(normalized);
  DeviceInfo d;
  d.name = "nominal " + normalized;
  d.cc_major = cc / 10;
  d.cc_minor = cc % 10;
  d.regs_per_block = 65536;
  d.regs_per_sm = 65536;
  d.max_threads_per_block = 1024;
  d.smem_per_block = 48 * 1024;
  switch (cc) {
    case 80:  // A100
      d.sm_count = 108;
      d.smem_per_block_optin = 163 * 1024;
      d.smem_per_sm = 164 * 1024;
      d.max_threads_per_sm = 2048;
      d.max_blocks_per_sm = 32;
      d.l2_bytes = 40 * 1024 * 1024;
      d.clock_khz = 1410000;
      d.memory_clock_khz = 1215000;  // HBM2, 1.56 TB/s
      d.memory_bus_width = 5120;
      break;
    case 86:  // GA102
    case 89:  // AD102
      d.sm_count = cc == 86 ? 84 : 128;
      d.smem_per_block_optin = 99 * 1024;
      d.smem_per_sm = 100 * 1024;
      d.max_threads_per_sm = 1536;
      d.max_blocks_per_sm = cc == 86 ? 16 : 24;
      d.l2_bytes = (cc == 86 ? 6 : 72) * 1024 * 1024;
      d.clock_khz = cc == 86 ? 1860000 : 2520000;
      d.memory_clock_khz = cc == 86 ? 9751000 : 10501000;  // GDDR6X, 0.94 and 1.01 TB/s
      d.memory_bus_width = 384;
      break;
    case 90:  // H100 SXM
      d.sm_count = 132;
      d.smem_per_block_optin = 227 * 1024;
      d.smem_per_sm = 228 * 1024;
      d.max_threads_per_sm = 2048;
      d.max_blocks_per_sm = 32;
      d.l2_bytes = 50 * 1024 * 1024;
      d.clock_khz = 1980000;
      d.memory_clock_khz = 2619000;  // HBM3, 3.35 TB/s
      d.memory_bus_width = 5120;
      break;
    default:
      throw InvalidArgumentError(
          fmt::format("no nominal limits for {}; known: sm_80, sm_86, sm_89, sm_90, sm_90a", normalized));
  }
  return d;
}

bool same_gpu_model(const std::string& a, const std::string& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); });
}

bool gpu_name_contains(const std::string& name, const std::string& part) {
  return std::search(name.begin(), name.end(), part.begin(), part.end(),
                     [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); }) !=
         name.end();
}

}  // namespace gemmforge
