// The serving model's ranking as the first candidates of a tune.
#include "runtime/model_starts.hpp"

#include <algorithm>
#include <exception>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "runtime/exchange_files.hpp"
#include "runtime/serving_model.hpp"
#include "runtime/shipped_results.hpp"

namespace gemmforge::runtime {
namespace {

using ModelFuture = std::shared_future<std::shared_ptr<const ServingModel>>;

// The results the models are fitted on; shared with the fits running on threads of their own.
struct Sources {
  ResultSources opened;
  std::vector<ResultSource*> read;
};

class ModelStarts {
 public:
  ModelStarts(const TemplateLibrary& library, std::string database, size_t count)
      : library_(library), database_(std::move(database)), count_(count) {}

  // Starts fitting the model of `device`'s GPU model on a thread of its own, unless it is fitted or being
  // fitted already. Sources that cannot be opened are left for the first call to report.
  void fit_ahead(const DeviceInfo& device) {
    std::lock_guard<std::mutex> lock(mutex_);
    try {
      model_of(device, std::launch::async);
    } catch (const std::exception&) {
    }
  }

  std::vector<Config> first(const DeviceInfo& device, const KernelProblem& problem) {
    ModelFuture model;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      model = model_of(device, std::launch::deferred);
    }
    // What won the problem before its template's source changed, then the model's ranking (a retired
    // result is neither served nor fitted, so the ranking may not hold it). A config in both is measured
    // once: tuner::measure_first passes over repeats.
    std::vector<Config> configs = shipped_results().retired(device, problem, library_, kRetiredStarts);
    std::vector<Config> ranked =
        model_ranking(*model.get(), problem, count_);  // a fit's error is thrown here
    configs.insert(configs.end(), std::make_move_iterator(ranked.begin()),
                   std::make_move_iterator(ranked.end()));
    return configs;
  }

 private:
  // Holds mutex_. The fit does not touch this object: a pending fit is waited for when the last future of
  // it goes, which may be in this object's destructor.
  ModelFuture model_of(const DeviceInfo& device, std::launch policy) {
    auto found = models_.find(device.name);
    if (found != models_.end()) return found->second;
    if (!sources_) {
      auto sources = std::make_shared<Sources>();
      sources->opened = open_result_sources(database_, library_);
      if (sources->opened.source) sources->read.push_back(sources->opened.source.get());
      sources->read.push_back(&shipped_source());
      sources_ = std::move(sources);
    }
    const TemplateLibrary* library = &library_;
    ModelFuture model = std::async(policy, [library, device, sources = sources_] {
                          return std::shared_ptr<const ServingModel>(
                              std::make_shared<ServingModel>(*library, device, sources->read));
                        }).share();
    models_.emplace(device.name, model);
    return model;
  }

  const TemplateLibrary& library_;
  const std::string database_;
  const size_t count_;
  std::mutex mutex_;
  std::shared_ptr<Sources> sources_;
  std::map<std::string, ModelFuture> models_;  // by GPU model name
};

}  // namespace

std::vector<Config> model_ranking(const ServingModel& model, const KernelProblem& problem, size_t count) {
  const std::vector<model::Candidate> ranked = model.portfolio.rank(model.kernels, problem);
  std::vector<Config> out;
  for (size_t i = 0; i < std::min(count, ranked.size()); ++i) out.push_back(ranked[i].config);
  return out;
}

std::function<std::vector<Config>(const DeviceInfo&, const KernelProblem&)> model_first_candidates(
    const TemplateLibrary& library, std::string database, size_t count,
    const std::vector<DeviceInfo>& ahead) {
  auto starts = std::make_shared<ModelStarts>(library, std::move(database), count);
  for (const DeviceInfo& device : ahead) starts->fit_ahead(device);
  return [starts](const DeviceInfo& device, const KernelProblem& problem) {
    return starts->first(device, problem);
  };
}

}  // namespace gemmforge::runtime
