// Gathering and formatting the tuning report from the trials table.
#include "tuner/report.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/dtype.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

ReportRow make_row(const db::TrialRecord& trial) {
  ReportRow row{trial, std::nullopt};
  try {
    row.flops_per_byte =
        tile_flops_per_byte(Config::parse_key(trial.template_name, trial.config_key), trial.problem.dtype);
  } catch (const InvalidArgumentError&) {
    // An unreadable key (imported from elsewhere) only loses this column.
  }
  return row;
}

std::vector<db::DeviceRecord> select_devices(const db::Database& database, const std::string& spec) {
  if (spec.empty()) return database.devices();
  std::vector<db::DeviceRecord> found = database.devices_matching(spec);
  if (found.empty()) {
    std::vector<std::string> known;
    for (const db::DeviceRecord& d : database.devices())
      known.push_back(fmt::format("{} ({})", d.info.name, d.info.uuid));
    throw NotFoundError(fmt::format(
        "no device matching '{}' in {}; it knows: {}", spec, database.path(),
        known.empty() ? "none (nothing was tuned yet)" : fmt::format("{}", fmt::join(known, ", "))));
  }
  return found;
}

std::string optional_text(const std::optional<double>& value, const char* format) {
  return value ? fmt::format(fmt::runtime(format), *value) : std::string("-");
}

std::string optional_text(const std::optional<int64_t>& value) {
  return value ? std::to_string(*value) : std::string("-");
}

std::string format_row(const std::string& mark, const ReportRow& row) {
  const db::TrialRecord& t = row.trial;
  const std::optional<double> smem_kib =
      t.smem_bytes ? std::optional<double>(static_cast<double>(*t.smem_bytes) / 1024.0) : std::nullopt;
  return fmt::format("  {:>3}  {:<14} {:>9} {:>8} {:>9} {:>9} {:>6} {:>7} {:>5} {:>8}  {}\n", mark,
                     t.template_name, optional_text(t.time_median_ms, "{:.4f}"),
                     optional_text(t.tflops, "{:.2f}"), optional_text(t.ratio_vs_cublas, "{:.3f}x"),
                     optional_text(t.occupancy_blocks), optional_text(t.occupancy_pct, "{:.1f}"),
                     optional_text(row.flops_per_byte, "{:.1f}"), optional_text(t.registers),
                     optional_text(smem_kib, "{:.1f}"), t.config_key);
}

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json optional_json(const std::optional<int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json row_json(const ReportRow& row) {
  const db::TrialRecord& t = row.trial;
  return {{"template", t.template_name},
          {"template_hash", t.template_hash},
          {"config", t.config_key},
          {"time_ms", optional_json(t.time_median_ms)},
          {"time_min_ms", optional_json(t.time_min_ms)},
          {"time_max_ms", optional_json(t.time_max_ms)},
          {"repetitions", optional_json(t.repetitions)},
          {"tflops", optional_json(t.tflops)},
          {"ratio_vs_cublas", optional_json(t.ratio_vs_cublas)},
          {"occupancy_blocks", optional_json(t.occupancy_blocks)},
          {"occupancy_pct", optional_json(t.occupancy_pct)},
          {"flops_per_byte", optional_json(row.flops_per_byte)},
          {"registers", optional_json(t.registers)},
          {"smem_bytes", optional_json(t.smem_bytes)},
          {"spill_bytes", optional_json(t.spill_bytes)},
          {"rel_error", optional_json(t.rel_error)},
          {"is_best", t.is_best},
          {"run_id", optional_json(t.run_id)},
          {"created_at", t.created_at}};
}

}  // namespace

std::optional<double> tile_flops_per_byte(const Config& config, Dtype dtype) {
  const std::optional<int64_t> bm = config.find("BM");
  const std::optional<int64_t> bn = config.find("BN");
  if (!bm || !bn || *bm <= 0 || *bn <= 0) return std::nullopt;
  const double bk = static_cast<double>(config.find("BK").value_or(1));
  const double m = static_cast<double>(*bm);
  const double n = static_cast<double>(*bn);
  return 2.0 * m * n * bk / (element_bytes(dtype) * (m + n) * bk);
}

std::vector<ProblemReport> build_report(const db::Database& database, const ReportFilter& filter) {
  std::vector<ProblemReport> reports;
  for (const db::DeviceRecord& device : select_devices(database, filter.device)) {
    // Trials come grouped by problem, ok ones fastest first.
    for (const db::TrialRecord& trial : database.trials(device.id)) {
      if (filter.problem && !filter.problem(trial.problem)) continue;
      if (reports.empty() || reports.back().device.id != device.id ||
          reports.back().problem != trial.problem) {
        ProblemReport report;
        report.device = device;
        report.problem = trial.problem;
        reports.push_back(std::move(report));
      }
      ProblemReport& report = reports.back();
      ++report.trials;
      ++report.by_status[db::to_string(trial.status)];
      if (!report.cublas_ms && trial.cublas_ms) report.cublas_ms = trial.cublas_ms;
      if (trial.is_best) report.best = make_row(trial);
      if (trial.status == db::TrialStatus::kOk && static_cast<int>(report.top.size()) < filter.top)
        report.top.push_back(make_row(trial));
    }
  }
  return reports;
}

std::string format_report(const std::vector<ProblemReport>& reports) {
  if (reports.empty()) return "No trials match: nothing was tuned for these devices and problems yet.\n";
  std::string out;
  for (const ProblemReport& r : reports) {
    out += fmt::format("{} on {} ({})\n", r.problem.to_string(), r.device.info.name, r.device.info.uuid);
    std::vector<std::string> counts;
    for (const auto& [status, count] : r.by_status) counts.push_back(fmt::format("{} {}", count, status));
    const std::string cublas = r.cublas_ms ? fmt::format("cuBLAS {:.4f} ms ({:.2f} TFLOP/s)", *r.cublas_ms,
                                                         r.problem.flops() / *r.cublas_ms / 1e9)
                                           : std::string("cuBLAS not measured");
    out += fmt::format("  {}; {} trials: {}\n", cublas, r.trials, fmt::join(counts, ", "));
    out += fmt::format("  {:>3}  {:<14} {:>9} {:>8} {:>9} {:>9} {:>6} {:>7} {:>5} {:>8}  {}\n", "#",
                       "template", "time ms", "TFLOP/s", "vs cuBLAS", "blocks/SM", "occ %", "FLOP/B", "regs",
                       "smem KiB", "config");
    bool best_shown = false;
    for (size_t i = 0; i < r.top.size(); ++i) {
      const bool best = r.top[i].trial.is_best;
      best_shown = best_shown || best;
      out += format_row(best ? "*" : std::to_string(i + 1), r.top[i]);
    }
    if (r.best && !best_shown) out += format_row("*", *r.best);
    if (!r.best) out += "  (no correct config: nothing is served for this problem)\n";
    out += "\n";
  }
  out += "* the config served for the problem\n";
  return out;
}

std::string report_json(const std::vector<ProblemReport>& reports) {
  nlohmann::json out = nlohmann::json::array();
  for (const ProblemReport& r : reports) {
    nlohmann::json top = nlohmann::json::array();
    for (const ReportRow& row : r.top) top.push_back(row_json(row));
    out.push_back({{"device", {{"name", r.device.info.name}, {"uuid", r.device.info.uuid}}},
                   {"problem",
                    {{"dtype", to_string(r.problem.dtype)},
                     {"layout", r.problem.layout()},
                     {"m", r.problem.m},
                     {"n", r.problem.n},
                     {"k", r.problem.k},
                     {"align", {r.problem.align_a, r.problem.align_b, r.problem.align_c}}}},
                   {"cublas_ms", optional_json(r.cublas_ms)},
                   {"trials", r.trials},
                   {"by_status", r.by_status},
                   {"best", r.best ? row_json(*r.best) : nlohmann::json(nullptr)},
                   {"top", top}});
  }
  return out.dump(2);
}

}  // namespace gemmforge::tuner
