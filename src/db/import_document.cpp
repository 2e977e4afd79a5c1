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
    if (number != kExportFormatVersion) {
      field.fail(
          fmt::format("version {} is not supported; this gemmforge reads version {} (a newer gemmforge "
                      "may read this file)",
                      number, kExportFormatVersion));
    }
  } else if (key == "gemmforge_version") {
    if (!is_token(field.text(64), 64)) field.fail(fmt::format("{} is not a version", field.shown()));
  } else if (key == "exported_at") {
    if (!is_timestamp(field.text(64))) {
      field.fail(fmt::format("{} is not a UTC time like \"2025-01-31T12:00:00.000Z\"", field.shown()));
    }
  } else if (key == "devices" || key == "results" || key == "trials") {
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

namespace {

constexpr const char* kRequiredMembers[] = {"format", "format_version", "devices", "results"};

}  // namespace

void DocumentMembers::header(const std::string& key, const nlohmann::json& value) {
  try {
    check_header_member(key, value);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(fmt::format("{}: {}", origin_, e.what()));
  }
  seen_.insert(key);
}

bool DocumentMembers::complete() const {
  for (const char* required : kRequiredMembers) {
    if (seen_.count(required) == 0) return false;
  }
  return true;
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
        return;
      }
      std::vector<ImportedTrial>& out = section == Section::kResults ? document_.results : document_.trials;
      out.push_back(parse_trial_entry(field, section == Section::kResults, checks_));
      if (device_uuids_.count(out.back().device_uuid) == 0) {
        field.at("device").fail(fmt::format(
            "\"{}\" is not the uuid of an entry of \"devices\" (listed before the entries that name it)",
            out.back().device_uuid));
      }
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError(fmt::format("{}: {}", origin_, e.what()));
    }
  }

  ImportDocument finish() {
    members_.require_complete();
    return std::move(document_);
  }

 private:
  const std::string& origin_;
  const ImportChecks& checks_;
  DocumentParts parts_;
  DocumentMembers members_;
  std::set<std::string> device_uuids_;
  bool skipping_ = false;  // in the trials, which are not wanted
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
