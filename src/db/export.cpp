// Exporting a database: the JSON document import_json reads, and a CSV table for spreadsheets and pandas.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "db/exchange.hpp"
#include "db/exchange_fields.hpp"
#include "db/sql.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

std::vector<DeviceRecord> selected_devices(const Database& database, const ExportOptions& options) {
  if (!options.device) return database.devices();
  std::vector<DeviceRecord> devices = database.devices_matching(*options.device);
  if (devices.empty()) {
    std::string known;
    for (const DeviceRecord& device : database.devices()) {
      known += fmt::format("{}{} ({})", known.empty() ? "" : ", ", device.info.name, device.info.uuid);
    }
    throw NotFoundError(fmt::format("no device in {} matches '{}'; it knows {}", database.path(),
                                    *options.device, known.empty() ? "no device at all" : known));
  }
  return devices;
}

// The trials an export holds: every one with all_trials, else the best of each problem.
std::vector<TrialRecord> selected_trials(const Database& database, const DeviceRecord& device,
                                         bool all_trials) {
  return all_trials ? database.trials(device.id) : database.best_for_device(device.id);
}

nlohmann::json device_json(const DeviceRecord& record) {
  const DeviceInfo& d = record.info;
  nlohmann::json out = {{"uuid", d.uuid},
                        {"name", d.name},
                        {"pci_bus_id", d.pci_bus_id},
                        {"memory_bytes", d.total_memory},
                        {"nvrtc_version", d.nvrtc_version}};
  for (const fields::DeviceInt& spec : fields::kDeviceInts) out[spec.name] = d.*spec.member;
  out["first_seen"] = record.first_seen;
  out["last_seen"] = record.last_seen;
  return out;
}

nlohmann::json problem_json(const KernelProblem& p) {
  nlohmann::json out = {{"dtype", to_string(p.dtype)},
                        {"layout", p.layout()},
                        {"m", p.m},
                        {"n", p.n},
                        {"k", p.k},
                        {"align_a", p.align_a},
                        {"align_b", p.align_b},
                        {"align_c", p.align_c}};
  // Alignments are in elements of their operand; C's type only where it differs from the operands'.
  if (p.c_dtype != default_output(p.dtype)) out["c_dtype"] = to_string(p.c_dtype);
  return out;
}

nlohmann::json measurement_json(const TrialRecord& trial) {
  nlohmann::json out = nlohmann::json::object();
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals) {
    const std::optional<double>& value = trial.*spec.member;
    out[spec.name] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) {
    const std::optional<int64_t>& value = trial.*spec.member;
    out[spec.name] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  }
  return out;
}

nlohmann::json entry_json(const TrialRecord& trial, bool with_status) {
  nlohmann::json out = {{"device", trial.device_uuid},     {"problem", problem_json(trial.problem)},
                        {"template", trial.template_name}, {"template_hash", trial.template_hash},
                        {"config", trial.config_key},      {"measurement", measurement_json(trial)},
                        {"created_at", trial.created_at},  {"gemmforge_version", trial.gemmforge_version}};
  if (with_status) {
    out["status"] = to_string(trial.status);
    out["reason"] = trial.reason;
  }
  return out;
}

// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

// An empty field for an unknown value; numbers in their shortest exact form.
template <class T>
void append_csv_optional(std::string& out, const std::optional<T>& value) {
  out += ',';
  if (value) out += fmt::format("{}", *value);
}

}  // namespace

nlohmann::json export_json(const Database& database, const ExportOptions& options) {
  nlohmann::json devices = nlohmann::json::array();
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json trials = nlohmann::json::array();
  for (const DeviceRecord& device : selected_devices(database, options)) {
    devices.push_back(device_json(device));
    for (const TrialRecord& best : database.best_for_device(device.id))
      results.push_back(entry_json(best, false));
    if (options.all_trials) {
      for (const TrialRecord& trial : database.trials(device.id)) trials.push_back(entry_json(trial, true));
    }
  }
  nlohmann::json document = {{"format", kExportFormat},
                             {"format_version", kExportFormatVersion},
                             {"gemmforge_version", gemmforge_version()},
                             {"exported_at", sql::utc_now()},
                             {"devices", std::move(devices)},
                             {"results", std::move(results)}};
  if (options.all_trials) document["trials"] = std::move(trials);
  return document;
}

std::string export_csv(const Database& database, const ExportOptions& options) {
  std::string out =
      "device_uuid,device_name,dtype,layout,m,n,k,align_a,align_b,align_c,template,template_hash,config,"
      "status,"
      "reason,is_best";
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals) out += fmt::format(",{}", spec.name);
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) out += fmt::format(",{}", spec.name);
  out += ",created_at,gemmforge_version\r\n";
  for (const DeviceRecord& device : selected_devices(database, options)) {
    for (const TrialRecord& t : selected_trials(database, device, options.all_trials)) {
      const KernelProblem& p = t.problem;
      out +=
          fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(t.device_uuid),
                      csv_field(device.info.name), p.type_name(), p.layout(), p.m, p.n, p.k, p.align_a,
                      p.align_b, p.align_c, csv_field(t.template_name), csv_field(t.template_hash),
                      csv_field(t.config_key), to_string(t.status), csv_field(t.reason), t.is_best ? 1 : 0);
      for (const fields::MeasurementReal& spec : fields::kMeasurementReals)
        append_csv_optional(out, t.*spec.member);
      for (const fields::MeasurementInt& spec : fields::kMeasurementInts)
        append_csv_optional(out, t.*spec.member);
      out += fmt::format(",{},{}\r\n", csv_field(t.created_at), csv_field(t.gemmforge_version));
    }
  }
  return out;
}

}  // namespace gemmforge::db
