// What `gemmforge report` shows: per device and problem, the best config and the fastest trials with the
// columns of the classic SGEMM tuning table. Reads the database only, so it works without a GPU.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "db/database.hpp"
#include "gemmforge/types.hpp"

namespace gemmforge::tuner {

/// Arithmetic intensity of a block tile: each BK step moves (BM + BN) x BK elements from global memory
/// and does 2 x BM x BN x BK FLOPs, so 2·BM·BN·BK / (element bytes · (BM + BN) · BK). Nullopt for a
/// config without BM and BN (BK cancels out and may be absent).
std::optional<double> tile_flops_per_byte(const Config& config, Dtype dtype);

struct ReportRow {
  db::TrialRecord trial;
  std::optional<double> flops_per_byte;
};

struct ProblemReport {
  db::DeviceRecord device;
  KernelProblem problem;
  std::optional<double> cublas_ms;
  std::optional<ReportRow> best;  ///< the config served for this problem
  std::vector<ReportRow> top;     ///< the fastest ok trials, fastest first
  size_t trials = 0;
  std::map<std::string, size_t> by_status;  ///< trial count per status ("ok", "crashed", ...)
};

struct ReportFilter {
  std::string device;                                 ///< UUID or (part of a) name; empty: every device
  std::function<bool(const KernelProblem&)> problem;  ///< empty: every problem
  int top = 5;
};

/// Problems with at least one trial, grouped by device then problem. Throws NotFoundError when the filter
/// names a device the database does not know.
std::vector<ProblemReport> build_report(const db::Database& database, const ReportFilter& filter);

/// The report as a table for a terminal.
std::string format_report(const std::vector<ProblemReport>& reports);
/// The report as a JSON document (an array of problems).
std::string report_json(const std::vector<ProblemReport>& reports);

}  // namespace gemmforge::tuner
