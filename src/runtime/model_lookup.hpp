// A GPU named by the user without the GPU at hand (`gemmforge query --device-name`): its limits come
// from a database that recorded the model, else from the nominal limits of its architecture.
#pragma once

#include <optional>
#include <string>

#include "core/device_info.hpp"
#include "runtime/result_source.hpp"

namespace gemmforge::runtime {

struct ModelDevice {
  DeviceInfo info;     ///< name is the model's full name as recorded, or as given
  std::string origin;  ///< where the limits come from, e.g. "database /x.db" or "nominal sm_90 limits"
};

/// Architecture of a known GPU model from its name ("NVIDIA H100 80GB HBM3", "H200", "A100-SXM4-40GB"
/// ...), matched case-insensitively; nullopt for a model gemmforge does not know.
std::optional<std::string> known_model_arch(const std::string& name);

/// The device `name` stands for: a device recorded in `user` (may be null), then in `shipped`, whose
/// name equals or contains `name`; else a known model with nominal limits. Throws InvalidArgumentError
/// when several models match, NotFoundError when none does.
ModelDevice model_device(const std::string& name, ResultSource* user, ResultSource& shipped);

}  // namespace gemmforge::runtime
