// `gemmforge space`: a template's parameters and constraints, and for a problem the size of its search
// space with the number of configs each constraint rejects.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "core/space.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::cli {
namespace {

struct SpaceOptions {
  std::string template_name = "sgemm_simt";
  std::string shape;
  std::string layout = "nn";
  std::string dtype;  // empty: the template's first type
  std::string order = "row";
  std::string device;
  std::string arch;
  std::vector<std::string> pins;
  int list = 0;
  bool json = false;
};

void print_manifest(const Manifest& m) {
  fmt::print("Template {} ({}, compute capability >= {}.{}): {}\n", m.name(), to_string(m.dtype()),
             m.min_cc() / 10, m.min_cc() % 10, m.description());
  fmt::print("\nParameters ({:.0f} combinations before constraints):\n", m.space_size());
  for (const Parameter& p : m.parameters()) {
    fmt::print("  {:<11} {:<28} {}{}\n", p.name, fmt::format("{}", fmt::join(p.values, " ")), p.doc,
               p.launch ? " [launch time]" : "");
  }
  fmt::print("\nDerived values:\n");
  for (const DerivedValue& d : m.derived()) {
    fmt::print("  {:<11} = {:<50} {}{}\n", d.name, d.value.expression.text(), d.doc, d.define ? " [-D]" : "");
  }
  fmt::print("\nConstraints (a config breaking one is invalid):\n");
  for (const Constraint& c : m.constraints()) {
    fmt::print("  {:<24} {}\n  {:<24} ({})\n", c.name, c.condition.expression.text(), "", c.message);
  }
  fmt::print("\nPruning rules (keep unpromising configs out of the search):\n");
  for (const Constraint& c : m.pruning()) {
    fmt::print("  {:<24} {}\n  {:<24} ({})\n", c.name, c.condition.expression.text(), "", c.message);
  }
}

int run_space(const SpaceOptions& o) {
  const KernelTemplate& tmpl = TemplateLibrary::instance().get(o.template_name);
  if (o.shape.empty()) {
    if (o.json) throw InvalidArgumentError("--json needs --shape");
    print_manifest(tmpl.manifest);
    return 0;
  }
  int64_t m = 0, n = 0, k = 0;
  parse_shape(o.shape, m, n, k);
  const KernelProblem problem =
      make_problem(m, n, k, o.layout, o.order, o.dtype.empty() ? tmpl.manifest.default_type_name() : o.dtype);
  DeviceInfo device;
  try {
    device = resolve_device(o.device, o.arch);
  } catch (const NoDeviceError& e) {
    throw NoDeviceError(
        fmt::format("{}; pass --arch sm_90 (or sm_80, sm_86, sm_89) for nominal limits", e.what()));
  }
  Pins pins;
  for (const std::string& pin : o.pins) add_pin(pins, pin);
  const Space space = Space::build(tmpl, device, problem, pins);
  if (o.json) {
    nlohmann::json rejected = nlohmann::json::object();
    nlohmann::json pruned = nlohmann::json::object();
    for (const auto& r : space.rejections()) (r.pruning ? pruned : rejected)[r.rule] = r.count;
    nlohmann::json configs = nlohmann::json::array();
    for (size_t i = 0; i < space.size() && static_cast<int>(i) < o.list; ++i)
      configs.push_back(space.config(i).key());
    fmt::print("{}\n", nlohmann::json{{"template", tmpl.manifest.name()},
                                      {"problem", problem.to_string()},
                                      {"device", device.name},
                                      {"total", space.total()},
                                      {"valid", space.size()},
                                      {"rejected", rejected},
                                      {"pruned", pruned},
                                      {"configs", configs}}
                           .dump(2));
    return 0;
  }
  fmt::print("Template {} for {} on {}\n", tmpl.manifest.name(), problem.to_string(), device.name);
  fmt::print("  {:>14.0f}  configs before constraints\n", space.total());
  for (const auto& r : space.rejections()) {
    fmt::print("  {:>14.0f}  {} {}\n", r.count, r.pruning ? "pruned by" : "rejected by", r.rule);
  }
  fmt::print("  {:>14}  valid\n", space.size());
  for (size_t i = 0; i < space.size() && static_cast<int>(i) < o.list; ++i) {
    fmt::print("    {}\n", space.config(i).key());
  }
  return 0;
}

}  // namespace

namespace {
Command register_space(CLI::App& app) {
  auto o = std::make_shared<SpaceOptions>();
  CLI::App* cmd =
      app.add_subcommand("space", "Show a template's parameters, or count its search space for a problem");
  cmd->add_option("--template", o->template_name, "Template name")->capture_default_str();
  cmd->add_option("--shape", o->shape, "Problem MxNxK; without it the manifest is printed");
  add_layout_option(cmd, o->layout);
  cmd->add_option("--dtype", o->dtype, std::string(kDtypeHelp) + "; default: the template's first");
  add_order_option(cmd, o->order);
  cmd->add_option("--device", o->device, "GPU index, UUID or name (default: the first GPU)");
  cmd->add_option("--arch", o->arch,
                  "Use nominal limits of an architecture instead of a GPU (sm_80 ... sm_90a)");
  cmd->add_option("--pin", o->pins, "Fix a parameter, e.g. --pin BK=8 (repeatable)");
  cmd->add_option("--list", o->list, "Also print the first N valid configs")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", o->json, "Print JSON");
  return {cmd, [o] { return run_space(*o); }};
}

}  // namespace

static const bool registered = register_command(20, register_space);

}  // namespace gemmforge::cli
