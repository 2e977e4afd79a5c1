// Leaving each tuned problem out in turn, for every GPU model the results cover.
#include "report_left_out.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "gemmforge/error.hpp"
#include "model/validation.hpp"
#include "runtime/exchange_files.hpp"
#include "runtime/selector.hpp"
#include "runtime/serving_model.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime/tuned_source.hpp"

namespace gemmforge::cli {
namespace {

nlohmann::json configs_json(const std::vector<model::LeftOutConfig>& configs) {
  nlohmann::json out = nlohmann::json::array();
  for (const model::LeftOutConfig& c : configs) {
    out.push_back({{"config", c.config},
                   {"predicted_ms", c.predicted_ms},
                   {"pessimistic_ms", c.pessimistic_ms},
                   {"measured_ms", c.measured_ms}});
  }
  return out;
}

nlohmann::json validation_json(const DeviceInfo& device, const model::Validation& v, double margin) {
  nlohmann::json problems = nlohmann::json::array();
  for (const model::LeftOutProblem& p : v.problems) {
    problems.push_back({{"problem", p.problem},
                        {"ranked_first", configs_json(p.ranked_first)},
                        {"measured_first", configs_json(p.measured_first)},
                        {"cublas_measured_ms", p.cublas_measured_ms},
                        {"cublas_predicted_ms", p.cublas_predicted_ms},
                        {"configs", p.configs},
                        {"rank_correlation", p.rank_correlation},
                        {"chosen", p.chosen},
                        {"chosen_over_best", p.chosen_over_best},
                        {"chosen_predicted_over_measured", p.chosen_predicted_over_measured},
                        {"cublas_predicted_over_measured", p.vendor_predicted_over_measured},
                        {"generated_vs_cublas", p.generated_vs_cublas},
                        {"served_vs_cublas", p.served_vs_cublas}});
  }
  return {{"device", device.name},
          {"predicted_margin", margin},
          {"problems", problems},
          {"median_rank_correlation", v.median_rank_correlation},
          {"geomean_chosen_over_best", v.geomean_chosen_over_best},
          {"geomean_cublas_error", v.geomean_vendor_error},
          {"geomean_generated_vs_cublas", v.geomean_generated_vs_cublas},
          {"geomean_served_vs_cublas", v.geomean_served_vs_cublas},
          {"min_served_vs_cublas", v.min_served_vs_cublas}};
}

}  // namespace

int run_left_out(const LeftOutRequest& request) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  // Serving's sources: the user's database or export (and the site database), then the shipped results.
  runtime::ResultSources opened;
  if (!request.shipped) opened = runtime::open_result_sources(request.db, library);
  std::vector<runtime::ResultSource*> sources;
  if (opened.source != nullptr) sources.push_back(opened.source.get());
  sources.push_back(&runtime::shipped_source());

  model::LeftOutOptions options;
  options.predicted_margin = runtime::SelectorOptions{}.predicted_margin;
  options.only = request.problem;
  options.ranked = request.ranked;
  // The measurements of each architecture, read once for all its GPU models, as serving reads them.
  std::map<int, std::pair<model::TrainingData, std::vector<std::string>>> by_cc;
  nlohmann::json out = nlohmann::json::array();
  for (const DeviceInfo& device : runtime::gpu_models_named(sources, request.device)) {
    auto found = by_cc.find(device.cc());
    if (found == by_cc.end()) {
      std::vector<std::string> read;
      model::TrainingData data = runtime::gather_measurements(library, device.cc(), sources, read);
      found = by_cc.emplace(device.cc(), std::pair{std::move(data), std::move(read)}).first;
    }
    const auto& [data, read] = found->second;
    if (!request.json) {
      fmt::print(stderr,
                 "{}: each problem measured on {} or more configs is left out in turn and the models are "
                 "fitted on the rest of {} (a fit per problem, a few seconds each)\n",
                 device.name, options.min_configs, fmt::join(read, ", "));
    }
    const model::Validation v = model::validate_left_out(library, device, data, options);
    if (request.json) {
      out.push_back(validation_json(device, v, options.predicted_margin));
    } else if (v.problems.empty()) {
      fmt::print("{}: no problem to leave out (none matches, or none was measured on {} configs)\n\n",
                 device.name, options.min_configs);
    } else {
      fmt::print("{}\n{}\n", device.name, model::format_left_out(v));
    }
  }
  if (request.json) fmt::print("{}\n", out.dump(2));
  return 0;
}

}  // namespace gemmforge::cli
