// Records the database tests store: a device and trials of sgemm_simt configs.
#pragma once

#include <cstdint>
#include <string>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "db/records.hpp"

namespace gemmforge::test_support {

/// An H100-class GPU with the identity and versions the database keeps of a device.
inline DeviceInfo recorded_gpu(const std::string& uuid, const std::string& name = "NVIDIA H100 80GB HBM3") {
  DeviceInfo device = DeviceInfo::nominal("sm_90");
  device.ordinal = 0;
  device.uuid = uuid;
  device.name = name;
  device.total_memory = int64_t{80} << 30;
  device.driver_version = 13000;
  device.runtime_version = 13000;
  device.nvrtc_version = "13.0";
  device.pci_bus_id = "0000:17:00.0";
  return device;
}

/// A trial of an sgemm_simt config with its identity and status set and nothing measured.
inline db::TrialRecord simt_trial(int64_t device_id, const KernelProblem& problem, const std::string& config,
                                  db::TrialStatus status) {
  db::TrialRecord t;
  t.device_id = device_id;
  t.problem = problem;
  t.template_name = "sgemm_simt";
  t.template_hash = "0123456789abcdef";
  t.config_key = config;
  t.status = status;
  return t;
}

}  // namespace gemmforge::test_support
