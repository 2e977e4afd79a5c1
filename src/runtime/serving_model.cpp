// Gathering the measurements of an architecture and fitting the serving models on them.
#include "runtime/serving_model.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <set>

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

model::TrainingData gather_measurements(const TemplateLibrary& library, int cc,
                                        const std::vector<ResultSource*>& sources,
                                        std::vector<std::string>& read) {
  model::TrainingData data;
  for (ResultSource* source : sources) {
    try {
      source->add_measurements(cc, library, data);
      read.push_back(source->label());
    } catch (const Error& e) {
      spdlog::warn("the performance model leaves out {}: {}", source->label(), e.what());
    }
  }
  return data;
}

ServingModel::ServingModel(const TemplateLibrary& library, const DeviceInfo& device,
                           const std::vector<ResultSource*>& sources)
    : data(gather_measurements(library, device.cc(), sources, this->sources)),
      kernels(library, device, data),
      vendor(device, data),
      portfolio(library, device, data) {}

std::string ServingModel::describe() const {
  std::set<std::string> models;
  for (const DeviceInfo& d : data.devices) models.insert(d.name);
  if (kernels.measurements() == 0) {
    return fmt::format("no measurements of {} GPUs ({}): the analytic model alone, over template seeds",
                       kernels.device().arch(), fmt::join(sources, ", "));
  }
  return fmt::format("{} measurements of {} problems on {} ({})", kernels.measurements(), kernels.problems(),
                     fmt::join(models, ", "), fmt::join(sources, ", "));
}

}  // namespace gemmforge::runtime
