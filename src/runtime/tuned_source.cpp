// Reading tuning results of one or several stacked databases for the selector.
#include "runtime/tuned_source.hpp"

#include <algorithm>

#include "core/device_info.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

std::vector<db::DeviceRecord> model_devices(const db::Database& database, const std::string& name) {
  std::vector<db::DeviceRecord> found = database.devices_matching(name);
  // devices_matching also accepts a uuid or a part of the name; a model is the whole name.
  std::erase_if(found, [&](const db::DeviceRecord& d) { return !same_gpu_model(d.info.name, name); });
  return found;
}

TunedSource::TunedSource(SharedDatabase& database, std::string label)
    : TunedSource(std::vector<SharedDatabase*>{&database}, std::move(label)) {}

TunedSource::TunedSource(std::vector<SharedDatabase*> layers, std::string label)
    : layers_(std::move(layers)), label_(std::move(label)) {
  if (layers_.empty()) throw InternalError("a TunedSource needs at least one database");
}

std::vector<db::TrialRecord> TunedSource::exact(const DeviceInfo& device, const KernelProblem& problem) {
  std::vector<db::TrialRecord> found;
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      const std::optional<int64_t> problem_id = database.find_problem(problem);
      if (!problem_id) return;
      // Each card's best, in the order to serve them (the card's own near the fastest, then fastest first).
      const std::string own_key = db::device_key(device);
      std::vector<std::pair<bool, db::TrialRecord>> bests;  // (this card, its best)
      for (const db::DeviceRecord& d : model_devices(database, device.name)) {
        if (std::optional<db::TrialRecord> best = database.best(d.id, *problem_id))
          bests.emplace_back(d.info.uuid == own_key, std::move(*best));
      }
      for (db::TrialRecord& best : order_exact_results(std::move(bests))) found.push_back(std::move(best));
    });
  }
  return found;
}

void TunedSource::add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) {
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      for (const db::DeviceRecord& d : database.devices()) {
        if (d.info.cc() != cc) continue;
        for (const db::TrialRecord& trial : database.trials(d.id)) add_trial(trial, d.info, library, data);
      }
    });
  }
}

std::optional<double> TunedSource::vendor_ms(const DeviceInfo& model, const KernelProblem& problem) {
  std::optional<double> fastest;
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      const std::optional<int64_t> problem_id = database.find_problem(problem);
      if (!problem_id) return;
      for (const db::DeviceRecord& d : model_devices(database, model.name)) {
        const std::optional<double> ms = database.fastest_cublas_ms(d.id, *problem_id);
        if (ms && (!fastest || *ms < *fastest)) fastest = ms;
      }
    });
  }
  return fastest;
}

std::vector<KernelProblem> TunedSource::problems_of(const DeviceInfo& model,
                                                    const std::string& template_name) {
  std::vector<KernelProblem> problems;
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      for (const db::DeviceRecord& d : model_devices(database, model.name)) {
        for (const db::TrialRecord& t : database.trials(d.id)) {
          if (t.template_name == template_name && t.status == db::TrialStatus::kOk &&
              std::find(problems.begin(), problems.end(), t.problem) == problems.end())
            problems.push_back(t.problem);
        }
      }
    });
  }
  return problems;
}

std::vector<DeviceInfo> TunedSource::devices() {
  std::vector<DeviceInfo> devices;
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      for (const db::DeviceRecord& d : database.devices()) devices.push_back(d.info);
    });
  }
  return devices;
}

}  // namespace gemmforge::runtime
