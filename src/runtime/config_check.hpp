// Whether a stored config can serve a problem on a device: its template exists and computes the problem's
// dtype on this architecture, and the config satisfies every constraint of the manifest for that shape.
// Every answer of the fallback chain and every imported result passes through here.
#pragma once

#include <optional>
#include <string>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "db/exchange.hpp"

namespace gemmforge::runtime {

/// A config the manifest accepts for a problem on a device.
struct CheckedConfig {
  const KernelTemplate* kernel_template = nullptr;
  Config config;  ///< normalized: parameters in manifest order
};

/// The config, normalized, when `template_name` is known, computes problem.dtype, runs on the device's
/// architecture and `config_key` satisfies every constraint for the problem on the device; else nullopt
/// and, when `why` is given, the reason.
std::optional<CheckedConfig> check_config(const TemplateLibrary& library, const std::string& template_name,
                                          const std::string& config_key, const DeviceInfo& device,
                                          const KernelProblem& problem, std::string* why = nullptr);

/// Whether `hash` is the source of template `name` in this build (cuBLAS's trials, whose "hash" is its
/// version, always are): results of any other source are stored but never served.
bool current_source(const TemplateLibrary& library, const std::string& name, const std::string& hash);

/// Import validator wired to the manifests: the template is known and, for a trial of its current source
/// (template_hash), computes the problem's dtype, and the config normalizes and satisfies the constraints
/// that depend on the problem alone (device limits are checked again when a result is served); or it is
/// cuBLAS's trial of the problem's types. A trial of another source is stored but never served.
db::ConfigValidator manifest_validator(const TemplateLibrary& library);

}  // namespace gemmforge::runtime
