// Choosing a kernel: exact results, then the model's ranking, then the vendor check.
#include "runtime/selector.hpp"
#include "core/eligibility.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "gemmforge/error.hpp"
#include "model/training_data.hpp"

namespace gemmforge::runtime {
namespace {

// cuBLAS computes these problems through the vendor path (runtime/vendor_gemm.hpp).
// cuBLAS computes every type gemmforge stores (GemmEx with FP32 accumulation).
bool vendor_serves(const KernelProblem& problem) {
  return output_allowed(problem.dtype, problem.c_dtype);
}

std::shared_future<std::shared_ptr<const ServingModel>> build_model(
    const TemplateLibrary& library, const DeviceInfo& device, const std::vector<ResultSource*>& sources) {
  return std::async(std::launch::async,
                    [&library, device, sources] {
                      return std::shared_ptr<const ServingModel>(
                          std::make_shared<ServingModel>(library, device, sources));
                    })
      .share();
}

}  // namespace

Selector::Selector(const TemplateLibrary& library, const DeviceInfo& device,
                   std::vector<ResultSource*> sources, SelectorOptions options)
    : library_(library),
      device_(device),
      sources_(std::move(sources)),
      options_(options),
      model_(options.model_ahead ? build_model(library_, device_, sources_)
                                 : std::shared_future<std::shared_ptr<const ServingModel>>()) {}

Selector::~Selector() {
  std::lock_guard<std::mutex> lock(model_mutex_);
  if (model_.valid()) model_.wait();  // the task reads the sources, which may go before this
}

std::shared_ptr<const ServingModel> Selector::current_model() const {
  std::shared_future<std::shared_ptr<const ServingModel>> model;
  {
    std::lock_guard<std::mutex> lock(model_mutex_);
    if (!model_.valid()) model_ = build_model(library_, device_, sources_);  // not started ahead
    model = model_;
  }
  return model.get();
}

void Selector::refresh() {
  std::shared_future<std::shared_ptr<const ServingModel>> next = build_model(library_, device_, sources_);
  next.wait();
  std::lock_guard<std::mutex> lock(model_mutex_);
  model_ = std::move(next);
}

std::optional<Selector::Servable> Selector::first_servable(ResultSource& source, const DeviceInfo& model,
                                                           const KernelProblem& tuned,
                                                           const KernelProblem& problem) const {
  for (db::TrialRecord& result : source.exact(model, tuned)) {
    std::string why;
    std::optional<CheckedConfig> checked =
        check_config(library_, result.template_name, result.config_key, device_, problem, &why);
    if (checked) return Servable{std::move(result), std::move(*checked), source.label()};
    spdlog::debug("passing over {} {} for {}: {}", result.template_name, result.config_key,
                  problem.to_string(), why);
  }
  return std::nullopt;
}

std::optional<Selection> Selector::exact(const KernelProblem& problem) const {
  for (ResultSource* source : sources_) {
    std::optional<Servable> found = first_servable(*source, device_, problem, problem);
    if (!found) continue;
    Selection s;
    s.level = PlanLevel::kExact;
    s.basis = fmt::format("tuned for this problem on {}", found->result.device_uuid);
    s.source = std::move(found->source);
    s.tuned_problem = found->result.problem;
    s.time_ms = found->result.time_median_ms;
    s.vendor_ms = found->result.cublas_ms;
    s.choice = std::move(found->config);
    return s;
  }
  return std::nullopt;
}

std::optional<Selection> Selector::twin_result(const KernelProblem& problem) const {
  const std::optional<KernelProblem> twin = sixteen_bit_twin(problem);
  if (!twin) return std::nullopt;
  for (ResultSource* source : sources_) {
    std::optional<Servable> found = first_servable(*source, device_, *twin, problem);
    if (!found) continue;
    Selection s;
    s.level = PlanLevel::kModel;
    s.basis = fmt::format("tuned for its {} twin on {}", twin->type_name(), found->result.device_uuid);
    s.source = std::move(found->source);
    s.tuned_problem = found->result.problem;
    s.time_ms = found->result.time_median_ms;
    s.vendor_ms = found->result.cublas_ms;
    s.choice = std::move(found->config);
    return s;
  }
  return std::nullopt;
}

std::optional<Selection> Selector::faster_elsewhere(const KernelProblem& problem,
                                                    const Selection& own) const {
  if (!own.time_ms) return std::nullopt;
  // The fastest measured result of each other model of this architecture and SM count, in any source.
  std::optional<Servable> best;
  std::string best_model;
  for (ResultSource* source : sources_) {
    std::vector<DeviceInfo> models;  // a device of each other model met
    for (const DeviceInfo& other : source->devices()) {
      const auto met = [&other](const DeviceInfo& d) { return model::same_model(d, other); };
      if (other.cc() != device_.cc() || other.sm_count != device_.sm_count ||
          model::same_model(other, device_) || std::any_of(models.begin(), models.end(), met)) {
        continue;
      }
      models.push_back(other);
      std::optional<Servable> found = first_servable(*source, other, problem, problem);
      if (!found || !found->result.time_median_ms) continue;
      if (!best || *found->result.time_median_ms < *best->result.time_median_ms) {
        best = std::move(found), best_model = other.name;
      }
    }
  }
  // Measured times first (no model needed where the other is no faster even unscaled), then the scaled one.
  // Where this GPU model measured that config on the problem itself, the prediction is that measurement,
  // which its own result beats.
  if (!best || *best->result.time_median_ms * kElsewhereFactor >= *own.time_ms) return std::nullopt;
  const model::Prediction p =
      model()->kernels.predict(*best->config.kernel_template, best->config.config, problem);
  if (p.time_ms * kElsewhereFactor >= *own.time_ms) return std::nullopt;
  Selection s;
  s.level = PlanLevel::kModel;
  s.source = best->source == own.source
                 ? best->source
                 : fmt::format("{} (this GPU model's own result: {})", best->source, own.source);
  s.tuned_problem = problem;
  s.time_ms = p.time_ms;
  s.time_predicted = true;
  s.time_log_error = p.log_error;
  s.basis = fmt::format(
      "tuned for this problem on {} ({}), {:.4g} ms there, predicted {:.4g} ms here: {:.2f}x this GPU "
      "model's own result ({} {}, {:.4g} ms measured)",
      best_model, best->result.device_uuid, *best->result.time_median_ms, p.time_ms, *own.time_ms / p.time_ms,
      own.choice->kernel_template->manifest.name(), own.choice->config.key(), *own.time_ms);
  s.choice = std::move(best->config);
  return s;
}

Selection Selector::ranked(const KernelProblem& problem) const {
  const std::shared_ptr<const ServingModel> serving = model();
  const std::vector<model::Candidate> candidates = serving->portfolio.rank(serving->kernels, problem);
  Selection s;
  s.level = PlanLevel::kModel;
  s.source = serving->describe();
  for (const model::Candidate& c : candidates) {
    std::string why;
    std::optional<CheckedConfig> checked =
        check_config(library_, c.kernel_template->manifest.name(), c.config.key(), device_, problem, &why);
    if (!checked) {
      spdlog::debug("passing over {} {}: {}", c.kernel_template->manifest.name(), c.config.key(), why);
      continue;
    }
    s.choice = std::move(checked);
    s.time_ms = c.prediction.time_ms;
    s.time_predicted = true;
    s.time_log_error = c.prediction.log_error;
    s.basis =
        fmt::format("the performance model's fastest of {} candidates, predicted {:.4g} ms ({}{}); from {}",
                    candidates.size(), c.prediction.time_ms, model::to_string(c.prediction.basis),
                    c.prediction.measured_on.empty() ? "" : " on " + c.prediction.measured_on, c.origin);
    break;
  }
  return s;
}

bool Selector::recorded_vendor_ms(const KernelProblem& problem, std::optional<double>& fastest) const {
  for (ResultSource* source : sources_) {
    if (!source->knows_vendor_times()) return false;
  }
  for (ResultSource* source : sources_) {
    const std::optional<double> ms = source->vendor_ms(device_, problem);
    if (ms && (!fastest || *ms < *fastest)) fastest = ms;
  }
  return true;
}

Selection Selector::with_vendor_check(Selection s, const KernelProblem& problem) const {
  if (!options_.vendor || !vendor_serves(problem)) return s;
  // A tuned result (the problem's, or its twin's) carries both times, measured on its problem.
  bool vendor_measured = !s.time_predicted && s.vendor_ms.has_value();
  // Its cuBLAS time is its own tune's, which can come out slow: cuBLAS is as fast as it was ever measured
  // on this GPU model. The sources tell that time without the model where they can, so that a tuned
  // problem's first call waits for no fit, and decides as every later call does.
  std::optional<double> recorded;
  if (vendor_measured && recorded_vendor_ms(s.tuned_problem.value_or(problem), recorded)) {
    if (recorded && *recorded < *s.vendor_ms) s.vendor_ms = recorded;
  } else {
    const model::Prediction v = model()->vendor.predict(problem);
    if (!s.vendor_ms) {
      s.vendor_ms = v.time_ms;
      vendor_measured = v.basis == model::Basis::kMeasured;
      s.vendor_log_error = v.log_error;
    } else if (v.basis == model::Basis::kMeasured && v.time_ms < *s.vendor_ms) {
      s.vendor_ms = v.time_ms;
    }
  }
  s.vendor_predicted = !vendor_measured;
  if (!s.choice) {
    s.level = PlanLevel::kVendor;
    s.basis = "no generated kernel computes this problem on this GPU";
    return s;
  }
  // The generated kernel must be faster by the margin with the two times' typical errors against it (none
  // for a measured time): by the measured margin where both are measured, else by the predicted one.
  const bool measured = vendor_measured && !s.time_predicted;
  const double margin = measured ? options_.measured_margin : options_.predicted_margin;
  if (!model::vendor_expected_faster(s.kernel_time(), s.vendor_time(), margin)) return s;
  s.basis = fmt::format("cuBLAS {} {:.4g} ms against {:.4g} ms {} for the fastest generated kernel ({})",
                        vendor_measured ? "measured" : "predicted", *s.vendor_ms, *s.time_ms,
                        s.time_predicted ? "predicted" : "measured", s.basis);
  s.level = PlanLevel::kVendor;
  return s;
}

Selection Selector::select(const KernelProblem& problem) const {
  if (std::optional<Selection> found = exact(problem)) {
    if (std::optional<Selection> better = faster_elsewhere(problem, *found))
      return with_vendor_check(std::move(*better), problem);
    return with_vendor_check(std::move(*found), problem);
  }
  if (std::optional<Selection> twin = twin_result(problem))
    return with_vendor_check(std::move(*twin), problem);
  Selection s = ranked(problem);
  if (!s.choice && !(options_.vendor && vendor_serves(problem))) {
    std::string minimums;
    bool any_dtype = false;
    for (const KernelTemplate* t : library_.all()) {
      if (!can_serve(*t, problem)) continue;
      any_dtype = true;
      minimums += fmt::format("{}{} needs sm_{}", minimums.empty() ? "" : ", ", t->manifest.name(),
                              t->manifest.min_cc());
    }
    if (!any_dtype) {
      throw NotFoundError(
          fmt::format("no kernel template of gemmforge computes {} GEMMs", to_string(problem.dtype)));
    }
    throw ArchMismatchError(fmt::format("no kernel template of gemmforge computes {} on {} ({}): {}",
                                        problem.to_string(), device_.name, device_.arch(), minimums));
  }
  return with_vendor_check(std::move(s), problem);
}

}  // namespace gemmforge::runtime
