// Names of trial statuses and the storage key of a device.
#include "db/records.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

constexpr std::array<std::pair<TrialStatus, const char*>, 8> kStatusNames{{
    {TrialStatus::kOk, "ok"},
    {TrialStatus::kWrongResult, "wrong_result"},
    {TrialStatus::kCompileError, "compile_error"},
    {TrialStatus::kLaunchError, "launch_error"},
    {TrialStatus::kCrashed, "crashed"},
    {TrialStatus::kTimeout, "timeout"},
    {TrialStatus::kSpills, "spills"},
    {TrialStatus::kInvalid, "invalid"},
}};

}  // namespace

const char* to_string(TrialStatus status) noexcept {
  for (const auto& [value, name] : kStatusNames) {
    if (value == status) return name;
  }
  return "unknown";
}

TrialStatus parse_trial_status(const std::string& text) {
  for (const auto& [value, name] : kStatusNames) {
    if (text == name) return value;
  }
  std::string known;
  for (const auto& entry : kStatusNames)
    known += fmt::format("{}{}", known.empty() ? "" : ", ", entry.second);
  throw InvalidArgumentError(fmt::format("unknown trial status '{}'; expected one of {}", text, known));
}

bool counts_cublas_time(const TrialRecord& trial) {
  return trial.status == TrialStatus::kOk && trial.time_median_ms && trial.cublas_ms && *trial.cublas_ms > 0;
}

std::string device_key(const DeviceInfo& device) {
  return device.uuid.empty() ? "model:" + device.name : device.uuid;
}

}  // namespace gemmforge::db
