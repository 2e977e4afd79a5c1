// Validation of import documents: every member typed, bounded and cross-checked, each config passed to the
// caller's validator, so that applying the document afterwards cannot fail on its content.
#include "db/import_document.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/config.hpp"
#include "core/dtype.hpp"
#include "db/exchange_fields.hpp"
#include "db/json_field.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

DeviceInfo parse_device(const JsonField& entry) {
  entry.object();
  DeviceInfo device;
  device.uuid = entry.at("uuid").text();
  device.name = entry.at("name").text();
  if (auto field = entry.find("pci_bus_id")) device.pci_bus_id = field->text(kMaxText, true);
  if (auto field = entry.find("nvrtc_version")) device.nvrtc_version = field->text(kMaxText, true);
  if (auto field = entry.find("memory_bytes")) {
    device.total_memory = field->integer(0, std::numeric_limits<int64_t>::max(), "a byte count");
  }
  for (const fields::DeviceInt& spec : fields::kDeviceInts) {
    const std::optional<JsonField> field =
        spec.required ? std::optional<JsonField>(entry.at(spec.name)) : entry.find(spec.name);
    if (field) device.*spec.member = static_cast<int>(field->integer(0, spec.max, "a count"));
  }
  return device;
}

KernelProblem parse_problem(const JsonField& field) {
  field.object();
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
  const std::string text = layout.text();
  if (text != "nn" && text != "nt" && text != "tn" && text != "tt") {
    layout.fail(fmt::format("{} is not a layout; expected \"nn\", \"nt\", \"tn\" or \"tt\"", layout.shown()));
  }
  parse_layout(text, problem.a_trans, problem.b_trans);
  problem.m = field.at("m").integer(1, fields::kMaxInt32, "a size");
  problem.n = field.at("n").integer(1, fields::kMaxInt32, "a size");
  problem.k = field.at("k").integer(1, fields::kMaxInt32, "a size");
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

void parse_measurement(const JsonField& field, TrialRecord& trial) {
  field.object();
  for (const fields::MeasurementReal& spec : fields::kMeasurementReals) {
    if (auto value = field.find(spec.name)) trial.*spec.member = value->number(0, spec.max, spec.meaning);
  }
  for (const fields::MeasurementInt& spec : fields::kMeasurementInts) {
    if (auto value = field.find(spec.name))
      trial.*spec.member = value->integer(spec.min, spec.max, spec.meaning);
  }
}

// A member of "results" (is_result: an ok measurement is required) or of "trials".
ImportedTrial parse_entry(const JsonField& entry, bool is_result, const std::set<std::string>& device_uuids,
                          const ConfigValidator& validate) {
  entry.object();
  ImportedTrial imported;
  TrialRecord& trial = imported.trial;
  const JsonField device = entry.at("device");
  imported.device_uuid = device.text();
  if (device_uuids.count(imported.device_uuid) == 0) {
    device.fail(fmt::format("{} is not the uuid of an entry of \"devices\"", device.shown()));
  }
  trial.problem = parse_problem(entry.at("problem"));
  trial.template_name = entry.at("template").text();
  trial.template_hash = entry.at("template_hash").text();
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
      trial.status = parse_trial_status(status.text());
    } catch (const InvalidArgumentError& error) {
      status.fail(error.what());
    }
    if (auto reason = entry.find("reason")) trial.reason = reason->text(fields::kMaxReason, true);
    if (auto measurement = entry.find("measurement")) parse_measurement(*measurement, trial);
  }
  if (trial.status == TrialStatus::kOk && (!trial.time_median_ms || *trial.time_median_ms <= 0)) {
    const std::string path = entry.path() + ".measurement.time_median_ms";
    throw InvalidArgumentError(fmt::format("{}: an ok measurement needs a median time > 0", path));
  }
  if (auto created_at = entry.find("created_at")) trial.created_at = created_at->text(64);
  if (auto version = entry.find("gemmforge_version")) trial.gemmforge_version = version->text(64);
  // A trial recorded as invalid breaks its manifest by definition; the validator would refuse it.
  if (validate && trial.status != TrialStatus::kInvalid) {
    try {
      validate(trial.template_name, trial.config_key, trial.problem);
    } catch (const InvalidArgumentError& error) {
      entry.fail(error.what());
    } catch (const NotFoundError& error) {
      entry.fail(error.what());
    }
  }
  return imported;
}

void check_format(const JsonField& root) {
  const JsonField format = root.at("format");
  if (!format.value().is_string() || format.value().get<std::string>() != kExportFormat) {
    format.fail(
        fmt::format("{} is not a gemmforge tuning export; expected \"{}\"", format.shown(), kExportFormat));
  }
  const JsonField version = root.at("format_version");
  const int64_t number =
      version.integer(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), "a version");
  if (number != kExportFormatVersion) {
    version.fail(
        fmt::format("version {} is not supported; this gemmforge reads version {} (a newer gemmforge "
                    "may read this file)",
                    number, kExportFormatVersion));
  }
}

}  // namespace

ImportDocument parse_import_document(const nlohmann::json& document, const ConfigValidator& validate) {
  const JsonField root(document, "");
  root.object();
  check_format(root);
  ImportDocument parsed;
  std::set<std::string> device_uuids;
  const JsonField devices = root.at("devices");
  for (size_t i = 0; i < devices.array().size(); ++i) {
    const JsonField entry = devices.element(i);
    parsed.devices.push_back(parse_device(entry));
    if (!device_uuids.insert(parsed.devices.back().uuid).second) {
      entry.at("uuid").fail(fmt::format("\"{}\" is listed twice", parsed.devices.back().uuid));
    }
  }
  const JsonField results = root.at("results");
  for (size_t i = 0; i < results.array().size(); ++i) {
    parsed.results.push_back(parse_entry(results.element(i), true, device_uuids, validate));
  }
  if (auto trials = root.find("trials")) {
    for (size_t i = 0; i < trials->array().size(); ++i) {
      parsed.trials.push_back(parse_entry(trials->element(i), false, device_uuids, validate));
    }
  }
  return parsed;
}

}  // namespace gemmforge::db
