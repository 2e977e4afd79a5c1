// Measurements the fitted models learn from: generated kernels and the vendor library, timed on GPUs of
// one architecture, each with the device it ran on.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"

namespace gemmforge::model {

struct KernelMeasurement {
  const KernelTemplate* kernel_template = nullptr;
  Config config;  ///< normalized by the template's manifest
  KernelProblem problem;
  size_t device = 0;  ///< index into TrainingData::devices
  double time_ms = 0;
};

struct VendorMeasurement {
  KernelProblem problem;
  size_t device = 0;
  double time_ms = 0;
};

struct TrainingData {
  std::vector<DeviceInfo> devices;
  std::vector<KernelMeasurement> kernels;
  std::vector<VendorMeasurement> vendor;

  /// Index of the device with `device`'s uuid (or name, for devices without one), added when absent.
  size_t add_device(const DeviceInfo& device);
};

/// Two devices are one GPU model when their names agree, ignoring case.
bool same_model(const DeviceInfo& a, const DeviceInfo& b);

}  // namespace gemmforge::model
