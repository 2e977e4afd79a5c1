// One entry of an import document checked in full before it may touch the database: every member typed
// and bounded, unknown members refused, the values consistent with each other, the config valid for its
// template. Internal to src/db.
#pragma once

#include <istream>
#include <nlohmann/json_fwd.hpp>
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
  /// The start of one of the arrays ("devices", "results", "trials").
  void section(const std::string& name) { seen_.insert(name); }
  /// Whether every member an export has was met.
  bool complete() const;
  /// Throws InvalidArgumentError naming the first member an export has that was not met.
  void require_complete() const;

 private:
  std::string origin_;
  std::set<std::string> seen_;
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

/// A document's entries held in memory, checked as an import checks them, without a database.
struct ImportDocument {
  std::vector<DeviceInfo> devices;  ///< uuid holds the document's key ("GPU-..." or "model:<name>")
  std::vector<ImportedTrial> results;
  std::vector<ImportedTrial> trials;
};

/// What read_import_document reads of a document.
enum class DocumentParts {
  kAll,
  /// All but the trials: reading stops where they start, once the header, devices and results are read
  /// (an export lists its trials last), so a large export's results come at the cost of a small one's.
  kDevicesAndResults,
};

/// Reads the export document in `in` a JSON entry at a time, checked as `gemmforge import` checks it: the
/// header, devices listed once and before the entries that name them, every entry. Throws
/// InvalidArgumentError naming `origin` and the JSON path of the first fault.
ImportDocument read_import_document(std::istream& in, const std::string& origin, const ImportChecks& checks,
                                    DocumentParts parts = DocumentParts::kAll);

}  // namespace gemmforge::db
