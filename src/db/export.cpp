// Exporting a database: the JSON document an Importer reads, and a CSV table for spreadsheets and pandas,
// both written one row at a time.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

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

// Reports progress every so many entries, and at the end.
class Counter {
 public:
  Counter(const Progress& progress, int64_t total) : progress_(progress), total_(total) {}
  void step() {
    if (++done_ % 4096 == 0 && progress_) progress_(done_, total_);
  }
  void end() const {
    if (progress_) progress_(done_, total_);
  }

 private:
  const Progress& progress_;
  int64_t total_;
  int64_t done_ = 0;
};

int64_t count(const Database& database, const std::vector<DeviceRecord>& devices, bool all_trials) {
  int64_t total = 0;
  for (const DeviceRecord& device : devices) {
    total += database.count_trials(device.id, true);
    if (all_trials) total += database.count_trials(device.id, false);
  }
  return total;
}

struct VendorTime {
  size_t model;             // the GPU model's place among the devices' models
  std::string device_uuid;  // the first of the model's devices that measured it
  KernelProblem problem;
  double cublas_ms = 0;
};

// The fastest cuBLAS time of each problem on each GPU model among `devices`' ok trials: the models in the
// order of their first device, each model's problems in the order its devices list them.
std::vector<VendorTime> fastest_cublas_per_model(const Database& database,
                                                 const std::vector<DeviceRecord>& devices) {
  std::vector<VendorTime> times;
  std::map<std::pair<size_t, std::string>, size_t> index;  // (model, problem) -> times
  std::vector<std::string> models;                         // a name of each model
  for (const DeviceRecord& device : devices) {
    const size_t model = static_cast<size_t>(
        std::find_if(models.begin(), models.end(),
                     [&](const std::string& m) { return same_gpu_model(m, device.info.name); }) -
        models.begin());
    if (model == models.size()) models.push_back(device.info.name);
    database.for_each_fastest_cublas(device.id, [&](const KernelProblem& problem, double cublas_ms) {
      const auto [slot, added] = index.emplace(std::pair{model, problem.to_string()}, times.size());
      if (added) {
        times.push_back(VendorTime{model, device.info.uuid, problem, cublas_ms});
      } else if (cublas_ms < times[slot->second].cublas_ms) {
        times[slot->second].device_uuid = device.info.uuid;
        times[slot->second].cublas_ms = cublas_ms;
      }
    });
  }
  std::stable_sort(times.begin(), times.end(),
                   [](const VendorTime& a, const VendorTime& b) { return a.model < b.model; });
  return times;
}

void check_stream(const std::ostream& out) {
  if (!out) throw InvalidArgumentError("the export could not be written (disk full or output closed)");
}

}  // namespace

ExportSummary write_export_json(const Database& database, std::ostream& out, const ExportOptions& options,
                                const Progress& progress) {
  const std::vector<DeviceRecord> devices = selected_devices(database, options);
  Counter counter(progress, count(database, devices, options.all_trials));
  ExportSummary summary;
  // The header first, so that a reader knows what it reads before the entries; one entry per line.
  out << "{\"format\": " << nlohmann::json(kExportFormat).dump()
      << ", \"format_version\": " << kExportFormatVersion
      << ", \"gemmforge_version\": " << nlohmann::json(gemmforge_version()).dump()
      << ", \"exported_at\": " << nlohmann::json(sql::utc_now()).dump() << ",\n\"devices\": [";
  for (const DeviceRecord& device : devices) {
    out << (summary.devices++ == 0 ? "\n" : ",\n") << device_json(device).dump();
  }
  out << "\n],\n\"results\": [";
  for (const DeviceRecord& device : devices) {
    database.for_each_trial(device.id, true, [&](const TrialRecord& best) {
      out << (summary.results++ == 0 ? "\n" : ",\n") << entry_json(best, false).dump();
      counter.step();
    });
    check_stream(out);
  }
  out << "\n],\n\"vendor\": [";
  int64_t vendor_times = 0;
  for (const VendorTime& time : fastest_cublas_per_model(database, devices)) {
    const nlohmann::json entry = {
        {"device", time.device_uuid}, {"problem", problem_json(time.problem)}, {"cublas_ms", time.cublas_ms}};
    out << (vendor_times++ == 0 ? "\n" : ",\n") << entry.dump();
  }
  check_stream(out);
  out << "\n]";
  if (options.all_trials) {
    out << ",\n\"trials\": [";
    for (const DeviceRecord& device : devices) {
      database.for_each_trial(device.id, false, [&](const TrialRecord& trial) {
        out << (summary.trials++ == 0 ? "\n" : ",\n") << entry_json(trial, true).dump();
        counter.step();
      });
      check_stream(out);
    }
    out << "\n]";
  }
  out << "}\n";
  out.flush();
  check_stream(out);
  counter.end();
  return summary;
}

ExportSummary write_export_csv(const Database& database, std::ostream& out, const ExportOptions& options,
                               const Progress& progress) {
  const std::vector<DeviceRecord> devices = selected_devices(database, options);
  int64_t total = 0;
  for (const DeviceRecord& device : devices) total += database.count_trials(device.id, !options.all_trials);
  Counter counter(progress, total);
  ExportSummary summary;
  std::string header =
      "device_uuid,device_name,dtype,layout,m,n,k,align_a,align_b,align_c,template,template_hash,config,"
      "status,reason,is_best";
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals)
    header += fmt::format(",{}", spec.name);
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) header += fmt::format(",{}", spec.name);
  out << header << ",created_at,gemmforge_version\r\n";
  std::string line;
  for (const DeviceRecord& device : devices) {
    ++summary.devices;
    database.for_each_trial(device.id, !options.all_trials, [&](const TrialRecord& t) {
      const KernelProblem& p = t.problem;
      line =
          fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(t.device_uuid),
                      csv_field(device.info.name), p.type_name(), p.layout(), p.m, p.n, p.k, p.align_a,
                      p.align_b, p.align_c, csv_field(t.template_name), csv_field(t.template_hash),
                      csv_field(t.config_key), to_string(t.status), csv_field(t.reason), t.is_best ? 1 : 0);
      for (const fields::MeasurementReal& spec : fields::kMeasurementReals)
        append_csv_optional(line, t.*spec.member);
      for (const fields::MeasurementInt& spec : fields::kMeasurementInts)
        append_csv_optional(line, t.*spec.member);
      line += fmt::format(",{},{}\r\n", csv_field(t.created_at), csv_field(t.gemmforge_version));
      out << line;
      ++(t.is_best ? summary.results : summary.trials);
      counter.step();
    });
    check_stream(out);
  }
  out.flush();
  check_stream(out);
  counter.end();
  return summary;
}

nlohmann::json export_json(const Database& database, const ExportOptions& options) {
  std::ostringstream text;
  write_export_json(database, text, options);
  return nlohmann::json::parse(text.str());
}

std::string export_csv(const Database& database, const ExportOptions& options) {
  std::ostringstream text;
  write_export_csv(database, text, options);
  return text.str();
}

}  // namespace gemmforge::db
