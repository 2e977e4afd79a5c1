// `gemmforge measure`: verify and time chosen configs of a template for one problem, next to cuBLAS
// timed the same way in the same process. For exploring a template by hand; `tune` searches.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <random>

#include "cli_common.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "cuda/device.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "tuner/problem_rig.hpp"

namespace gemmforge::cli {
namespace {

struct MeasureOptions {
  std::string template_name = "sgemm_simt";
  std::string shape = "4096x4096x4096";
  std::string layout = "nn";
  std::string dtype;  // empty: the template's first type
  std::string order = "row";
  std::string device;
  std::vector<std::string> configs;
  std::vector<std::string> pins;
  bool seeds = false;
  int sample = 0;
  uint64_t sample_seed = 1;
  double error_bound = 1e-5;
  bool json = false;
};

int run_measure(const MeasureOptions& o) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& tmpl = library.get(o.template_name);
  const DeviceInfo device = resolve_device(o.device, "");
  cuda::DeviceGuard guard(device.ordinal);
  int64_t m = 0, n = 0, k = 0;
  parse_shape(o.shape, m, n, k);
  const KernelProblem problem =
      make_problem(m, n, k, o.layout, o.order, o.dtype.empty() ? tmpl.manifest.default_type_name() : o.dtype);

  std::vector<Config> configs;
  for (const std::string& text : o.configs) configs.push_back(Config::parse_key(tmpl.manifest.name(), text));
  if (o.seeds) configs.insert(configs.end(), tmpl.manifest.seeds().begin(), tmpl.manifest.seeds().end());
  if (o.sample > 0) {
    Pins pins;
    for (const std::string& pin : o.pins) add_pin(pins, pin);
    const Space space = Space::build(tmpl, device, problem, pins);
    if (space.empty()) throw InvalidArgumentError("the space is empty for this problem and these pins");
    std::mt19937_64 rng(o.sample_seed);
    for (int i = 0; i < o.sample; ++i) configs.push_back(space.config(rng() % space.size()));
  }
  if (configs.empty()) throw InvalidArgumentError("nothing to measure: give --config, --seeds or --sample N");

  std::vector<rtc::KernelSpec> specs;
  std::vector<rtc::CompileRequest> requests;
  for (const Config& config : configs) {
    try {
      specs.push_back(rtc::make_spec(tmpl, config, problem, device.arch(), &device));
      requests.push_back(specs.back().request(library));
    } catch (const InvalidArgumentError& e) {
      fmt::print(stderr, "skipped: {}\n", e.what());
    }
  }
  const auto compile_start = std::chrono::steady_clock::now();
  const std::vector<rtc::CompileResult> compiled = rtc::compile_all(requests);
  const double compile_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();

  tuner::ProblemRig rig(problem, device);
  tuner::TimingOptions timing;
  const tuner::Timing cublas = rig.time_cublas(timing);
  const double flops = problem.flops();
  nlohmann::json rows = nlohmann::json::array();
  if (!o.json) {
    fmt::print("{} on {} ({} configs compiled in {:.1f} s on {} threads)\n", problem.to_string(), device.name,
               configs.size(), compile_s, rtc::default_compile_threads());
    fmt::print("{:>10} {:>9} {:>8} {:>5} {:>4} {:>6} {:>9} {:>8}  {}\n", "ms", "TFLOP/s", "vs cuBLAS", "regs",
               "occ", "spill", "rel.err", "compile", "config");
    const std::string vendor = problem.dtype == Dtype::kF32
                                   ? std::string("cuBLAS SGEMM")
                                   : fmt::format("cuBLAS GemmEx ({})", problem.type_name());
    fmt::print("{:>10.4f} {:>9.2f} {:>8} {:>5} {:>4} {:>6} {:>9} {:>8}  {}\n", cublas.median_ms,
               flops / cublas.median_ms / 1e9, "1.000", "", "", "", "", "", vendor);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    const rtc::CompileResult& c = compiled[i];
    nlohmann::json row = {{"config", specs[i].config.key()}, {"compile_ms", c.compile_ms}};
    if (!c.ok) {
      row["outcome"] = "compile_error";
      row["reason"] = c.error;
      if (!o.json) fmt::print("{:>10} compile error: {}  {}\n", "-", c.error, specs[i].config.key());
      rows.push_back(std::move(row));
      continue;
    }
    const rtc::GemmKernel kernel(tmpl, c.cubin, rtc::compiled_operand_passes(tmpl, device.arch()));
    const tuner::Measurement r = rig.evaluate(kernel, specs[i].config, timing, o.error_bound);
    row["outcome"] = tuner::to_string(r.outcome);
    if (r.outcome != tuner::Outcome::kOk) {
      row["reason"] = r.reason;
      if (!o.json)
        fmt::print("{:>10} {}: {}  {}\n", "-", tuner::to_string(r.outcome), r.reason, specs[i].config.key());
      rows.push_back(std::move(row));
      continue;
    }
    row["time_median_ms"] = r.timing.median_ms;
    row["tflops"] = flops / r.timing.median_ms / 1e9;
    row["ratio_vs_cublas"] = cublas.median_ms / r.timing.median_ms;
    row["registers"] = r.registers;
    row["occupancy_blocks"] = r.occupancy_blocks;
    row["spill_store_bytes"] = c.usage.spill_store_bytes;
    row["rel_error"] = r.rel_error;
    rows.push_back(std::move(row));
    if (!o.json) {
      fmt::print("{:>10.4f} {:>9.2f} {:>9.3f} {:>5} {:>4} {:>6} {:>9.2e} {:>7.0f}ms  {}\n",
                 r.timing.median_ms, flops / r.timing.median_ms / 1e9, cublas.median_ms / r.timing.median_ms,
                 r.registers, r.occupancy_blocks, c.usage.spill_store_bytes, r.rel_error, c.compile_ms,
                 specs[i].config.key());
    }
  }
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"problem", problem.to_string()},
                                      {"device", device.name},
                                      {"cublas_ms", cublas.median_ms},
                                      {"compile_s", compile_s},
                                      {"configs", rows}}
                           .dump(2));
  }
  return 0;
}

}  // namespace

namespace {
Command register_measure(CLI::App& app) {
  auto o = std::make_shared<MeasureOptions>();
  CLI::App* cmd = app.add_subcommand("measure", "Verify and time chosen template configs next to cuBLAS");
  cmd->add_option("--template", o->template_name, "Template name")->capture_default_str();
  cmd->add_option("--shape", o->shape, "Problem MxNxK")->capture_default_str();
  add_layout_option(cmd, o->layout);
  cmd->add_option("--dtype", o->dtype, std::string(kDtypeHelp) + "; default: the template's first");
  add_order_option(cmd, o->order);
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--config", o->configs, "Config NAME=VALUE,... (repeatable)");
  cmd->add_flag("--seeds", o->seeds, "Measure the manifest's seed configs");
  cmd->add_option("--sample", o->sample, "Measure N random configs of the (pruned) space");
  cmd->add_option("--sample-seed", o->sample_seed, "Random seed of --sample")->capture_default_str();
  cmd->add_option("--pin", o->pins, "Fix a parameter of the sampled space, e.g. --pin BK=8");
  cmd->add_option("--error-bound", o->error_bound, "Relative Frobenius error bound")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  return {cmd, [o] { return run_measure(*o); }};
}

}  // namespace

static const bool registered = register_command(70, register_measure);

}  // namespace gemmforge::cli
