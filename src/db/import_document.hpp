// One entry of an import document checked in full before it may touch the database: every member typed
// and bounded, unknown members refused, the values consistent with each other, the config valid for its
// template. Internal to src/db.
#pragma once

#include <istream>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/device_info.hpp"
#include "db/exchange.hpp"
#include "db/json_field.hpp"
#include "db/records.hpp"

namespace gemmforge::db {

/// A result or trial of the document; trial.device_id is still unknown, device_uuid names the device.
struct ImportedTrial {
  std::string device_uuid;
  TrialRecord trial;
};

/// An entry of "vendor": the fastest cuBLAS time of a problem on a device among the ok trials recorded.
struct ImportedVendorTime {
  std::string device_uuid;
  KernelProblem problem;
  double cublas_ms = 0;
};

/// Checks a member of the document other than the arrays ("format", "format_version", ...); throws
/// InvalidArgumentError for a document that is not a gemmforge export of a version this build reads.
void check_header_member(const std::string& key, const nlohmann::json& value);

/// The members of a document read as a stream (header members and arrays): each header member checked as
/// it comes, and at the end those every export has.
class DocumentMembers {
 public:
  /// `origin` names the document in messages.
  explicit DocumentMembers(std::string origin = "") : origin_(std::move(origin)) {}
  /// check_header_member, the fault naming the document.
  void header(const std::string& key, const nlohmann::json& value);
  /// The start of one of the arrays ("devices", "results", "vendor", "trials").
  void section(const std::string& name) { seen_.insert(name); }
  /// Whether the member was met.
  bool has(const std::string& name) const { return seen_.count(name) != 0; }
  /// Whether every member an export has was met.
  bool complete() const;
  /// Throws InvalidArgumentError naming the first member an export has that was not met ("vendor" from
  /// version 2 on), or "vendor" in a document of version 1.
  void require_complete() const;

 private:
  std::string origin_;
  std::set<std::string> seen_;
  int64_t version_ = 0;  // the document's format_version, once met
};

/// An entry of "devices"; uuid holds the document's key ("GPU-..." or "model:<name>"). Throws
/// InvalidArgumentError naming the JSON path of the first fault.
DeviceInfo parse_device_entry(const JsonField& entry);

/// An entry of "results" (is_result: an ok measurement) or of "trials" (with a status): its members,
/// their meaning and consistency (trial_fault, an ok result within checks.error_bound), the config through
/// checks.validate, and whether its template source is servable here (trial.servable). Throws
/// InvalidArgumentError naming the JSON path of the first fault. The device reference and duplicates are
/// the importer's to check.
ImportedTrial parse_trial_entry(const JsonField& entry, bool is_result, const ImportChecks& checks);

/// Fails at `entry`'s "device" member, which names `uuid`, a device the document did not list before it.
[[noreturn]] void fail_unknown_device(const JsonField& entry, const std::string& uuid);

/// An entry of "vendor": its members and a positive, finite time. Throws InvalidArgumentError naming the
/// JSON path of the first fault. The device reference is the reader's to check.
ImportedVendorTime parse_vendor_entry(const JsonField& entry);

/// A document's "vendor" against its results and trials, by GPU model (devices of one name, ignoring case):
/// one entry for each model and problem whose ok results or trials carry cuBLAS times (a problem may have
/// trials and no result: none of its trials is of a template source this gemmforge serves), none slower
/// than a result's cuBLAS time, and, where the document lists its trials, each the fastest of its results'
/// and trials' cuBLAS times exactly.
class VendorTimesCheck {
 public:
  /// A device of the document, before the entries that name it.
  void device(const DeviceInfo& device);
  /// An entry of "vendor" at `entry`; fails there for a second entry of its model and problem.
  void listed(const ImportedVendorTime& time, const JsonField& entry);
  /// A result (is_result) or a trial of the document, on the device `device_uuid` names.
  void measured(const std::string& device_uuid, const TrialRecord& trial, bool is_result);
  /// Throws InvalidArgumentError naming the first model and problem where "vendor" disagrees; `trials`:
  /// the document's trials were all met.
  void check(bool trials) const;

 private:
  struct Times {
    std::string what;                  // the problem and the model, for messages
    std::string entry;                 // the JSON path of its entry of "vendor"
    std::optional<double> listed;      // in "vendor"
    std::optional<double> in_results;  // the fastest among the results
    std::optional<double> in_all;      // the fastest among the results and trials
  };
  Times& times(const std::string& device_uuid, const KernelProblem& problem);
  std::map<std::string, std::string> models_;  // a name of each device's model, by uuid
  std::map<std::string, Times> times_;         // by model and problem
};

/// A document's entries held in memory, checked as an import checks them, without a database.
struct ImportDocument {
  std::vector<DeviceInfo> devices;  ///< uuid holds the document's key ("GPU-..." or "model:<name>")
  std::vector<ImportedTrial> results;
  std::vector<ImportedTrial> trials;
  std::vector<ImportedVendorTime> vendor;
  bool has_vendor = false;  ///< the document lists "vendor" (format_version 2 on)
};

/// What read_import_document reads of a document.
enum class DocumentParts {
  kAll,
  /// All but the trials: reading stops where they start, once the header, devices, results and cuBLAS
  /// times are read (an export lists its trials last), so a large export's results come at the cost of a
  /// small one's.
  kDevicesAndResults,
};

/// Reads the export document in `in` a JSON entry at a time, checked as `gemmforge import` checks it: the
/// header, devices listed once and before the entries that name them, every entry, "vendor" against the
/// results and the trials read. Throws
/// InvalidArgumentError naming `origin` and the JSON path of the first fault.
ImportDocument read_import_document(std::istream& in, const std::string& origin, const ImportChecks& checks,
                                    DocumentParts parts = DocumentParts::kAll);

}  // namespace gemmforge::db
