// `gemmforge bundle`: compile the kernels of shipped results for one architecture into a cubin bundle
// (db/tuned/*.cubins), so that problems served from those results never wait for NVRTC. Needs no GPU.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli_common.hpp"
#include "core/device_info.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/compiler.hpp"
#include "rtc/cubin_bundle.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/operand_passes.hpp"
#include "runtime/config_check.hpp"
#include "runtime/shipped_results.hpp"

namespace gemmforge::cli {
namespace {

struct BundleOptions {
  std::string arch = "sm_90";
  std::string results;
  std::string output;
  unsigned threads = 0;
  bool json = false;
};

int run_bundle(const BundleOptions& o) {
  const std::string arch = normalize_arch(o.arch);
  const TemplateLibrary& library = TemplateLibrary::instance();
  const runtime::ShippedResults shipped =
      o.results.empty()
          ? runtime::ShippedResults(runtime::builtin_result_files(), "built-in results", library)
          : runtime::ShippedResults(runtime::result_files_in(o.results), o.results, library);
  std::vector<rtc::KernelSpec> specs;
  std::set<std::string> keys;
  for (const auto& [device, result] : shipped.bests(arch_cc(arch))) {
    std::string why;
    const std::optional<runtime::CheckedConfig> checked =
        runtime::check_config(library, result.template_name, result.config_key, device, result.problem, &why);
    if (!checked) {
      fmt::print(stderr, "skipping {} {} for {}: {}\n", result.template_name, result.config_key,
                 result.problem.to_string(), why);
      continue;
    }
    rtc::KernelSpec spec =
        rtc::make_spec(*checked->kernel_template, checked->config, result.problem, arch, &device);
    if (keys.insert(spec.cubin_key(library)).second) specs.push_back(std::move(spec));
  }
  if (specs.empty()) {
    throw NotFoundError(fmt::format("the results hold no best config of a {} GPU to compile", arch));
  }
  std::vector<rtc::CompileRequest> requests;
  for (const rtc::KernelSpec& spec : specs) requests.push_back(spec.request(library));
  // The operand passes those kernels run, which they do not carry.
  const bool passes = std::any_of(specs.begin(), specs.end(), [](const rtc::KernelSpec& spec) {
    return spec.kernel_template->manifest.prepares_operands();
  });
  if (passes) requests.push_back(rtc::OperandPasses::request(library, arch));
  const std::vector<rtc::CompileResult> compiled = rtc::compile_all(requests, o.threads);
  std::vector<rtc::BundledCubin> cubins;
  size_t bytes = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    cubins.push_back(rtc::BundledCubin{specs[i].cubin_key(library), specs[i].kernel_template->manifest.name(),
                                       specs[i].config.key(), compiled[i].cubin_or_throw()});
    bytes += cubins.back().cubin.size();
  }
  if (passes) {
    cubins.push_back(rtc::BundledCubin{rtc::OperandPasses::cubin_key(library, arch),
                                       rtc::OperandPasses::kName, "-", compiled.back().cubin_or_throw()});
    bytes += cubins.back().cubin.size();
  }
  const std::string bundle = rtc::write_cubin_bundle(cubins, rtc::nvrtc_version());
  // Written beside its destination and renamed into place: a failure leaves no truncated bundle behind.
  const std::string temporary = fmt::format("{}.tmp-{}", o.output, ::getpid());
  std::ofstream out(temporary, std::ios::binary);
  out << bundle;
  out.close();
  std::error_code error;
  if (out) std::filesystem::rename(temporary, o.output, error);
  if (!out || error) {
    std::filesystem::remove(temporary, error);
    throw InvalidArgumentError(fmt::format("cannot write '{}'", o.output));
  }
  if (o.json) {
    const nlohmann::json summary = {{"arch", arch},
                                    {"cubins", cubins.size()},
                                    {"bytes", bytes},
                                    {"compressed_bytes", bundle.size()},
                                    {"output", o.output}};
    fmt::print("{}\n", summary.dump(2));
  } else {
    fmt::print("{} cubins for {} ({:.1f} MB, {:.1f} MB compressed) written to {}\n", cubins.size(), arch,
               bytes / 1e6, bundle.size() / 1e6, o.output);
  }
  return 0;
}

Command register_bundle(CLI::App& app) {
  auto o = std::make_shared<BundleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bundle", "Compile the kernels of shipped results for an architecture into a cubin bundle (no GPU)");
  cmd->add_option("--arch", o->arch, "Architecture of the results' GPUs and of the cubins")
      ->capture_default_str();
  cmd->add_option("--results", o->results, "Folder of exports to bundle (default: the built-in results)");
  cmd->add_option("-o,--output", o->output, "Bundle file to write, e.g. db/tuned/sm_90.cubins")->required();
  cmd->add_option("--threads", o->threads, "NVRTC threads (0: one per core)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the summary as JSON");
  return {cmd, [o] { return run_bundle(*o); }};
}

}  // namespace

static const bool registered = register_command(85, register_bundle);

}  // namespace gemmforge::cli
