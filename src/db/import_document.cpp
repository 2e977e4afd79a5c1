// Validation of the entries of import documents, so that applying them afterwards cannot fail on their
// content.
#include "db/import_document.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/config.hpp"
#include "core/dtype.hpp"
#include "db/exchange_fields.hpp"
#include "db/export_reader.hpp"
#include "db/record_checks.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

[[noreturn]] void fail_at(const JsonField& entry, const Fault& fault) {
  throw InvalidArgumentError(fmt::format("{}.{}: {}", entry.path(), fault.field, fault.message));
}

KernelProblem parse_problem(const JsonField& field) {
  field.only({"dtype", "c_dtype", "layout", "m", "n", "k", "align_a", "align_b", "align_c"});
  KernelProblem problem;
  const JsonField dtype = field.at("dtype");
  try {
    problem.dtype = parse_dtype(dtype.text(32));
  } catch (const InvalidArgumentError& error) {
    dtype.fail(error.what());
  }
  // C's type: written only where it differs from the operands' (a 16-bit problem with an FP32 C).
  problem.c_dtype = default_output(problem.dtype);
  if (const std::optional<JsonField> c_dtype = field.find("c_dtype")) {
    try {
      problem.c_dtype = parse_dtype(c_dtype->text(32));
    } catch (const InvalidArgumentError& error) {
      c_dtype->fail(error.what());
    }
    if (!output_allowed(problem.dtype, problem.c_dtype)) {
      c_dtype->fail(fmt::format("{} operands cannot give a {} C", to_string(problem.dtype),
                                to_string(problem.c_dtype)));
    }
  }
  const JsonField layout = field.at("layout");
  const std::string text = layout.text(8);
  if (text != "nn" && text != "nt" && text != "tn" && text != "tt") {
    layout.fail(fmt::format("{} is not a layout; expected \"nn\", \"nt\", \"tn\" or \"tt\"", layout.shown()));
  }
  parse_layout(text, problem.a_trans, problem.b_trans);
  problem.m = field.at("m").integer(1, kMaxDimension, "a size");
  problem.n = field.at("n").integer(1, kMaxDimension, "a size");
  problem.k = field.at("k").integer(1, kMaxDimension, "a size");
  // Alignments in elements of their operand: a power of two, of at most 16 bytes.
  for (auto [name, member, type] : {std::tuple{"align_a", &KernelProblem::align_a, problem.dtype},
                                    std::tuple{"align_b", &KernelProblem::align_b, problem.dtype},
                                    std::tuple{"align_c", &KernelProblem::align_c, problem.c_dtype}}) {
    const JsonField align = field.at(name);
    const int widest = 16 / element_bytes(type);
    const int64_t value = align.integer(1, widest, "an alignment");
    if ((value & (value - 1)) != 0) {
      align.fail(fmt::format("{} is not an alignment; expected a power of two up to {}", value, widest));
    }
    problem.*member = static_cast<int>(value);
  }
  return problem;
}

// Types only: the ranges are trial_fault's, shared with rows read back from a database.
void parse_measurement(const JsonField& field, TrialRecord& trial) {
  field.object();
  for (const auto& [key, value] : field.value().items()) {
    bool known = false;
    for (const fields::MeasurementReal& spec : fields::kMeasurementReals) known = known || key == spec.name;
    for (const fields::MeasurementInt& spec : fields::kMeasurementInts) known = known || key == spec.name;
    if (!known) field.fail(fmt::format("unknown member \"{}\"; it is no measurement gemmforge records", key));
  }
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals) {
    if (auto value = field.find(spec.name)) {
      if (!value->value().is_number()) value->fail(fmt::format("{} is not a number", value->shown()));
      const double number = value->value().get<double>();
      if (!std::isfinite(number))
        value->fail(fmt::format("{} is not {}: it is not finite", value->shown(), spec.meaning));
      trial.*spec.member = number;
    }
  }
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) {
    if (auto value = field.find(spec.name)) {
      trial.*spec.member = value->integer(std::numeric_limits<int64_t>::min(),
                                          std::numeric_limits<int64_t>::max(), spec.meaning);
    }
  }
}

}  // namespace

void check_header_member(const std::string& key, const nlohmann::json& value) {
  const JsonField field(value, key);
  if (key == "format") {
    if (!value.is_string() || value.get<std::string>() != kExportFormat) {
      field.fail(
          fmt::format("{} is not a gemmforge tuning export; expected \"{}\"", field.shown(), kExportFormat));
    }
  } else if (key == "format_version") {
    const int64_t number =
        field.integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "a version");
    if (number < kOldestExportFormatVersion || number > kExportFormatVersion) {
      field.fail(fmt::format("version {} is not supported; this gemmforge reads versions {} to {}{}", number,
                             kOldestExportFormatVersion, kExportFormatVersion,
                             number > kExportFormatVersion ? " (a newer gemmforge may read this file)" : ""));
    }
  } else if (key == "gemmforge_version") {
    if (!is_token(field.text(64), 64)) field.fail(fmt::format("{} is not a version", field.shown()));
  } else if (key == "exported_at") {
    if (!is_timestamp(field.text(64))) {
      field.fail(fmt::format("{} is not a UTC time like \"2025-01-31T12:00:00.000Z\"", field.shown()));
    }
  } else if (key == "devices" || key == "results" || key == "vendor" || key == "trials") {
    field.array();  // throws: the reader hands over only what is not an array
  } else {
    field.fail("is not a member of a gemmforge export");
  }
}

DeviceInfo parse_device_entry(const JsonField& entry) {
  static const std::initializer_list<const char*> kMembers = {"uuid",
                                                              "name",
                                                              "pci_bus_id",
                                                              "memory_bytes",
                                                              "nvrtc_version",
                                                              "first_seen",
                                                              "last_seen",
                                                              "cc_major",
                                                              "cc_minor",
                                                              "sm_count",
                                                              "smem_per_block",
                                                              "smem_per_block_optin",
                                                              "smem_per_sm",
                                                              "regs_per_block",
                                                              "regs_per_sm",
                                                              "max_threads_per_block",
                                                              "max_threads_per_sm",
                                                              "max_blocks_per_sm",
                                                              "warp_size",
                                                              "l2_bytes",
                                                              "clock_khz",
                                                              "memory_clock_khz",
                                                              "memory_bus_width",
                                                              "driver_version",
                                                              "runtime_version"};
  entry.only(kMembers);
  DeviceInfo device;
  device.uuid = entry.at("uuid").text(256);
  device.name = entry.at("name").text(256);
  if (auto field = entry.find("pci_bus_id")) device.pci_bus_id = field->text(64, true);
  if (auto field = entry.find("nvrtc_version")) device.nvrtc_version = field->text(64, true);
  if (auto field = entry.find("memory_bytes")) {
    device.total_memory = field->integer(0, std::numeric_limits<int64_t>::max(), "a byte count");
  }
  for (const fields::DeviceInt& spec : fields::kDeviceInts) {
    const std::optional<JsonField> field =
        spec.required ? std::optional<JsonField>(entry.at(spec.name)) : entry.find(spec.name);
    if (field) device.*spec.member = static_cast<int>(field->integer(0, fields::kMaxInt32, spec.meaning));
  }
  for (const char* name : {"first_seen", "last_seen"}) {
    if (auto field = entry.find(name); field && !is_timestamp(field->text(64))) {
      field->fail(fmt::format("{} is not a UTC time like \"2025-01-31T12:00:00.000Z\"", field->shown()));
    }
  }
  if (const Fault fault = device_fault(device)) fail_at(entry, fault);
  return device;
}

ImportedTrial parse_trial_entry(const JsonField& entry, bool is_result, const ImportChecks& checks) {
  if (is_result) {
    entry.only({"device", "problem", "template", "template_hash", "config", "measurement", "created_at",
                "gemmforge_version"});
  } else {
    entry.only({"device", "problem", "template", "template_hash", "config", "measurement", "created_at",
                "gemmforge_version", "status", "reason"});
  }
  ImportedTrial imported;
  TrialRecord& trial = imported.trial;
  imported.device_uuid = entry.at("device").text(256);
  trial.problem = parse_problem(entry.at("problem"));
  trial.template_name = entry.at("template").text(256);
  trial.template_hash = entry.at("template_hash").text(64);
  const JsonField config = entry.at("config");
  trial.config_key = config.text();
  try {
    Config::parse_key(trial.template_name, trial.config_key);
  } catch (const InvalidArgumentError& error) {
    config.fail(error.what());
  }
  if (is_result) {
    parse_measurement(entry.at("measurement"), trial);  // status stays ok
  } else {
    const JsonField status = entry.at("status");
    try {
      trial.status = parse_trial_status(status.text(32));
    } catch (const InvalidArgumentError& error) {
      status.fail(error.what());
    }
    if (auto reason = entry.find("reason")) trial.reason = reason->text(fields::kMaxReason, true);
    if (auto measurement = entry.find("measurement")) parse_measurement(*measurement, trial);
  }
  if (auto created_at = entry.find("created_at")) trial.created_at = created_at->text(64);
  if (auto version = entry.find("gemmforge_version")) trial.gemmforge_version = version->text(64);
  if (const Fault fault = trial_fault(trial, checks.error_bound)) fail_at(entry, fault);
  trial.servable = checks.servable(trial.template_name, trial.template_hash);
  // A trial recorded as invalid breaks its manifest by definition; the validator would refuse it.
  if (checks.validate && trial.status != TrialStatus::kInvalid) {
    try {
      checks.validate(trial.template_name, trial.template_hash, trial.config_key, trial.problem);
    } catch (const InvalidArgumentError& error) {
      entry.fail(error.what());
    } catch (const NotFoundError& error) {
      entry.fail(error.what());
    }
  }
  return imported;
}

void fail_unknown_device(const JsonField& entry, const std::string& uuid) {
  entry.at("device").fail(fmt::format(
      "\"{}\" is not the uuid of an entry of \"devices\" (listed before the entries that name it)", uuid));
}

ImportedVendorTime parse_vendor_entry(const JsonField& entry) {
  entry.only({"device", "problem", "cublas_ms"});
  ImportedVendorTime time;
  time.device_uuid = entry.at("device").text(256);
  time.problem = parse_problem(entry.at("problem"));
  const JsonField ms = entry.at("cublas_ms");
  if (!ms.value().is_number()) ms.fail(fmt::format("{} is not a number", ms.shown()));
  time.cublas_ms = ms.value().get<double>();
  if (!std::isfinite(time.cublas_ms) || time.cublas_ms <= 0)
    ms.fail(fmt::format("{} is not a time: it must be positive and finite", ms.shown()));
  return time;
}

namespace {

void keep_fastest(std::optional<double>& fastest, double ms) {
  if (!fastest || ms < *fastest) fastest = ms;
}

}  // namespace

void VendorTimesCheck::device(const DeviceInfo& device) {
  for (const auto& [uuid, model] : models_) {
    if (same_gpu_model(model, device.name)) {
      models_[device.uuid] = model;
      return;
    }
  }
  models_[device.uuid] = device.name;
}

VendorTimesCheck::Times& VendorTimesCheck::times(const std::string& device_uuid,
                                                 const KernelProblem& problem) {
  const std::string& model = models_.at(device_uuid);
  Times& times = times_[model + "|" + problem.to_string()];
  if (times.what.empty()) times.what = fmt::format("{} on {}", problem.to_string(), model);
  return times;
}

void VendorTimesCheck::listed(const ImportedVendorTime& time, const JsonField& entry) {
  Times& found = times(time.device_uuid, time.problem);
  if (found.listed)
    entry.fail(fmt::format("a second entry for {}; {} is the first", found.what, found.entry));
  found.listed = time.cublas_ms;
  found.entry = entry.path();
}

void VendorTimesCheck::measured(const std::string& device_uuid, const TrialRecord& trial, bool is_result) {
  if (!counts_cublas_time(trial)) return;
  Times& found = times(device_uuid, trial.problem);
  if (is_result) keep_fastest(found.in_results, *trial.cublas_ms);
  keep_fastest(found.in_all, *trial.cublas_ms);
}

void VendorTimesCheck::check(bool trials) const {
  for (const auto& [key, times] : times_) {
    if (!times.listed) {
      throw InvalidArgumentError(fmt::format(
          "vendor: {} has ok results or trials with cuBLAS times ({:g} ms the fastest) but no entry",
          times.what, *times.in_all));
    }
    const auto fault = [&](const std::string& message) {
      return InvalidArgumentError(
          fmt::format("{}: {}: {:g} ms {}", times.entry, times.what, *times.listed, message));
    };
    if (times.in_results && *times.listed > *times.in_results) {
      throw fault(
          fmt::format("is slower than a result's cuBLAS time, {:g} ms: it is not the fastest on record",
                      *times.in_results));
    }
    if (trials && !times.in_all) throw fault("is no ok result's or trial's cuBLAS time: none carries one");
    if (trials && *times.listed != *times.in_all) {
      throw fault(
          fmt::format("is not the fastest cuBLAS time of its results and trials, {:g} ms", *times.in_all));
    }
  }
}

namespace {

constexpr const char* kRequiredMembers[] = {"format", "format_version", "devices", "results"};

}  // namespace

void DocumentMembers::header(const std::string& key, const nlohmann::json& value) {
  try {
    check_header_member(key, value);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(fmt::format("{}: {}", origin_, e.what()));
  }
  if (key == "format_version") version_ = value.get<int64_t>();
  seen_.insert(key);
}

bool DocumentMembers::complete() const {
  for (const char* required : kRequiredMembers) {
    if (seen_.count(required) == 0) return false;
  }
  return version_ < kVendorExportFormatVersion || has("vendor");
}

void DocumentMembers::require_complete() const {
  for (const char* required : kRequiredMembers) {
    if (seen_.count(required) == 0) {
      throw InvalidArgumentError(fmt::format("{}: {}: missing; {}", origin_, required,
                                             seen_.count("format") == 0
                                                 ? "this is not a gemmforge export"
                                                 : "a gemmforge export always has it"));
    }
  }
  if (version_ >= kVendorExportFormatVersion && !has("vendor")) {
    throw InvalidArgumentError(
        fmt::format("{}: vendor: missing; an export of format_version {} always has it", origin_, version_));
  }
  if (version_ < kVendorExportFormatVersion && has("vendor")) {
    throw InvalidArgumentError(
        fmt::format("{}: vendor: is not a member of format_version {}; it came with version {}", origin_,
                    version_, kVendorExportFormatVersion));
  }
}

namespace {

// Collects a document read as a stream into an ImportDocument, entry by entry, as the importer checks them.
class DocumentReader : public ExportVisitor {
 public:
  DocumentReader(const std::string& origin, const ImportChecks& checks, DocumentParts parts)
      : origin_(origin), checks_(checks), parts_(parts), members_(origin) {}

  void header(const std::string& key, const nlohmann::json& value) override { members_.header(key, value); }

  bool section(Section section) override {
    members_.section(to_string(section));
    if (section == Section::kTrials) trials_started_ = true;
    skipping_ = section == Section::kTrials && parts_ == DocumentParts::kDevicesAndResults;
    // An export lists its trials last: what is wanted has been read, unless this document lists them first.
    return !(skipping_ && members_.complete());
  }

  void entry(Section section, size_t index, const nlohmann::json& value) override {
    if (section == Section::kTrials && skipping_) return;
    const JsonField field(value, fmt::format("{}[{}]", to_string(section), index));
    try {
      field.object();
      if (section == Section::kDevices) {
        document_.devices.push_back(parse_device_entry(field));
        if (!device_uuids_.insert(document_.devices.back().uuid).second)
          field.at("uuid").fail(fmt::format("\"{}\" is listed twice", document_.devices.back().uuid));
        vendor_.device(document_.devices.back());
        return;
      }
      if (section == Section::kVendor) {
        document_.vendor.push_back(parse_vendor_entry(field));
        check_device(field, document_.vendor.back().device_uuid);
        vendor_.listed(document_.vendor.back(), field);
        return;
      }
      std::vector<ImportedTrial>& out = section == Section::kResults ? document_.results : document_.trials;
      out.push_back(parse_trial_entry(field, section == Section::kResults, checks_));
      check_device(field, out.back().device_uuid);
      vendor_.measured(out.back().device_uuid, out.back().trial, section == Section::kResults);
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError(fmt::format("{}: {}", origin_, e.what()));
    }
  }

  ImportDocument finish() {
    members_.require_complete();
    document_.has_vendor = members_.has("vendor");
    if (document_.has_vendor) {
      try {
        vendor_.check(trials_started_ && !skipping_);
      } catch (const InvalidArgumentError& e) {
        throw InvalidArgumentError(fmt::format("{}: {}", origin_, e.what()));
      }
    }
    return std::move(document_);
  }

 private:
  void check_device(const JsonField& entry, const std::string& uuid) const {
    if (device_uuids_.count(uuid) == 0) fail_unknown_device(entry, uuid);
  }

  const std::string& origin_;
  const ImportChecks& checks_;
  DocumentParts parts_;
  DocumentMembers members_;
  std::set<std::string> device_uuids_;
  bool skipping_ = false;  // in the trials, which are not wanted
  bool trials_started_ = false;
  VendorTimesCheck vendor_;
  ImportDocument document_;
};

}  // namespace

ImportDocument read_import_document(std::istream& in, const std::string& origin, const ImportChecks& checks,
                                    DocumentParts parts) {
  DocumentReader reader(origin, checks, parts);
  read_export(in, origin, reader);
  return reader.finish();
}

}  // namespace gemmforge::db
