// The serving model's ranking as the first candidates of a tune.
#include "runtime/model_starts.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "runtime/exchange_files.hpp"
#include "runtime/serving_model.hpp"
#include "runtime/shipped_results.hpp"

namespace gemmforge::runtime {
namespace {

struct ModelStarts {
  const TemplateLibrary* library = nullptr;
  std::string database;
  size_t count = 0;
  std::mutex mutex;
  bool opened = false;
  ResultSources sources;
  std::map<std::string, std::unique_ptr<const ServingModel>> models;  // by GPU model name

  std::vector<Config> first(const DeviceInfo& device, const KernelProblem& problem) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!opened) {
      sources = open_result_sources(database, *library);
      opened = true;
    }
    std::unique_ptr<const ServingModel>& model = models[device.name];
    if (!model) {
      std::vector<ResultSource*> read;
      if (sources.source) read.push_back(sources.source.get());
      read.push_back(&shipped_source());
      model = std::make_unique<const ServingModel>(*library, device, read);
    }
    return model_ranking(*model, problem, count);
  }
};

}  // namespace

std::vector<Config> model_ranking(const ServingModel& model, const KernelProblem& problem, size_t count) {
  const std::vector<model::Candidate> ranked = model.portfolio.rank(model.kernels, problem);
  std::vector<Config> out;
  for (size_t i = 0; i < std::min(count, ranked.size()); ++i) out.push_back(ranked[i].config);
  return out;
}

std::function<std::vector<Config>(const DeviceInfo&, const KernelProblem&)> model_first_candidates(
    const TemplateLibrary& library, std::string database, size_t count) {
  auto starts = std::make_shared<ModelStarts>();
  starts->library = &library;
  starts->database = std::move(database);
  starts->count = count;
  return [starts](const DeviceInfo& device, const KernelProblem& problem) {
    return starts->first(device, problem);
  };
}

}  // namespace gemmforge::runtime
