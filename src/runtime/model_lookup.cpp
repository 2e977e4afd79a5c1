// Resolving GPU model names without a GPU.
#include "runtime/model_lookup.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <utility>

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {
namespace {

// Checked in order: a longer name before any name it contains ("A100" before "A10", "L40" before "L4").
constexpr std::array<std::pair<const char*, const char*>, 11> kKnownModels{{
    {"GH200", "sm_90"},
    {"H200", "sm_90"},
    {"H100", "sm_90"},
    {"H800", "sm_90"},
    {"A100", "sm_80"},
    {"A800", "sm_80"},
    {"A30", "sm_80"},
    {"L40", "sm_89"},
    {"L4", "sm_89"},
    {"A40", "sm_86"},
    {"A10", "sm_86"},
}};

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

// The devices `name` matches in one source, as Database::devices_matching matches them (a uuid, the whole
// name ignoring case, else a part of it), and the distinct model names among them.
std::optional<ModelDevice> recorded(const std::string& name, ResultSource& source) {
  const std::vector<DeviceInfo> devices = source.devices();
  std::vector<const DeviceInfo*> found;
  for (const DeviceInfo& d : devices) {
    if (d.uuid == name) found.push_back(&d);
  }
  for (const bool whole : {true, false}) {
    if (!found.empty()) break;
    for (const DeviceInfo& d : devices) {
      if (whole ? same_gpu_model(d.name, name) : gpu_name_contains(d.name, name)) found.push_back(&d);
    }
  }
  std::set<std::string> models;
  for (const DeviceInfo* d : found) models.insert(d->name);
  if (models.size() > 1) {
    throw InvalidArgumentError(fmt::format("GPU model '{}' is ambiguous in {}: it matches {}", name,
                                           source.label(), fmt::join(models, ", ")));
  }
  if (found.empty()) return std::nullopt;
  return ModelDevice{*found.front(), source.label()};
}

}  // namespace

std::optional<std::string> known_model_arch(const std::string& name) {
  const std::string wanted = upper(name);
  for (const auto& [model, arch] : kKnownModels) {
    if (wanted.find(model) != std::string::npos) return std::string(arch);
  }
  return std::nullopt;
}

ModelDevice model_device(const std::string& name, ResultSource* user, ResultSource& shipped) {
  if (name.empty()) throw InvalidArgumentError("the GPU model name is empty");
  if (user != nullptr) {
    if (std::optional<ModelDevice> device = recorded(name, *user)) return std::move(*device);
  }
  if (std::optional<ModelDevice> device = recorded(name, shipped)) return std::move(*device);
  if (std::optional<std::string> arch = known_model_arch(name)) {
    ModelDevice device{DeviceInfo::nominal(*arch), fmt::format("nominal {} limits", *arch)};
    device.info.name = name;
    return device;
  }
  std::vector<std::string> known;
  for (const auto& [model, arch] : kKnownModels) known.push_back(fmt::format("{} ({})", model, arch));
  throw NotFoundError(fmt::format(
      "GPU model '{}' is neither recorded in a database nor a model gemmforge knows; known models: {}", name,
      fmt::join(known, ", ")));
}

}  // namespace gemmforge::runtime
