// The rules of record_checks.hpp.
#include "db/record_checks.hpp"

#include "core/dtype.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "gemmforge/error.hpp"

namespace gemmforge::db {
namespace {

// Ratios written by gemmforge agree with their times to the last bit; other tools may round them.
constexpr double kConsistency = 1e-3;

bool digits(const std::string& text, size_t from, size_t count) {
  if (from + count > text.size()) return false;
  for (size_t i = from; i < from + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
  }
  return true;
}

int number(const std::string& text, size_t from, size_t count) {
  return std::stoi(text.substr(from, count));
}

bool printable(const std::string& text) {
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

bool near(double value, double expected) {
  return std::fabs(value - expected) <= kConsistency * std::fabs(expected);
}

std::string range_text(double min, bool exclusive, double max) {
  if (std::isinf(max)) return fmt::format("{} {:g}", exclusive ? ">" : ">=", min);
  return fmt::format("in {}{:g}, {:g}]", exclusive ? "(" : "[", min, max);
}

}  // namespace

bool is_timestamp(const std::string& t) {
  // YYYY-MM-DDTHH:MM:SS[.fff...]Z
  if (t.size() < 20 || t.size() > 40) return false;
  if (!digits(t, 0, 4) || t[4] != '-' || !digits(t, 5, 2) || t[7] != '-' || !digits(t, 8, 2) ||
      t[10] != 'T' || !digits(t, 11, 2) || t[13] != ':' || !digits(t, 14, 2) || t[16] != ':' ||
      !digits(t, 17, 2) || t.back() != 'Z') {
    return false;
  }
  if (t.size() > 20 && (t[19] != '.' || !digits(t, 20, t.size() - 21) || t.size() == 21)) return false;
  const int month = number(t, 5, 2);
  const int day = number(t, 8, 2);
  return number(t, 0, 4) >= 1970 && month >= 1 && month <= 12 && day >= 1 && day <= 31 &&
         number(t, 11, 2) <= 23 && number(t, 14, 2) <= 59 && number(t, 17, 2) <= 60;
}

bool is_token(const std::string& text, size_t max_bytes) {
  if (text.empty() || text.size() > max_bytes) return false;
  for (unsigned char c : text) {
    if (c <= 0x20 || c == 0x7f) return false;
  }
  return true;
}

Fault device_fault(const DeviceInfo& d) {
  if (d.name.empty() || d.name.size() > 256 || !printable(d.name)) {
    return {"name", fmt::format("'{}' is not a GPU name (1 to 256 printable characters)", d.name)};
  }
  const std::string& key = d.uuid;
  const bool keyed = (key.rfind("GPU-", 0) == 0 || key.rfind("MIG-", 0) == 0) && key.size() > 4 &&
                     key.size() <= 128 && printable(key);
  if (!keyed && key != "model:" + d.name) {
    return {"uuid", fmt::format("'{}' is neither a GPU UUID (\"GPU-...\") nor \"model:{}\"", key, d.name)};
  }
  for (const fields::DeviceInt& spec : fields::kDeviceInts) {
    const int value = d.*spec.member;
    if (spec.zero_unknown && value == 0) continue;
    if (value < spec.min || value > spec.max) {
      return {spec.name, fmt::format("{} is not {} in {}..{}{}", value, spec.meaning, spec.min, spec.max,
                                     spec.zero_unknown ? " (or 0 for unknown)" : "")};
    }
  }
  if (d.total_memory < 0 || d.total_memory > fields::kMaxMemoryBytes) {
    return {"memory_bytes",
            fmt::format("{} is not a memory size in 0..{}", d.total_memory, fields::kMaxMemoryBytes)};
  }
  if (!d.pci_bus_id.empty()) {
    // DDDD:BB:DD.F, the domain with 4 or 8 hex digits.
    const std::string& id = d.pci_bus_id;
    const size_t colon = id.find(':');
    const bool ok = (colon == 4 || colon == 8) && id.size() == colon + 8 && id[colon + 3] == ':' &&
                    id[colon + 6] == '.' && std::all_of(id.begin(), id.end(), [](char c) {
                      return std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
                    });
    if (!ok) return {"pci_bus_id", fmt::format("'{}' is not a PCI bus id like 0000:17:00.0", id)};
  }
  if (!d.nvrtc_version.empty()) {
    const std::string& v = d.nvrtc_version;
    const size_t dot = v.find('.');
    const bool ok = dot != std::string::npos && dot > 0 && dot + 1 < v.size() && v.size() <= 16 &&
                    std::all_of(v.begin(), v.end(), [](char c) {
                      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
                    });
    if (!ok) return {"nvrtc_version", fmt::format("'{}' is not an NVRTC version like 13.0", v)};
  }
  return {};
}

Fault trial_fault(const TrialRecord& t, double error_bound) {
  try {
    check_kernel_problem(t.problem);
  } catch (const InvalidArgumentError& e) {
    return {"problem", e.what()};
  }
  if (t.template_name.empty() || t.template_name.size() > 256 || !printable(t.template_name)) {
    return {"template", fmt::format("'{}' is not a template name", t.template_name)};
  }
  if (t.template_name == kVendorTemplate) {
    // cuBLAS's trial records the library's version where a template records its source hash.
    if (t.template_hash.empty() || t.template_hash.size() > 64 || !printable(t.template_hash)) {
      return {"template_hash",
              fmt::format("'{}' is not a cuBLAS version (1 to 64 printable characters)", t.template_hash)};
    }
  } else if (!is_token(t.template_hash, 64)) {
    return {"template_hash", fmt::format("'{}' is not a template source hash (1 to 64 characters, no spaces)",
                                         t.template_hash)};
  }
  if (t.config_key.empty() || !printable(t.config_key)) {
    return {"config", fmt::format("'{}' is not a config key", t.config_key)};
  }
  if (t.reason.size() > fields::kMaxReason) {
    return {"reason",
            fmt::format("is {} bytes long; at most {} are allowed", t.reason.size(), fields::kMaxReason)};
  }
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals) {
    const std::optional<double>& value = t.*spec.member;
    if (!value) continue;
    const bool below = spec.min_exclusive ? !(*value > spec.min) : !(*value >= spec.min);
    if (!std::isfinite(*value) || below || *value > spec.max) {
      return {fmt::format("measurement.{}", spec.name),
              fmt::format("{:g} is not {} {}", *value, spec.meaning,
                          range_text(spec.min, spec.min_exclusive, spec.max))};
    }
  }
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) {
    const std::optional<int64_t>& value = t.*spec.member;
    if (value && (*value < spec.min || *value > spec.max)) {
      return {fmt::format("measurement.{}", spec.name),
              fmt::format("{} is not {} in {}..{}", *value, spec.meaning, spec.min, spec.max)};
    }
  }
  const bool ok = t.status == TrialStatus::kOk;
  if (ok && !t.time_median_ms) {
    return {"measurement.time_median_ms", "is missing; an ok trial needs a median time > 0"};
  }
  if (t.time_median_ms) {
    const double median = *t.time_median_ms;
    if (t.time_min_ms && *t.time_min_ms > median) {
      return {
          "measurement.time_min_ms",
          fmt::format(
              "{:g} is above time_median_ms {:g}; the fastest repetition cannot be slower than the median",
              *t.time_min_ms, median)};
    }
    if (t.time_max_ms && *t.time_max_ms < median) {
      return {
          "measurement.time_max_ms",
          fmt::format(
              "{:g} is below time_median_ms {:g}; the slowest repetition cannot be faster than the median",
              *t.time_max_ms, median)};
    }
    const double tflops = t.problem.flops() / (median * 1e9);
    if (t.tflops && !near(*t.tflops, tflops)) {
      return {"measurement.tflops",
              fmt::format("{:g} disagrees with the median time: {} in {:g} ms is {:g} TFLOP/s", *t.tflops,
                          t.problem.shape(), median, tflops)};
    }
    if (t.ratio_vs_cublas && t.cublas_ms && !near(*t.ratio_vs_cublas, *t.cublas_ms / median)) {
      return {"measurement.ratio_vs_cublas",
              fmt::format("{:g} disagrees with the times: cublas_ms {:g} / time_median_ms {:g} is {:g}",
                          *t.ratio_vs_cublas, *t.cublas_ms, median, *t.cublas_ms / median)};
    }
  }
  if (t.ratio_vs_cublas && !t.cublas_ms) {
    return {"measurement.ratio_vs_cublas", "is given without the cublas_ms it is computed from"};
  }
  // cuBLAS's own trial is the reference the others are verified against: it has no error to show.
  if (ok && std::isfinite(error_bound) && t.template_name != kVendorTemplate) {
    if (!t.rel_error) {
      return {"measurement.rel_error",
              "is missing; an ok result must show its error against cuBLAS to prove it was verified"};
    }
    const double bound = verified_error_bound(t.problem.dtype, t.problem.c_dtype, error_bound);
    if (*t.rel_error > bound) {
      return {
          "measurement.rel_error",
          fmt::format("{:g} exceeds the error bound {:g} of a verified {} result; such a kernel computes a "
                      "wrong result (pass --error-bound to accept a looser one)",
                      *t.rel_error, bound, t.problem.type_name())};
    }
  }
  if (!t.created_at.empty() && !is_timestamp(t.created_at)) {
    return {"created_at", fmt::format("'{}' is not a UTC time like 2025-01-31T12:00:00.000Z", t.created_at)};
  }
  if (!t.gemmforge_version.empty() && !is_token(t.gemmforge_version, 64)) {
    return {"gemmforge_version",
            fmt::format("'{}' is not a version (1 to 64 characters, no spaces)", t.gemmforge_version)};
  }
  return {};
}

}  // namespace gemmforge::db
