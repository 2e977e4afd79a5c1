// Parsing, checking and evaluating template manifests.
#include "core/manifest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "core/device_info.hpp"
#include "core/dtype.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {
namespace {

using json = nlohmann::json;

// Context variables a manifest may read; their slots follow the parameters and derived values.
const std::vector<std::string> kDeviceVariables = {"device.cc",
                                                   "device.sm_count",
                                                   "device.max_threads_per_block",
                                                   "device.max_threads_per_sm",
                                                   "device.max_blocks_per_sm",
                                                   "device.smem_per_block_optin",
                                                   "device.smem_per_sm",
                                                   "device.regs_per_block",
                                                   "device.regs_per_sm",
                                                   "device.l2_bytes"};
// problem.dtype and problem.c_dtype are Dtype's values (0 f32, 1 tf32, 2 f16, 3 bf16); the alignments are in
// elements of their operand, the sizes of one element in bytes; the pitches are the bytes from one row of A
// (B) to the next stored tight (KernelProblem::tight_lda, tight_ldb).
const std::vector<std::string> kProblemVariables = {
    "problem.m",       "problem.n",       "problem.k",       "problem.a_trans",       "problem.b_trans",
    "problem.align_a", "problem.align_b", "problem.align_c", "problem.element_bytes", "problem.c_bytes",
    "problem.dtype",   "problem.c_dtype", "problem.pitch_a", "problem.pitch_b"};

constexpr int64_t kUnknown = std::numeric_limits<int64_t>::min();

std::string required_string(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || !object[key].is_string()) {
    throw InvalidArgumentError(fmt::format("{}: missing string field '{}'", where, key));
  }
  return object[key].get<std::string>();
}

}  // namespace

int64_t BoundExpression::evaluate(const int64_t* symbols) const {
  return expression.evaluate([&](size_t i) { return symbols[slots[i]]; });
}

std::string Violation::describe() const {
  return fmt::format("{} ({}): {}", constraint->name, constraint->condition.expression.text(),
                     constraint->message);
}

BoundExpression Manifest::bind(const std::string& text, const std::string& where) const {
  BoundExpression bound;
  try {
    bound.expression = Expression::parse(text);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(fmt::format("{}: {}: {}", origin_, where, e.what()));
  }
  for (const std::string& identifier : bound.expression.identifiers()) {
    auto it = std::find(symbols_.begin(), symbols_.end(), identifier);
    if (it == symbols_.end()) {
      throw InvalidArgumentError(
          fmt::format("{}: {}: unknown name '{}' in '{}' (parameters, earlier derived values, "
                      "device.* and problem.* are known)",
                      origin_, where, identifier, text));
    }
    const int slot = static_cast<int>(it - symbols_.begin());
    bound.slots.push_back(slot);
    const int parameters = static_cast<int>(parameters_.size());
    const int derived_end = parameters + derived_count_;
    if (slot < parameters) {
      bound.last_parameter = std::max(bound.last_parameter, slot);
    } else if (slot < derived_end) {
      if (slot - parameters >= static_cast<int>(derived_.size())) {
        throw InvalidArgumentError(fmt::format("{}: {}: '{}' is a derived value defined later or itself",
                                               origin_, where, identifier));
      }
      const BoundExpression& inner = derived_[slot - parameters].value;
      bound.last_parameter = std::max(bound.last_parameter, inner.last_parameter);
      bound.needs_device |= inner.needs_device;
      bound.needs_problem |= inner.needs_problem;
    } else if (identifier.rfind("device.", 0) == 0) {
      bound.needs_device = true;
    } else {
      bound.needs_problem = true;
    }
  }
  return bound;
}

Manifest Manifest::parse(const std::string& json_text, const std::string& origin) {
  Manifest m;
  m.origin_ = origin;
  json doc;
  try {
    doc = json::parse(json_text);
  } catch (const json::exception& e) {
    throw InvalidArgumentError(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!doc.is_object()) throw InvalidArgumentError(fmt::format("{}: a manifest is a JSON object", origin));
  try {
    m.name_ = required_string(doc, "name", origin);
    m.description_ = doc.value("description", "");
    m.source_file_ = required_string(doc, "source", origin);
    m.kernel_name_ = required_string(doc, "kernel", origin);
    // "dtype": one type name or a list of them ("bf16", "bf16>f32"), the operand and output types served.
    const json types = doc.value("dtype", json("f32"));
    for (const json& type : types.is_array() ? types : json::array({types})) {
      if (!type.is_string()) throw InvalidArgumentError(fmt::format("{}: dtype lists type names", origin));
      std::pair<Dtype, Dtype> served;
      parse_type_name(type.get<std::string>(), served.first, served.second);
      m.types_.push_back(served);
    }
    if (m.types_.empty()) throw InvalidArgumentError(fmt::format("{}: dtype names no type", origin));
    m.min_cc_ = doc.value("min_cc", 0);
    if (doc.contains("math")) {
      const std::string math = required_string(doc, "math", origin);
      if (math != "ffma") {
        throw InvalidArgumentError(fmt::format(
            "{}: math '{}' is not known; \"ffma\" states that the template multiplies in FP32 FFMA", origin,
            math));
      }
      m.multiplies_in_fp32_ = true;
    }
    if (doc.contains("arch")) {
      m.arch_ = normalize_arch(required_string(doc, "arch", origin));
      m.min_cc_ = std::max(m.min_cc_, arch_cc(m.arch_));
    }

    std::set<std::string> names;
    for (const json& p : doc.at("parameters")) {
      Parameter parameter;
      parameter.name = required_string(p, "name", origin + ": parameter");
      parameter.launch = p.value("launch", false);
      parameter.doc = p.value("doc", "");
      parameter.values = p.at("values").get<std::vector<int64_t>>();
      if (parameter.values.empty()) {
        throw InvalidArgumentError(
            fmt::format("{}: parameter {} has an empty domain", origin, parameter.name));
      }
      if (p.contains("absent")) {
        parameter.absent = p.at("absent").get<int64_t>();
        if (std::find(parameter.values.begin(), parameter.values.end(), *parameter.absent) ==
            parameter.values.end()) {
          throw InvalidArgumentError(fmt::format("{}: parameter {}: absent value {} is outside its domain {}",
                                                 origin, parameter.name, *parameter.absent,
                                                 fmt::join(parameter.values, ", ")));
        }
      }
      if (!names.insert(parameter.name).second) {
        throw InvalidArgumentError(fmt::format("{}: parameter {} is listed twice", origin, parameter.name));
      }
      m.parameters_.push_back(std::move(parameter));
      m.symbols_.push_back(m.parameters_.back().name);
    }
    // Every name takes its slot up front; a derived value may read only the derived values before it.
    const json derived = doc.value("derived", json::array());
    for (const json& d : derived) {
      const std::string name = required_string(d, "name", origin + ": derived value");
      if (!names.insert(name).second) {
        throw InvalidArgumentError(fmt::format("{}: derived value {} reuses a name", origin, name));
      }
      m.symbols_.push_back(name);
    }
    m.derived_count_ = static_cast<int>(derived.size());
    m.symbols_.insert(m.symbols_.end(), kDeviceVariables.begin(), kDeviceVariables.end());
    m.symbols_.insert(m.symbols_.end(), kProblemVariables.begin(), kProblemVariables.end());
    for (const json& d : derived) {
      DerivedValue value;
      value.name = d.at("name").get<std::string>();
      value.define = d.value("define", false);
      value.doc = d.value("doc", "");
      value.value = m.bind(required_string(d, "expr", origin), "derived value " + value.name);
      m.derived_.push_back(std::move(value));
    }

    for (auto [section, rules] :
         {std::pair{"constraints", &m.constraints_}, std::pair{"pruning", &m.pruning_}}) {
      for (const json& c : doc.value(section, json::array())) {
        Constraint rule;
        rule.name = required_string(c, "name", origin + ": " + section);
        rule.message = c.value("message", "");
        rule.condition = m.bind(required_string(c, "expr", origin), std::string(section) + " " + rule.name);
        rules->push_back(std::move(rule));
      }
    }

    const json& launch = doc.at("launch");
    auto launch_expr = [&](const char* key, const char* fallback) {
      const std::string text =
          launch.contains(key) ? launch.at(key).get<std::string>() : std::string(fallback);
      if (text.empty()) throw InvalidArgumentError(fmt::format("{}: launch.{} is required", origin, key));
      return m.bind(text, std::string("launch.") + key);
    };
    m.launch_.threads = launch_expr("threads", "");
    m.launch_.smem_bytes = launch_expr("smem_bytes", "0");
    m.launch_.tiles = launch_expr("tiles", "");
    m.launch_.split_k = launch_expr("split_k", "1");
    m.launch_.k_granule = launch_expr("k_granule", "1");
    m.launch_.raster_group = launch_expr("raster_group", "1");
    m.launch_.partial_tile_floats = launch_expr("partial_tile_floats", "0");
    m.launch_.stream_waves = launch_expr("stream_waves", "0");
    m.launch_.k_products = launch_expr("k_products", "1");
    m.launch_.copy_a = launch_expr("copy_a", "0");
    m.launch_.copy_b = launch_expr("copy_b", "0");
    m.prepares_operands_ =
        launch.contains("k_products") || launch.contains("copy_a") || launch.contains("copy_b");
    m.launch_.wave = launch_expr("wave", "device.sm_count");
    // How K slices are summed: the same for every config ("split_reduction"), or chosen by one
    // ("parallel_split", an expression: nonzero for the parallel reduction).
    const std::string reduction = launch.value("split_reduction", "serial");
    if (reduction != "serial" && reduction != "parallel") {
      throw InvalidArgumentError(fmt::format(
          "{}: launch.split_reduction is '{}'; it must be 'serial' or 'parallel'", origin, reduction));
    }
    if (launch.contains("split_reduction") && launch.contains("parallel_split")) {
      throw InvalidArgumentError(
          fmt::format("{}: launch gives both split_reduction and parallel_split; give one", origin));
    }
    m.launch_.parallel_split = launch_expr("parallel_split", reduction == "parallel" ? "1" : "0");
    m.launch_.persistent = launch_expr("persistent", "0");
    m.launch_.cluster = launch_expr("cluster", "1");
    m.launch_.cluster_units = launch_expr("cluster_units", "0");
    m.launch_.cluster_shares = launch_expr("cluster_shares", "1");
    m.launch_.l2_streamed = launch_expr("l2_streamed", "0");
    // Tensor map boxes come in pairs, both operands or neither.
    auto box = [&](const char* key) {
      const json& pair = launch.at(key);
      if (!pair.is_array() || pair.size() != 2) {
        throw InvalidArgumentError(
            fmt::format("{}: launch.{} must be two expressions: the box along the operand's contiguous "
                        "dimension, then along its rows",
                        origin, key));
      }
      return std::array<BoundExpression, 2>{
          m.bind(pair[0].get<std::string>(), std::string("launch.") + key + "[0]"),
          m.bind(pair[1].get<std::string>(), std::string("launch.") + key + "[1]")};
    };
    if (launch.contains("tma_box_a") != launch.contains("tma_box_b")) {
      throw InvalidArgumentError(
          fmt::format("{}: launch gives one of tma_box_a and tma_box_b; give both or neither", origin));
    }
    if (launch.contains("tma_box_a")) {
      m.launch_.tma_box_a = box("tma_box_a");
      m.launch_.tma_box_b = box("tma_box_b");
      if (launch.contains("tma_box_c")) m.launch_.tma_box_c = box("tma_box_c");
    } else if (launch.contains("tma_box_c")) {
      throw InvalidArgumentError(
          fmt::format("{}: launch gives tma_box_c without tma_box_a and tma_box_b: C's tensor map comes "
                      "with the operands'",
                      origin));
    }

    for (const json& seed : doc.value("seeds", json::array())) {
      Config::Values values;
      for (const auto& [key, value] : seed.items()) values.emplace_back(key, value.get<int64_t>());
      try {
        m.seeds_.push_back(m.normalize(Config(m.name_, std::move(values))));
      } catch (const InvalidArgumentError& e) {
        throw InvalidArgumentError(fmt::format("{}: seed {}: {}", origin, m.seeds_.size(), e.what()));
      }
    }
  } catch (const json::exception& e) {
    throw InvalidArgumentError(fmt::format("{}: malformed manifest: {}", origin, e.what()));
  }
  for (const Config& seed : m.seeds_) {
    for (const Violation& v : m.violations(seed)) {
      throw InvalidArgumentError(fmt::format("{}: seed {} breaks {}", origin, seed.key(), v.describe()));
    }
  }
  return m;
}

const Parameter* Manifest::find_parameter(const std::string& name) const {
  for (const Parameter& p : parameters_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

double Manifest::space_size() const {
  double size = 1;
  for (const Parameter& p : parameters_) size *= static_cast<double>(p.values.size());
  return size;
}

Config Manifest::normalize(const Config& config) const {
  if (!config.template_name().empty() && config.template_name() != name_) {
    throw InvalidArgumentError(
        fmt::format("config is for template '{}', not '{}'", config.template_name(), name_));
  }
  for (const auto& [key, value] : config.values()) {
    if (find_parameter(key) == nullptr) {
      throw InvalidArgumentError(fmt::format("template {} has no parameter '{}'", name_, key));
    }
  }
  Config::Values ordered;
  for (const Parameter& p : parameters_) {
    int count = 0;
    for (const auto& [key, value] : config.values()) count += key == p.name;
    if (count == 0 && p.absent) {
      ordered.emplace_back(p.name, *p.absent);  // written before the parameter existed
      continue;
    }
    if (count != 1) {
      throw InvalidArgumentError(fmt::format("config of template {} {} parameter {}", name_,
                                             count == 0 ? "lacks" : "repeats", p.name));
    }
    const int64_t value = *config.find(p.name);
    if (std::find(p.values.begin(), p.values.end(), value) == p.values.end()) {
      throw InvalidArgumentError(fmt::format("template {}: {}={} is outside its domain {}", name_, p.name,
                                             value, fmt::join(p.values, ", ")));
    }
    ordered.emplace_back(p.name, value);
  }
  return Config(name_, std::move(ordered));
}

void Manifest::bind_context(int64_t* symbols, const DeviceInfo* device, const KernelProblem* problem) const {
  const size_t base = parameters_.size() + derived_.size();
  if (device != nullptr) {
    const int64_t values[] = {device->cc(),
                              device->sm_count,
                              device->max_threads_per_block,
                              device->max_threads_per_sm,
                              device->max_blocks_per_sm,
                              device->smem_per_block_optin,
                              device->smem_per_sm,
                              device->regs_per_block,
                              device->regs_per_sm,
                              device->l2_bytes};
    std::copy(std::begin(values), std::end(values), symbols + base);
  }
  if (problem != nullptr) {
    const int64_t values[] = {problem->m,
                              problem->n,
                              problem->k,
                              problem->a_trans,
                              problem->b_trans,
                              problem->align_a,
                              problem->align_b,
                              problem->align_c,
                              element_bytes(problem->dtype),
                              element_bytes(problem->c_dtype),
                              static_cast<int64_t>(problem->dtype),
                              static_cast<int64_t>(problem->c_dtype),
                              problem->tight_lda() * element_bytes(problem->dtype),
                              problem->tight_ldb() * element_bytes(problem->dtype)};
    std::copy(std::begin(values), std::end(values), symbols + base + kDeviceVariables.size());
  }
}

std::vector<int64_t> Manifest::symbols_for(const Config& normalized, const DeviceInfo* device,
                                           const KernelProblem* problem) const {
  std::vector<int64_t> symbols(symbols_.size(), kUnknown);
  for (size_t i = 0; i < parameters_.size(); ++i) symbols[i] = normalized.values()[i].second;
  bind_context(symbols.data(), device, problem);
  for (size_t i = 0; i < derived_.size(); ++i) {
    const BoundExpression& e = derived_[i].value;
    if ((e.needs_device && device == nullptr) || (e.needs_problem && problem == nullptr)) continue;
    symbols[parameters_.size() + i] = e.evaluate(symbols.data());
  }
  return symbols;
}

namespace {

std::vector<Violation> broken_rules(const std::vector<Constraint>& rules, const std::vector<int64_t>& symbols,
                                    const DeviceInfo* device, const KernelProblem* problem) {
  std::vector<Violation> broken;
  for (const Constraint& c : rules) {
    const BoundExpression& e = c.condition;
    if ((e.needs_device && device == nullptr) || (e.needs_problem && problem == nullptr)) continue;
    if (e.evaluate(symbols.data()) == 0) broken.push_back(Violation{&c});
  }
  return broken;
}

}  // namespace

std::vector<Violation> Manifest::violations(const Config& config, const DeviceInfo* device,
                                            const KernelProblem* problem) const {
  const Config normalized = normalize(config);
  return broken_rules(constraints_, symbols_for(normalized, device, problem), device, problem);
}

std::vector<Violation> Manifest::pruned_by(const Config& config, const DeviceInfo& device,
                                           const KernelProblem& problem) const {
  const Config normalized = normalize(config);
  return broken_rules(pruning_, symbols_for(normalized, &device, &problem), &device, &problem);
}

Config Manifest::check(const Config& config, const DeviceInfo* device, const KernelProblem* problem) const {
  Config normalized = normalize(config);
  const std::vector<Violation> broken = violations(normalized, device, problem);
  if (!broken.empty()) {
    std::string reasons;
    for (const Violation& v : broken) reasons += "\n  - " + v.describe();
    std::string context;
    if (problem != nullptr) context += " for " + problem->to_string();
    if (device != nullptr) context += " on " + device->name;
    throw InvalidArgumentError(
        fmt::format("config {} of template {} is invalid{}:{}", normalized.key(), name_, context, reasons));
  }
  return normalized;
}

std::vector<std::pair<std::string, int64_t>> Manifest::defines(const Config& config,
                                                               const KernelProblem& problem) const {
  const Config normalized = normalize(config);
  const std::vector<int64_t> symbols = symbols_for(normalized, nullptr, &problem);
  std::vector<std::pair<std::string, int64_t>> out;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    if (!parameters_[i].launch) out.emplace_back(parameters_[i].name, symbols[i]);
  }
  for (size_t i = 0; i < derived_.size(); ++i) {
    if (!derived_[i].define) continue;
    if (derived_[i].value.needs_device) {
      throw InvalidArgumentError(
          fmt::format("{}: derived value {} is a define but reads device.*; defines may "
                      "depend only on the config and the problem",
                      origin_, derived_[i].name));
    }
    out.emplace_back(derived_[i].name, symbols[parameters_.size() + i]);
  }
  return out;
}

bool Manifest::serves(Dtype dtype, Dtype c_dtype) const {
  return std::find(types_.begin(), types_.end(), std::pair{dtype, c_dtype}) != types_.end();
}

Manifest::Math Manifest::math(Dtype dtype) const {
  if (multiplies_in_fp32_) return {Dtype::kFfma, 1};
  if (dtype != Dtype::kF32) return {dtype, 1};
  if (serves(Dtype::kFfma, default_output(Dtype::kFfma))) return {Dtype::kFfma, 1};
  return {Dtype::kTf32, 3};
}

std::string Manifest::type_names() const {
  std::string out;
  for (const auto& [dtype, c_dtype] : types_) {
    KernelProblem p;
    p.dtype = dtype;
    p.c_dtype = c_dtype;
    out += (out.empty() ? "" : ", ") + p.type_name();
  }
  return out;
}

std::string Manifest::default_type_name() const {
  KernelProblem p;
  p.dtype = types_.front().first;
  p.c_dtype = types_.front().second;
  return p.type_name();
}

LaunchGeometry Manifest::geometry(const Config& config, const KernelProblem& problem,
                                  const DeviceInfo& device) const {
  const Config normalized = normalize(config);
  const std::vector<int64_t> symbols = symbols_for(normalized, &device, &problem);
  LaunchGeometry g;
  g.threads = launch_.threads.evaluate(symbols.data());
  g.smem_bytes = launch_.smem_bytes.evaluate(symbols.data());
  g.tiles = launch_.tiles.evaluate(symbols.data());
  g.raster_group = std::max<int64_t>(1, launch_.raster_group.evaluate(symbols.data()));
  g.k_granule = std::max<int64_t>(1, launch_.k_granule.evaluate(symbols.data()));
  const int64_t requested = std::max<int64_t>(1, launch_.split_k.evaluate(symbols.data()));
  g.k_products = launch_.k_products.evaluate(symbols.data());
  if (g.k_products != 1 && g.k_products != 3) {
    throw InvalidArgumentError(
        fmt::format("{}: launch.k_products is {}; it must be 1 or 3 (TF32 products of split operands)",
                    origin_, g.k_products));
  }
  // Every slice but the last covers a whole number of granules; slices left empty are dropped.
  const int64_t k = std::max<int64_t>(problem.k, 1);
  g.k_per_split = (k + requested - 1) / requested;
  g.k_per_split = (g.k_per_split + g.k_granule - 1) / g.k_granule * g.k_granule;
  g.split_k = (k + g.k_per_split - 1) / g.k_per_split;
  g.semaphores = g.split_k > 1 ? g.tiles : 0;
  // Stream-K: the tiles of the last, partial wave (and stream_waves - 1 full waves before it) are shared
  // out as K iterations over one wave of blocks, evenly, instead of leaving most SMs idle at the end.
  const int64_t stream_waves = launch_.stream_waves.evaluate(symbols.data());
  const int64_t wave = std::max<int64_t>(1, launch_.wave.evaluate(symbols.data()));
  if (stream_waves > 0 && g.split_k == 1 && problem.k > 0 && g.tiles % wave != 0) {
    const int64_t streamed = std::min(g.tiles, g.tiles % wave + (stream_waves - 1) * wave);
    const int64_t iterations = streamed * ((problem.k + g.k_granule - 1) / g.k_granule);
    const int64_t per_block = (iterations + wave - 1) / wave;
    g.whole_tiles = g.tiles - streamed;
    g.stream_blocks = (iterations + per_block - 1) / per_block;  // none left without work
    g.semaphores = g.tiles;
  }
  // A persistent launch is one wave of blocks walking the tiles; with stream-K, walking the whole tiles (a
  // whole number of waves) before the first stream_blocks of them take their shares.
  if (g.split_k == 1 && launch_.persistent.evaluate(symbols.data()) != 0) g.persistent_blocks = wave;
  // Partial tiles in the workspace: every slice's of a parallel split, or with stream-K a slot per
  // streamed tile that its segments add into in turn, or (gemm_tma) a slot per stream block, where the
  // segment short of a tile's K end leaves its partial tile for the segment ending it.
  if (launch_.parallel_split.evaluate(symbols.data()) != 0) {
    const int64_t tile_bytes = launch_.partial_tile_floats.evaluate(symbols.data()) * 4;
    if (g.split_k > 1) g.partial_bytes = g.split_k * g.tiles * tile_bytes;
    if (g.stream_blocks > 0)
      g.partial_bytes = std::max(g.tiles - g.whole_tiles, g.stream_blocks) * tile_bytes;
  }
  g.workspace_bytes = g.partial_bytes;
  // Operands written into the workspace for TMA follow the partial tiles, each on a 256-byte boundary, in
  // rows of whole kWorkspaceRowBytes.
  const auto next_offset = [&] { return (g.workspace_bytes + 255) / 256 * 256; };
  const auto row_units = [](int64_t units, int64_t unit_bytes) {
    const int64_t per_row = kWorkspaceRowBytes / unit_bytes;
    return (std::max<int64_t>(units, 1) + per_row - 1) / per_row * per_row;
  };
  if (g.splits_operands()) {
    g.parts_ld = row_units(problem.k, 4);
    g.parts_offset = next_offset();
    g.parts_b = 2 * problem.m * g.parts_ld;
    g.workspace_bytes = g.parts_offset + 2 * (problem.m + problem.n) * g.parts_ld * 4;
  }
  const bool copy_a = launch_.copy_a.evaluate(symbols.data()) != 0;
  const bool copy_b = launch_.copy_b.evaluate(symbols.data()) != 0;
  if ((copy_a || copy_b) && g.splits_operands()) {
    throw InvalidArgumentError(fmt::format(
        "{}: a config copies operands it also splits into parts: launch.copy_a and copy_b must be "
        "0 where k_products is 3",
        origin_));
  }
  const int64_t bytes = dtype_facts(problem.dtype).bytes;
  const auto copy = [&](bool wanted, int64_t rows, int64_t cols, int64_t& ld, int64_t& offset) {
    if (!wanted) return;
    ld = row_units(cols, bytes);
    offset = next_offset();
    g.workspace_bytes = offset + rows * ld * bytes;
    g.copy_bytes += rows * ld * bytes;
  };
  copy(copy_a, problem.a_rows(), problem.a_row_length(), g.copy_ld_a, g.copy_offset_a);
  copy(copy_b, problem.b_rows(), problem.b_row_length(), g.copy_ld_b, g.copy_offset_b);

  g.l2_streamed = launch_.l2_streamed.evaluate(symbols.data());
  if (g.l2_streamed < 0 || g.l2_streamed > 2) {
    throw InvalidArgumentError(
        fmt::format("{}: launch.l2_streamed is {}; it must be 0 (neither operand), 1 (B) or 2 (A)", origin_,
                    g.l2_streamed));
  }
  g.cluster = std::max<int64_t>(1, launch_.cluster.evaluate(symbols.data()));
  if (g.cluster > 1) {
    if (g.split_k > 1 || g.stream_blocks > 0) {
      throw InvalidArgumentError(fmt::format("{}: a config launched in clusters must not split K", origin_));
    }
    g.cluster_units = launch_.cluster_units.evaluate(symbols.data());
    g.cluster_shares = launch_.cluster_shares.evaluate(symbols.data());
    if (g.cluster_shares != 1 && g.cluster_shares != 2) {
      throw InvalidArgumentError(
          fmt::format("{}: launch.cluster_shares is {}; a config launched in clusters shares B (1) or A (2)",
                      origin_, g.cluster_shares));
    }
  }
  if (launch_.tma_box_a) {
    for (int i = 0; i < 2; ++i) {
      g.tma_box_a[i] = (*launch_.tma_box_a)[i].evaluate(symbols.data());
      g.tma_box_b[i] = (*launch_.tma_box_b)[i].evaluate(symbols.data());
      if (launch_.tma_box_c) g.tma_box_c[i] = (*launch_.tma_box_c)[i].evaluate(symbols.data());
    }
  }
  return g;
}

}  // namespace gemmforge
