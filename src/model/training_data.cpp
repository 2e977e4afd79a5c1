// Bookkeeping of the training data's devices.
#include "model/training_data.hpp"

#include <algorithm>

namespace gemmforge::model {

size_t TrainingData::add_device(const DeviceInfo& device) {
  const auto same = [&](const DeviceInfo& d) {
    return device.uuid.empty() ? d.uuid.empty() && same_model(d, device) : d.uuid == device.uuid;
  };
  const auto it = std::find_if(devices.begin(), devices.end(), same);
  if (it != devices.end()) return static_cast<size_t>(it - devices.begin());
  devices.push_back(device);
  return devices.size() - 1;
}

bool same_model(const DeviceInfo& a, const DeviceInfo& b) {
  return same_gpu_model(a.name, b.name);
}

}  // namespace gemmforge::model
