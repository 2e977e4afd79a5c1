// Device detection and properties through the CUDA runtime (which loads the driver at run time).
#include "cuda/device.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "cuda/check.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::cuda {

std::string unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  int driver = 0;
  cudaDriverGetVersion(&driver);
  switch (status) {
    case cudaSuccess:
      return count > 0 ? std::string() : "the CUDA driver reports no devices";
    case cudaErrorInsufficientDriver:
      if (driver == 0)
        return "no CUDA driver is installed (libcuda.so.1 could not be loaded), so no GPU can be used";
      return fmt::format("the CUDA driver ({}) is older than the CUDA runtime gemmforge was built with ({})",
                         format_cuda_version(driver), format_cuda_version(CUDART_VERSION));
    case cudaErrorNoDevice:
      return "the CUDA driver is installed but finds no GPU";
    default:
      return fmt::format("CUDA cannot be initialized: {} - {}", cudaGetErrorName(status),
                         cudaGetErrorString(status));
  }
}

int device_count() {
  const std::string reason = unavailable_reason();
  if (!reason.empty()) throw NoDeviceError(reason);
  int count = 0;
  GEMMFORGE_CUDA_CHECK(cudaGetDeviceCount(&count));
  return count;
}

namespace {

std::string format_uuid(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  return fmt::format(
      "GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:"
      "02x}",
      b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int attribute(cudaDeviceAttr attr, int ordinal) {
  int value = 0;
  GEMMFORGE_CUDA_CHECK(cudaDeviceGetAttribute(&value, attr, ordinal));
  return value;
}

}  // namespace

DeviceInfo query_device(int ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count) {
    throw InvalidArgumentError(
        fmt::format("device {} does not exist; this machine has {} device(s)", ordinal, count));
  }
  cudaDeviceProp prop{};
  GEMMFORGE_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal));
  DeviceInfo d;
  d.ordinal = ordinal;
  d.name = prop.name;
  d.uuid = format_uuid(prop.uuid);
  d.pci_bus_id = fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  d.cc_major = prop.major;
  d.cc_minor = prop.minor;
  d.sm_count = prop.multiProcessorCount;
  d.total_memory = static_cast<int64_t>(prop.totalGlobalMem);
  d.smem_per_block = static_cast<int>(prop.sharedMemPerBlock);
  d.smem_per_block_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
  d.smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
  d.regs_per_block = prop.regsPerBlock;
  d.regs_per_sm = prop.regsPerMultiprocessor;
  d.max_threads_per_block = prop.maxThreadsPerBlock;
  d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  d.warp_size = prop.warpSize;
  d.l2_bytes = prop.l2CacheSize;
  d.clock_khz = attribute(cudaDevAttrClockRate, ordinal);
  d.memory_clock_khz = attribute(cudaDevAttrMemoryClockRate, ordinal);
  d.memory_bus_width = prop.memoryBusWidth;
  GEMMFORGE_CUDA_CHECK(cudaDriverGetVersion(&d.driver_version));
  GEMMFORGE_CUDA_CHECK(cudaRuntimeGetVersion(&d.runtime_version));
  return d;
}

int find_device(const std::string& spec) {
  const int count = device_count();
  if (spec.empty()) return 0;
  if (std::all_of(spec.begin(), spec.end(), [](unsigned char c) { return std::isdigit(c); })) {
    const int ordinal = std::stoi(spec);
    if (ordinal >= count) {
      throw NotFoundError(
          fmt::format("device {} does not exist; this machine has {} device(s)", ordinal, count));
    }
    return ordinal;
  }
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  std::string known;
  for (int i = 0; i < count; ++i) {
    const DeviceInfo info = query_device(i);
    if (lower(info.uuid) == lower(spec) || lower(info.name).find(lower(spec)) != std::string::npos) return i;
    known += fmt::format("{}{}: {} ({})", known.empty() ? "" : ", ", i, info.name, info.uuid);
  }
  throw NotFoundError(fmt::format("no device matches '{}'; devices: {}", spec, known));
}

DeviceGuard::DeviceGuard(int ordinal) {
  GEMMFORGE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != ordinal) GEMMFORGE_CUDA_CHECK(cudaSetDevice(ordinal));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) {
    GEMMFORGE_CUDA_LOG_ON_ERROR(cudaSetDevice(previous_));
  }
}

}  // namespace gemmforge::cuda
