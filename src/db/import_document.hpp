// An import document checked in full, before anything touches the database. Internal to src/db.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "db/exchange.hpp"
#include "db/records.hpp"

namespace gemmforge::db {

/// A result or trial of the document; trial.device_id is still unknown, device_uuid names the device.
struct ImportedTrial {
  std::string device_uuid;
  TrialRecord trial;
};

struct ImportDocument {
  std::vector<DeviceInfo> devices;  ///< uuid holds the document's key ("GPU-..." or "model:<name>")
  std::vector<ImportedTrial> results;
  std::vector<ImportedTrial> trials;
};

/// Validates everything exchange.hpp promises for import_json; throws InvalidArgumentError naming the
/// JSON path of the first fault.
ImportDocument parse_import_document(const nlohmann::json& document, const ConfigValidator& validate);

}  // namespace gemmforge::db
