// Reading tuning results for the fallback chain.
#include "runtime/tuned_source.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

}  // namespace

std::vector<db::DeviceRecord> model_devices(const db::Database& database, const std::string& name) {
  std::vector<db::DeviceRecord> found = database.devices_matching(name);
  // devices_matching also accepts a uuid or a part of the name; a model is the whole name.
  std::erase_if(found, [&](const db::DeviceRecord& d) { return lower(d.info.name) != lower(name); });
  return found;
}

TunedSource::TunedSource(SharedDatabase& database, std::string label)
    : TunedSource(std::vector<SharedDatabase*>{&database}, std::move(label)) {}

TunedSource::TunedSource(std::vector<SharedDatabase*> layers, std::string label)
    : layers_(std::move(layers)), label_(std::move(label)) {
  if (layers_.empty()) throw InternalError("a TunedSource needs at least one database");
}

std::vector<db::DeviceRecord> TunedSource::devices_matching(const std::string& text) {
  std::vector<db::DeviceRecord> found;
  for (SharedDatabase* layer : layers_) {
    std::vector<db::DeviceRecord> more =
        layer->with([&](db::Database& d) { return d.devices_matching(text); });
    found.insert(found.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  }
  return found;
}

std::vector<db::TrialRecord> TunedSource::exact(const DeviceInfo& device, const KernelProblem& problem) {
  std::vector<db::TrialRecord> found;
  for (SharedDatabase* layer : layers_) {
    layer->with([&](db::Database& database) {
      const std::optional<int64_t> problem_id = database.find_problem(problem);
      if (!problem_id) return;
      std::vector<db::DeviceRecord> devices = model_devices(database, device.name);
      // The device itself first: its own measurement beats one of another card of the same model.
      const std::string own_key = db::device_key(device);
      std::stable_partition(devices.begin(), devices.end(),
                            [&](const db::DeviceRecord& d) { return d.info.uuid == own_key; });
      for (const db::DeviceRecord& d : devices) {
        if (std::optional<db::TrialRecord> best = database.best(d.id, *problem_id)) found.push_back(*best);
      }
    });
  }
  return found;
}

template <typename Load>
const TunedSource::Records& TunedSource::cached(std::map<std::string, Records>& cache,
                                                const std::string& device_name, Load&& load) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string key = lower(device_name);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Records records;
    for (SharedDatabase* layer : layers_) {
      Records more = layer->with(load);
      records.insert(records.end(), std::make_move_iterator(more.begin()),
                     std::make_move_iterator(more.end()));
    }
    it = cache.emplace(key, std::move(records)).first;
  }
  return it->second;
}

const std::vector<db::TrialRecord>& TunedSource::model_bests(const std::string& device_name) {
  return cached(bests_, device_name,
                [&](db::Database& database) { return database.best_for_model(device_name); });
}

const std::vector<db::TrialRecord>& TunedSource::model_trials(const std::string& device_name) {
  return cached(trials_, device_name, [&](db::Database& database) {
    Records ok;
    for (const db::DeviceRecord& d : model_devices(database, device_name)) {
      for (db::TrialRecord& trial : database.trials(d.id)) {
        // A result kept only for the record (its template source is unknown here) is never served.
        if (trial.status == db::TrialStatus::kOk && trial.time_median_ms && trial.servable)
          ok.push_back(std::move(trial));
      }
    }
    return ok;
  });
}

void TunedSource::forget() {
  std::lock_guard<std::mutex> lock(mutex_);
  bests_.clear();
  trials_.clear();
}

}  // namespace gemmforge::runtime
