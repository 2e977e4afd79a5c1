// Finding GPUs and reading their properties; works (and explains itself) on machines without one.
#pragma once

#include <string>
#include <vector>

#include "core/device_info.hpp"

namespace gemmforge::cuda {

/// Why no GPU can be used here ("no CUDA driver is installed ..."), or an empty string when at least one
/// device is usable. Never throws.
std::string unavailable_reason();

/// Number of CUDA devices; throws NoDeviceError with unavailable_reason() when there is none.
int device_count();

/// Every property gemmforge records of device `ordinal` (the NVRTC version is left for rtc to fill).
DeviceInfo query_device(int ordinal);

/// Resolves "0", a UUID ("GPU-1234...") or a case-insensitive part of the name to an ordinal;
/// an empty spec means device 0. Throws NotFoundError listing the devices.
int find_device(const std::string& spec);

/// Makes a device current for a scope and restores the previous one. Move-only.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace gemmforge::cuda
