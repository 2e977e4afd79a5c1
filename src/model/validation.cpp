// Leave-one-problem-out validation of the fitted models.
#include "model/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/statistics.hpp"
#include "model/performance_model.hpp"
#include "model/vendor_model.hpp"

namespace gemmforge::model {
namespace {

// Ranks with ties averaged, as Spearman's coefficient needs them.
std::vector<double> ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> r(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += ra[i] / n, mb += rb[i] / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

double geomean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += std::log(v);
  return std::exp(sum / static_cast<double>(values.size()));
}

}  // namespace

Validation validate_left_out(const TemplateLibrary& library, const DeviceInfo& device,
                             const TrainingData& data, const LeftOutOptions& options) {
  // Kernel measurements by problem, pooled over the GPUs of the device's model: one machine's tune may have
  // covered some templates and another's the rest, and serving treats them alike.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < data.kernels.size(); ++i) {
    const KernelMeasurement& m = data.kernels[i];
    if (same_model(data.devices[m.device], device)) groups[m.problem.to_string()].push_back(i);
  }
  Validation v;
  std::vector<double> correlations, chosen, vendor_errors, served, generated;
  for (const auto& [name, members] : groups) {
    if (members.size() < options.min_configs) continue;
    const KernelProblem problem = data.kernels[members.front()].problem;
    if (options.only && !options.only(problem)) continue;
    const size_t first_device = data.kernels[members.front()].device;
    TrainingData rest;
    rest.devices = data.devices;
    for (const KernelMeasurement& m : data.kernels) {
      if (m.problem.to_string() != name) rest.kernels.push_back(m);
    }
    std::vector<double> cublas_times;  // of the GPUs of the model that measured it
    for (const VendorMeasurement& m : data.vendor) {
      if (m.problem.to_string() != name) {
        rest.vendor.push_back(m);
      } else if (same_model(data.devices[m.device], device) && m.time_ms > 0) {
        cublas_times.push_back(m.time_ms);
      }
    }
    std::optional<double> cublas_ms;
    if (!cublas_times.empty()) cublas_ms = median(cublas_times);
    const DeviceInfo& measured_on = data.devices[first_device];
    const PerformanceModel model(library, measured_on, rest);
    const PerformanceModel::ProblemView view = model.view(problem);
    std::vector<Prediction> predictions;
    std::vector<double> predicted, measured;
    for (size_t i : members) {
      const KernelMeasurement& m = data.kernels[i];
      predictions.push_back(view.predict(*m.kernel_template, m.config));
      predicted.push_back(predictions.back().time_ms);
      measured.push_back(m.time_ms);
    }
    LeftOutProblem p;
    p.problem = name;
    p.device = measured_on.name;
    p.configs = members.size();
    p.rank_correlation = spearman(predicted, measured);
    // Choices rank by the pessimistic time, as serving ranks them.
    const size_t pick = std::min_element(predictions.begin(), predictions.end(),
                                         [](const Prediction& a, const Prediction& b) {
                                           return a.pessimistic_ms() < b.pessimistic_ms();
                                         }) -
                        predictions.begin();
    const double best = *std::min_element(measured.begin(), measured.end());
    const auto config_name = [&](size_t member) {
      return data.kernels[members[member]].kernel_template->manifest.name() + " " +
             data.kernels[members[member]].config.key();
    };
    p.chosen = config_name(pick);
    p.chosen_over_best = measured[pick] / best;
    p.chosen_predicted_over_measured = predicted[pick] / measured[pick];
    if (options.ranked > 0) {
      const auto keep = [&](auto&& earlier) {
        std::vector<size_t> order(members.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        const size_t count = std::min(options.ranked, order.size());
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(count), order.end(),
                          earlier);
        std::vector<LeftOutConfig> kept;
        for (size_t i = 0; i < count; ++i) {
          const size_t at = order[i];
          kept.push_back({config_name(at), predicted[at], predictions[at].pessimistic_ms(), measured[at]});
        }
        return kept;
      };
      // Ties go to the earlier measurement, as the choice above takes the first of equal times.
      p.ranked_first = keep([&](size_t a, size_t b) {
        const double pa = predictions[a].pessimistic_ms(), pb = predictions[b].pessimistic_ms();
        return pa < pb || (pa == pb && a < b);
      });
      p.measured_first = keep([&](size_t a, size_t b) {
        return measured[a] < measured[b] || (measured[a] == measured[b] && a < b);
      });
    }
    correlations.push_back(p.rank_correlation);
    chosen.push_back(p.chosen_over_best);
    if (cublas_ms) {
      const Prediction vendor_predicted = VendorModel(measured_on, rest).predict(problem);
      p.vendor_predicted_over_measured = vendor_predicted.time_ms / *cublas_ms;
      p.cublas_measured_ms = *cublas_ms;
      p.cublas_predicted_ms = vendor_predicted.time_ms;
      vendor_errors.push_back(
          std::max(p.vendor_predicted_over_measured, 1 / p.vendor_predicted_over_measured));
      const bool vendor_serves =
          vendor_expected_faster(predictions[pick], vendor_predicted, options.predicted_margin);
      p.generated_vs_cublas = *cublas_ms / measured[pick];
      p.served_vs_cublas = vendor_serves ? 1.0 : p.generated_vs_cublas;
      served.push_back(p.served_vs_cublas);
      generated.push_back(p.generated_vs_cublas);
    }
    v.problems.push_back(p);
  }
  v.median_rank_correlation = median(correlations);
  v.geomean_chosen_over_best = geomean(chosen);
  v.geomean_vendor_error = geomean(vendor_errors);
  v.geomean_served_vs_cublas = geomean(served);
  v.geomean_generated_vs_cublas = geomean(generated);
  v.min_served_vs_cublas = served.empty() ? 0 : *std::min_element(served.begin(), served.end());
  return v;
}

std::string format_left_out(const Validation& v) {
  // chosen: measured time of the config predicted fastest over the best measured one; chosen p/m and cuBLAS
  // p/m: predicted over measured time; gen/cb and served: speed against cuBLAS of the chosen config, and of
  // what serving would run.
  std::string out =
      fmt::format("{:<40} {:>7} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8}  {}\n", "left-out problem", "configs",
                  "spearman", "chosen", "chosen p/m", "cuBLAS p/m", "gen/cb", "served", "chosen config");
  for (const LeftOutProblem& p : v.problems) {
    out +=
        fmt::format("{:<40} {:>7} {:>8.3f} {:>8.3f} {:>10.3f} {:>10.3f} {:>8.3f} {:>8.3f}  {}\n", p.problem,
                    p.configs, p.rank_correlation, p.chosen_over_best, p.chosen_predicted_over_measured,
                    p.vendor_predicted_over_measured, p.generated_vs_cublas, p.served_vs_cublas, p.chosen);
    const auto list = [&](const char* title, const std::vector<LeftOutConfig>& configs) {
      out += fmt::format("    {}\n", title);
      for (const LeftOutConfig& c : configs) {
        out += fmt::format("      predicted {:.4f} ms (pessimistic {:.4f}), measured {:.4f}  {}\n",
                           c.predicted_ms, c.pessimistic_ms, c.measured_ms, c.config);
      }
    };
    if (!p.ranked_first.empty()) {
      list("ranked first by the model (by the pessimistic time):", p.ranked_first);
      list("fastest measured:", p.measured_first);
      if (p.cublas_measured_ms > 0) {
        out += fmt::format("    cuBLAS predicted {:.4f} ms, measured {:.4f}\n", p.cublas_predicted_ms,
                           p.cublas_measured_ms);
      }
    }
  }
  out += fmt::format(
      "median rank correlation {:.3f}; chosen config {:.3f}x the best's time (geomean); cuBLAS "
      "predicted within {:.3f}x (geomean); vs cuBLAS: generated {:.3f}, served {:.3f} (min {:.3f})\n",
      v.median_rank_correlation, v.geomean_chosen_over_best, v.geomean_vendor_error,
      v.geomean_generated_vs_cublas, v.geomean_served_vs_cublas, v.min_served_vs_cublas);
  return out;
}

}  // namespace gemmforge::model
