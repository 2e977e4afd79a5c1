// `gemmforge query`: what gemmforge serves for a problem on a GPU (an exact tuned result, the performance
// model's choice or cuBLAS), with the measured or predicted times behind it, and on request the model's
// best-ranked candidates for the problem. Needs no GPU with --device-name.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli_common.hpp"
#include "gemmforge/error.hpp"
#include "runtime/exchange_files.hpp"
#include "runtime/model_lookup.hpp"
#include "runtime/selector.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime/tuned_source.hpp"

namespace gemmforge::cli {
namespace {

struct QueryOptions {
  std::string shape;
  std::string layout = "nn";
  std::string order = "row";
  std::string dtype = "f32";
  std::string device;
  std::string device_name;
  std::string db;
  bool no_vendor = false;
  bool json = false;
  size_t candidates = 0;
};

nlohmann::json optional_json(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json plan_json(const PlanInfo& plan, const KernelProblem& problem,
                         const runtime::ModelDevice& device) {
  nlohmann::json out = {
      {"problem",
       {{"dtype", to_string(problem.dtype)},
        {"layout", problem.layout()},
        {"m", problem.m},
        {"n", problem.n},
        {"k", problem.k},
        {"align_a", problem.align_a},
        {"align_b", problem.align_b},
        {"align_c", problem.align_c}}},
      {"device", {{"name", device.info.name}, {"arch", device.info.arch()}, {"limits_from", device.origin}}},
      {"level", to_string(plan.level)},
      {"template", plan.template_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(plan.template_name)},
      {"config", plan.config.empty() ? nlohmann::json(nullptr) : nlohmann::json(plan.config)},
      {"time_ms", optional_json(plan.time_ms)},
      {"time_predicted", plan.time_predicted},
      {"time_error", plan.time_error},
      {"cublas_ms", optional_json(plan.vendor_ms)},
      {"cublas_predicted", plan.vendor_predicted},
      {"cublas_error", plan.vendor_error},
      {"ratio_vs_cublas", optional_json(plan.ratio_vs_cublas)},
      {"tuned_problem",
       plan.tuned_problem.empty() ? nlohmann::json(nullptr) : nlohmann::json(plan.tuned_problem)},
      {"basis", plan.basis},
      {"source", plan.source},
      {"launch",
       {{"tiles", plan.tiles},
        {"split_k", plan.split_k},
        {"whole_tiles", plan.whole_tiles},
        {"stream_blocks", plan.stream_blocks},
        {"blocks", plan.blocks},
        {"threads", plan.threads},
        {"smem_bytes", plan.smem_bytes}}}};
  return out;
}

void print_text(const PlanInfo& plan, const runtime::ModelDevice& device) {
  fmt::print("{} on {} ({}, limits from {})\n", plan.problem, device.info.name, device.info.arch(),
             device.origin);
  fmt::print("  level     {}{}\n", to_string(plan.level),
             plan.level == PlanLevel::kVendor ? ": cuBLAS serves it" : "");
  if (plan.template_name.empty()) {
    fmt::print("  template  none computes this problem here\n");
  } else {
    fmt::print("  {}  {}\n", plan.level == PlanLevel::kVendor ? "generated" : "template ",
               plan.template_name);
    fmt::print("  config    {}\n", plan.config);
  }
  // A predicted time with its typical error, a measured one with what it was measured on.
  const auto error = [](double factor) { return fmt::format(", typically within {:.2f}x", factor); };
  if (plan.time_ms) {
    fmt::print("  {}  {:.4f} ms{}\n", plan.time_predicted ? "predicted" : "measured ", *plan.time_ms,
               plan.time_predicted ? error(plan.time_error) : " on " + plan.tuned_problem);
  }
  if (plan.vendor_ms) {
    const std::string ratio =
        plan.ratio_vs_cublas ? fmt::format(" (generated kernel: {:.3f}x its speed)", *plan.ratio_vs_cublas)
                             : "";
    fmt::print("  cuBLAS    {:.4f} ms {}{}{}\n", *plan.vendor_ms,
               plan.vendor_predicted ? "predicted" : "measured",
               plan.vendor_predicted ? error(plan.vendor_error) : "", ratio);
  }
  fmt::print("  basis     {}\n", plan.basis);
  fmt::print("  source    {}\n", plan.source);
  if (plan.template_name.empty()) return;
  const std::string work = plan.stream_blocks > 0
                               ? fmt::format("{} tiles ({} whole, then {} stream-K blocks share the rest)",
                                             plan.tiles, plan.whole_tiles, plan.stream_blocks)
                               : fmt::format("{} tiles x {} K slices", plan.tiles, plan.split_k);
  fmt::print("  launch    {} in {} blocks, {} threads, {} bytes of shared memory\n", work, plan.blocks,
             plan.threads, plan.smem_bytes);
}

// The first `count` of the performance model's ranking of the problem's candidates: what it would choose
// from had the problem no tuned result, and how close the runners-up come.
nlohmann::json candidates_json(const std::vector<model::Candidate>& ranked, size_t count) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < ranked.size() && i < count; ++i) {
    const model::Candidate& c = ranked[i];
    out.push_back({{"template", c.kernel_template->manifest.name()},
                   {"config", c.config.key()},
                   {"predicted_ms", c.prediction.time_ms},
                   {"error", std::exp(c.prediction.log_error)},
                   {"basis", model::to_string(c.prediction.basis)},
                   {"measured_on", c.prediction.measured_on},
                   {"origin", c.origin}});
  }
  return out;
}

void print_candidates(const std::vector<model::Candidate>& ranked, size_t count) {
  fmt::print(
      "  ranked    the performance model's {} best of {} candidates, by their time one typical error "
      "above the prediction\n",
      std::min(count, ranked.size()), ranked.size());
  for (size_t i = 0; i < ranked.size() && i < count; ++i) {
    const model::Candidate& c = ranked[i];
    fmt::print("  {:>4}  {:.4f} ms ({}{}, within {:.2f}x)  {} {}\n", i + 1, c.prediction.time_ms,
               model::to_string(c.prediction.basis),
               c.prediction.measured_on.empty() ? "" : ": " + c.prediction.measured_on,
               std::exp(c.prediction.log_error), c.kernel_template->manifest.name(), c.config.key());
  }
}

int run_query(const QueryOptions& o) {
  if (!o.device.empty() && !o.device_name.empty()) {
    throw InvalidArgumentError("give --device (a GPU of this machine) or --device-name (a model), not both");
  }
  int64_t m = 0, n = 0, k = 0;
  parse_shape(o.shape, m, n, k);
  const KernelProblem problem = make_problem(m, n, k, o.layout, o.order, o.dtype);

  // The user's database or export (read-only where it is not writable), then $GEMMFORGE_SITE_DB.
  const runtime::ResultSources opened = runtime::open_result_sources(o.db, TemplateLibrary::instance());
  runtime::ResultSource& shipped = runtime::shipped_source();
  runtime::ResultSource* user_source = opened.source.get();

  runtime::ModelDevice device;
  if (!o.device_name.empty()) {
    device = runtime::model_device(o.device_name, user_source, shipped);
  } else {
    try {
      device = {resolve_device(o.device, ""), "this machine's GPU"};
    } catch (const NoDeviceError& e) {
      throw NoDeviceError(fmt::format(
          "{}; pass --device-name (e.g. \"NVIDIA H100 80GB HBM3\") to query without a GPU", e.what()));
    }
  }
  std::vector<runtime::ResultSource*> sources;
  if (user_source != nullptr) sources.push_back(user_source);
  sources.push_back(&shipped);
  runtime::SelectorOptions options;
  options.vendor = !o.no_vendor;
  options.model_ahead = false;  // a tuned result answers without the model
  const runtime::Selector selector(TemplateLibrary::instance(), device.info, sources, options);
  const PlanInfo plan = runtime::describe(selector.select(problem), problem, device.info);
  // The selector's model ranks the candidates as it would for a problem nobody tuned.
  std::vector<model::Candidate> ranked;
  if (o.candidates > 0) {
    const std::shared_ptr<const runtime::ServingModel> serving = selector.model();
    ranked = serving->portfolio.rank(serving->kernels, problem);
  }
  if (o.json) {
    nlohmann::json out = plan_json(plan, problem, device);
    if (o.candidates > 0) {
      out["candidates"] = candidates_json(ranked, o.candidates);
      out["candidates_ranked"] = ranked.size();
    }
    fmt::print("{}\n", out.dump(2));
  } else {
    print_text(plan, device);
    if (o.candidates > 0) print_candidates(ranked, o.candidates);
  }
  return 0;
}

Command register_query(CLI::App& app) {
  auto o = std::make_shared<QueryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "query",
      "Show what serves a problem (tuned result, model's choice or cuBLAS) and the times behind the choice");
  cmd->add_option("--shape", o->shape, "Problem MxNxK")->required();
  add_layout_option(cmd, o->layout);
  add_order_option(cmd, o->order);
  cmd->add_option("--dtype", o->dtype, kDtypeHelp)->capture_default_str();
  cmd->add_option("--device", o->device, "GPU of this machine: index, UUID or name (default: the first GPU)");
  cmd->add_option(
      "--device-name", o->device_name,
      "GPU model to answer for without a GPU, e.g. \"NVIDIA H200\" (recorded in a database, or known)");
  cmd->add_option(
      "--db", o->db,
      "Tuning database or JSON export (default: $GEMMFORGE_DB or ~/.cache/gemmforge/gemmforge.db)");
  cmd->add_flag("--no-vendor", o->no_vendor, "Answer as a runtime that never serves cuBLAS");
  cmd->add_option("--candidates", o->candidates,
                  "Also list the performance model's N best-ranked candidates for the problem, as if nobody "
                  "had tuned it");
  cmd->add_flag("--json", o->json, "Print JSON");
  return {cmd, [o] { return run_query(*o); }};
}

}  // namespace

static const bool registered = register_command(40, register_query);

}  // namespace gemmforge::cli
