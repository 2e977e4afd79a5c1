// `gemmforge compile`: compile one template config for an architecture and report its resources; needs
// no GPU.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "cli_common.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/compile_service.hpp"
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
  std::string dtype;  // empty: the template's first type
  std::string order = "row";
  std::string output;
  bool log = false;
  int sample = 0;
  unsigned threads = 0;
  uint64_t sample_seed = 1;
  bool json = false;
};

// NVRTC's phases and their times, in NVRTC's order, summed over compilations.
std::string describe_phases(const rtc::PhaseTimes& phases) {
  double total = 0;
  for (const auto& [name, ms] : phases) total += ms;
  std::vector<std::string> parts;
  for (const auto& [name, ms] : phases)
    parts.push_back(fmt::format("{} {:.0f} ms ({:.1f}%)", name, ms, total > 0 ? 100 * ms / total : 0.0));
  return fmt::format("{}", fmt::join(parts, ", "));
}

nlohmann::json phases_json(const rtc::PhaseTimes& phases) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, ms] : phases) out.push_back({{"phase", name}, {"ms", ms}});
  return out;
}

void add_phases(rtc::PhaseTimes& sum, const rtc::PhaseTimes& more) {
  for (const auto& [name, ms] : more) {
    auto it = std::find_if(sum.begin(), sum.end(), [&](const auto& phase) { return phase.first == name; });
    if (it == sum.end()) {
      sum.emplace_back(name, ms);
    } else {
      it->second += ms;
    }
  }
}

// Compiles `sample` random configs of the problem's space through the tuner's compile pool and reports
// the compile time per kernel, where NVRTC spends it (its front end, the NVVM optimizer, ptxas) and the
// throughput: what tuning pays before it can measure anything. Configs that differ only in launch
// parameters share one kernel, compiled once. Without --threads, on one thread and then on one thread per
// core.
int run_compile_sample(const CompileOptions& o, const KernelTemplate& tmpl, const KernelProblem& problem) {
  // Where the CUDA driver is installed, NVRTC keeps what it compiled in the driver's on-disk cache and
  // answers a program it has seen in a few milliseconds: the sample would time the cache, not the compiler.
  // CUDA_CACHE_DISABLE=0 in the environment keeps it on.
  ::setenv("CUDA_CACHE_DISABLE", "1", /*overwrite=*/0);
  const TemplateLibrary& library = TemplateLibrary::instance();
  const DeviceInfo device = DeviceInfo::nominal(o.arch);
  const Space space = Space::build(tmpl, device, problem);
  if (space.empty()) throw InvalidArgumentError("the space is empty for this problem");
  std::mt19937_64 rng(o.sample_seed);
  std::vector<std::pair<std::string, rtc::CompileRequest>> requests;
  for (int i = 0; i < o.sample; ++i) {
    const Config config = space.config(rng() % space.size());
    const rtc::KernelSpec spec = rtc::make_spec(tmpl, config, problem, o.arch, &device);
    rtc::CompileRequest request = spec.request(library);
    request.time_phases = true;
    requests.emplace_back(spec.cubin_key(library), std::move(request));
  }
  std::vector<unsigned> thread_counts = {o.threads};
  if (o.threads == 0) {
    thread_counts = {1u};
    if (rtc::default_compile_threads() > 1) thread_counts.push_back(rtc::default_compile_threads());
  }
  int failed = 0;
  nlohmann::json runs = nlohmann::json::array();
  for (const unsigned threads : thread_counts) {
    rtc::CompileService service(threads);
    const auto start = std::chrono::steady_clock::now();
    std::vector<rtc::CompileService::Ticket> tickets;
    for (const auto& [key, request] : requests) {
      tickets.push_back(service.submit(key, request, rtc::CompilePriority::kNow));
    }
    std::vector<bool> taken(tickets.size(), false);
    while (const std::optional<size_t> done = service.wait_any(tickets, taken)) taken[*done] = true;
    const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::vector<double> times;
    double cpu_ms = 0;
    failed = 0;
    std::set<const rtc::CompileResult*> seen;
    rtc::PhaseTimes phases;
    for (const rtc::CompileService::Ticket& ticket : tickets) {
      const rtc::CompileResult& r = rtc::CompileService::result(ticket);
      if (!seen.insert(&r).second) continue;
      add_phases(phases, r.phases);
      times.push_back(r.compile_ms);
      cpu_ms += r.cpu_ms;
      failed += r.ok ? 0 : 1;
    }
    std::sort(times.begin(), times.end());
    runs.push_back({{"threads", threads},
                    {"kernels", times.size()},
                    {"median_ms", times[times.size() / 2]},
                    {"min_ms", times.front()},
                    {"max_ms", times.back()},
                    {"mean_cpu_ms", cpu_ms / times.size()},
                    {"kernels_per_s", times.size() / wall_s},
                    {"phases", phases_json(phases)},
                    {"failed", failed}});
    if (o.json) continue;
    fmt::print(
        "{} configs of {} for {} ({}), {} distinct kernels, on {} thread(s): median {:.0f} ms per kernel "
        "(min {:.0f}, max {:.0f}; {:.0f} ms of CPU on average), {:.2f} kernels/s, {} failed\n",
        requests.size(), tmpl.manifest.name(), o.arch, problem.to_string(), times.size(), threads,
        times[times.size() / 2], times.front(), times.back(), cpu_ms / times.size(), times.size() / wall_s,
        failed);
    if (!phases.empty()) fmt::print("  NVRTC's time by phase, all kernels: {}\n", describe_phases(phases));
  }
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"template", tmpl.manifest.name()},
                                      {"arch", o.arch},
                                      {"problem", problem.to_string()},
                                      {"configs", requests.size()},
                                      {"runs", runs},
                                      {"failed", failed}}
                           .dump(2));
  }
  return failed == 0 ? 0 : kExitGpu;
}

int run_compile(const CompileOptions& o) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& tmpl = library.get(o.template_name);
  Config config;
  if (o.sample > 0) {
    // Configs come from the space; checked below.
  } else if (o.seed >= 0) {
    if (o.seed >= static_cast<int>(tmpl.manifest.seeds().size())) {
      throw InvalidArgumentError(
          fmt::format("template {} has {} seed configs", tmpl.manifest.name(), tmpl.manifest.seeds().size()));
    }
    config = tmpl.manifest.seeds()[o.seed];
  } else if (!o.config.empty()) {
    config = Config::parse_key(tmpl.manifest.name(), o.config);
  } else {
    throw InvalidArgumentError("give --config NAME=VALUE,..., --seed N or --sample N");
  }
  int64_t m = 0, n = 0, k = 0;
  parse_shape(o.shape, m, n, k);
  const KernelProblem problem =
      make_problem(m, n, k, o.layout, o.order, o.dtype.empty() ? tmpl.manifest.default_type_name() : o.dtype);
  if (o.sample > 0) return run_compile_sample(o, tmpl, problem);
  const DeviceInfo device = DeviceInfo::nominal(o.arch);
  const rtc::KernelSpec spec = rtc::make_spec(tmpl, config, problem, o.arch, &device);
  rtc::CompileRequest request = spec.request(library);
  request.time_phases = true;
  const rtc::CompileResult result = rtc::compile(request);
  if ((o.log && !o.json) || !result.ok) fmt::print(stderr, "{}\n", result.log);
  if (!result.ok) {
    fmt::print(stderr, "options: {}\n", fmt::join(result.options, " "));
    throw NvrtcError(result.error, result.log, result.options);
  }
  const LaunchGeometry g = tmpl.manifest.geometry(spec.config, problem, device);
  if (!o.output.empty()) {
    std::ofstream out(o.output, std::ios::binary);
    out.write(result.cubin.data(), static_cast<std::streamsize>(result.cubin.size()));
    if (!out) throw InvalidArgumentError(fmt::format("cannot write '{}'", o.output));
  }
  if (o.json) {
    nlohmann::json out = {{"template", tmpl.manifest.name()},
                          {"config", spec.config.key()},
                          {"arch", o.arch},
                          {"problem", problem.to_string()},
                          {"cubin_bytes", result.cubin.size()},
                          {"compile_ms", result.compile_ms},
                          {"phases", phases_json(result.phases)},
                          {"registers", result.usage.registers},
                          {"spill_store_bytes", result.usage.spill_store_bytes},
                          {"spill_load_bytes", result.usage.spill_load_bytes},
                          {"stack_bytes", result.usage.stack_bytes},
                          {"dynamic_smem_bytes", g.smem_bytes},
                          {"static_smem_bytes", result.usage.static_smem_bytes},
                          {"launch",
                           {{"blocks", g.blocks()},
                            {"threads", g.threads},
                            {"split_k", g.split_k},
                            {"k_per_split", g.k_per_split},
                            {"tiles", g.tiles},
                            {"whole_tiles", g.whole_tiles},
                            {"stream_blocks", g.stream_blocks},
                            {"persistent_blocks", g.persistent_blocks}}},
                          {"cache_key", spec.cubin_key(library)}};
    if (g.uses_tensor_maps()) out["launch"]["tma_boxes"] = {{"a", g.tma_box_a}, {"b", g.tma_box_b}};
    if (g.workspace_bytes > 0) {
      out["launch"]["workspace"] = {{"bytes", g.workspace_bytes},
                                    {"partial_tile_bytes", g.partial_bytes},
                                    {"split_parts", g.splits_operands()},
                                    {"copied", {{"a", g.copy_ld_a > 0}, {"b", g.copy_ld_b > 0}}}};
    }
    if (o.log) out["log"] = result.log;
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("{} {} for {} ({})\n", tmpl.manifest.name(), spec.config.key(), o.arch, problem.to_string());
  fmt::print("  cubin           {} bytes, compiled in {:.0f} ms\n", result.cubin.size(), result.compile_ms);
  if (!result.phases.empty()) fmt::print("  NVRTC phases    {}\n", describe_phases(result.phases));
  fmt::print("  registers       {} per thread\n", result.usage.registers);
  fmt::print("  spills          {} bytes stored, {} bytes loaded; stack {} bytes\n",
             result.usage.spill_store_bytes, result.usage.spill_load_bytes, result.usage.stack_bytes);
  fmt::print("  shared memory   {} bytes dynamic, {} bytes static\n", g.smem_bytes,
             result.usage.static_smem_bytes);
  fmt::print("  launch          {} blocks x {} threads, {} K slice(s) of {}", g.blocks(), g.threads,
             g.split_k, g.k_per_split);
  if (g.stream_blocks > 0) {
    fmt::print("; {} whole tiles, then {} stream-K blocks share {} more", g.whole_tiles, g.stream_blocks,
               g.tiles - g.whole_tiles);
  }
  if (g.persistent_blocks > 0 && g.tiles > g.grid_x()) fmt::print("; persistent, walking {} tiles", g.tiles);
  fmt::print("\n");
  if (g.uses_tensor_maps()) {
    // Boxes as the tensor maps state them: elements along the operand's contiguous dimension x rows.
    fmt::print("  TMA boxes       A {} x {}, B {} x {}", g.tma_box_a[0], g.tma_box_a[1], g.tma_box_b[0],
               g.tma_box_b[1]);
    if (g.tma_box_c[0] > 0) fmt::print(", C {} x {} (stored)", g.tma_box_c[0], g.tma_box_c[1]);
    fmt::print(" (elements along the contiguous dimension x rows)\n");
  }
  if (g.workspace_bytes > 0) {
    std::vector<std::string> uses;
    if (g.partial_bytes > 0) uses.push_back("the K slices' partial tiles");
    if (g.splits_operands()) uses.push_back("A's and B's TF32 parts");
    if (g.copy_ld_a > 0) uses.push_back("A's copy with aligned rows");
    if (g.copy_ld_b > 0) uses.push_back("B's copy with aligned rows");
    fmt::print("  workspace       {} bytes: {}\n", g.workspace_bytes, fmt::join(uses, ", "));
  }
  fmt::print("  cache key       {}\n", spec.cubin_key(library));
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
  add_layout_option(cmd, o->layout);
  cmd->add_option("--dtype", o->dtype, std::string(kDtypeHelp) + "; default: the template's first");
  add_order_option(cmd, o->order);
  cmd->add_option("-o,--output", o->output, "Write the cubin to this file");
  cmd->add_flag("--log", o->log, "Print the full NVRTC / ptxas log");
  cmd->add_option("--sample", o->sample,
                  "Instead: compile N random configs of the space and report compile times (NVRTC's on-disk "
                  "cache off unless CUDA_CACHE_DISABLE is set)");
  cmd->add_option("--threads", o->threads, "Compile threads for --sample (default: one, then one per core)");
  cmd->add_option("--sample-seed", o->sample_seed, "Random seed of --sample")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  return {cmd, [o] { return run_compile(*o); }};
}

}  // namespace

static const bool registered = register_command(60, register_compile);

}  // namespace gemmforge::cli
