// `gemmforge compile`: compile one template config for an architecture and report its resources; needs
// no GPU.
#include <fmt/format.h>

#include <fstream>

#include "cli_common.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/kernel_spec.hpp"

namespace gemmforge::cli {
namespace {

struct CompileOptions {
  std::string template_name = "sgemm_simt";
  std::string config;
  int seed = -1;
  std::string arch = "sm_90";
  std::string shape = "1024x1024x1024";
  std::string layout = "nn";
  std::string order = "row";
  std::string output;
  bool log = false;
};

int run_compile(const CompileOptions& o) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& tmpl = library.get(o.template_name);
  Config config;
  if (o.seed >= 0) {
    if (o.seed >= static_cast<int>(tmpl.manifest.seeds().size())) {
      throw InvalidArgumentError(
          fmt::format("template {} has {} seed configs", tmpl.manifest.name(), tmpl.manifest.seeds().size()));
    }
    config = tmpl.manifest.seeds()[o.seed];
  } else if (!o.config.empty()) {
    config = Config::parse_key(tmpl.manifest.name(), o.config);
  } else {
    throw InvalidArgumentError("give --config NAME=VALUE,... or --seed N");
  }
  int64_t m = 0, n = 0, k = 0;
  parse_shape(o.shape, m, n, k);
  const KernelProblem problem = make_problem(m, n, k, o.layout, o.order, tmpl.manifest.dtype());
  const DeviceInfo device = DeviceInfo::nominal(o.arch);
  const rtc::KernelSpec spec = rtc::make_spec(tmpl, config, problem, o.arch, &device);
  const rtc::CompileResult result = rtc::compile(spec.request(library));
  if (o.log || !result.ok) fmt::print("{}\n", result.log);
  if (!result.ok) {
    fmt::print(stderr, "options: {}\n", fmt::join(result.options, " "));
    throw NvrtcError(result.error, result.log, result.options);
  }
  const LaunchGeometry g = tmpl.manifest.geometry(spec.config, problem);
  fmt::print("{} {} for {} ({})\n", tmpl.manifest.name(), spec.config.key(), o.arch, problem.to_string());
  fmt::print("  cubin           {} bytes, compiled in {:.0f} ms\n", result.cubin.size(), result.compile_ms);
  fmt::print("  registers       {} per thread\n", result.usage.registers);
  fmt::print("  spills          {} bytes stored, {} bytes loaded; stack {} bytes\n",
             result.usage.spill_store_bytes, result.usage.spill_load_bytes, result.usage.stack_bytes);
  fmt::print("  shared memory   {} bytes dynamic, {} bytes static\n", g.smem_bytes,
             result.usage.static_smem_bytes);
  fmt::print("  launch          {} blocks x {} threads, {} K slice(s) of {}\n", g.tiles, g.threads, g.split_k,
             g.k_per_split);
  fmt::print("  cache key       {}\n", spec.cubin_key(library));
  if (!o.output.empty()) {
    std::ofstream out(o.output, std::ios::binary);
    out.write(result.cubin.data(), static_cast<std::streamsize>(result.cubin.size()));
    if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", o.output));
  }
  return 0;
}

}  // namespace

namespace {
Command register_compile(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd =
      app.add_subcommand("compile", "Compile one template config with NVRTC and report its resources");
  cmd->add_option("--template", o->template_name, "Template name")->capture_default_str();
  cmd->add_option("--config", o->config, "Config as NAME=VALUE,NAME=VALUE,...");
  cmd->add_option("--seed", o->seed, "Use the manifest's N-th seed config instead of --config");
  cmd->add_option("--arch", o->arch, "Target architecture: sm_80, sm_86, sm_89, sm_90, sm_90a")
      ->capture_default_str();
  cmd->add_option("--shape", o->shape, "Problem the config is checked against, MxNxK")->capture_default_str();
  cmd->add_option("--layout", o->layout, "op(A) op(B): nn, nt, tn or tt")->capture_default_str();
  cmd->add_option("--order", o->order, "Storage order: row or col")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Write the cubin to this file");
  cmd->add_flag("--log", o->log, "Print the full NVRTC / ptxas log");
  return {cmd, [o] { return run_compile(*o); }};
}

}  // namespace

static const bool registered = register_command(60, register_compile);

}  // namespace gemmforge::cli
