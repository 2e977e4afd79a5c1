// Whether the values of a device or a trial mean what they claim: each field within the range of its
// meaning, and the fields of a record consistent with each other. One set of rules serves imports (a
// fault names the JSON path) and rows read back from a database (a fault names the file and the row).
// Internal to src/db.
#pragma once

#include <string>

#include "core/device_info.hpp"
#include "db/exchange_fields.hpp"
#include "db/records.hpp"

namespace gemmforge::db {

/// A broken rule: the field (as a JSON path below its record, e.g. "measurement.time_min_ms") and what
/// is wrong with its value ("2.5 is above time_median_ms 2.0"). Empty when nothing is.
struct Fault {
  std::string field;
  std::string message;
  explicit operator bool() const { return !message.empty(); }
};

/// ISO-8601 UTC with optional fraction, as gemmforge writes it: "2025-01-31T12:00:00.000Z".
bool is_timestamp(const std::string& text);
/// A word of 1 to max_bytes printable characters without spaces: a version, a source hash. Whether a
/// hash is a known template source is the importer's question, not a matter of form.
bool is_token(const std::string& text, size_t max_bytes);

/// The first fault of a device: its key ("GPU-...", "MIG-..." or "model:<name>") and name, the ranges
/// of exchange_fields.hpp, the formats of the PCI bus id and the NVRTC version.
Fault device_fault(const DeviceInfo& device);

/// The first fault of a trial: ranges of exchange_fields.hpp; time_min <= time_median <= time_max;
/// tflops and ratio_vs_cublas consistent with the median time, the problem and cublas_ms; an ok trial
/// has a median time; timestamps, version, hash and key well formed; the problem's sizes. Where
/// `error_bound` is finite, an ok trial must also prove it was verified: a rel_error at most the bound.
Fault trial_fault(const TrialRecord& trial, double error_bound = fields::kUnbounded);

}  // namespace gemmforge::db
