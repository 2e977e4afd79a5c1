// SYNTHETIC trial tables, for developing and testing the search strategies until tables recorded on a GPU
// are committed under tests/data/replay/. Times come from a plausible cost model with noise, NOT from
// measurements; the document has the format of the recorded ones (a gemmforge export with all trials),
// so it takes the same path through load_recorded_tables().
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <vector>

#include "core/template_library.hpp"
#include "tuner/candidate_table.hpp"
#include "tuner/rng.hpp"
#include "tuner/search.hpp"
#include "core/space.hpp"

namespace gemmforge::tuner::synthetic {

/// One synthetic exhaustive run: a problem, the templates recorded with the parameters pinned for it.
struct SyntheticRun {
  KernelProblem problem;
  std::map<std::string, Pins> pins;  ///< per template name; templates not listed are not recorded
};

/// The device synthetic tables claim to come from: nominal sm_90 limits under a name saying what it is.
inline DeviceInfo synthetic_device() {
  DeviceInfo device = DeviceInfo::nominal("sm_90");
  device.name = "SYNTHETIC nominal sm_90";
  device.uuid = "model:" + device.name;  // known only by its (made-up) model
  return device;
}

namespace detail {

inline uint64_t name_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

inline double normal(Rng& rng) {
  const double u = std::max(rng.uniform(), 1e-12);
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * rng.uniform());
}

// The hidden truth of one template: what the search has to find out.
struct TemplateTruth {
  double speed = 1;                               // FMA throughput against plain FP32
  double register_factor = 1;                     // compiled registers over the manifest's estimate
  std::vector<std::vector<double>> level_effect;  // per parameter and level: a factor on time
  struct Interaction {
    size_t p, q;
    std::vector<std::vector<double>> effect;  // per level of p and of q
  };
  std::vector<Interaction> interactions;
};

inline TemplateTruth make_truth(const Manifest& manifest, uint64_t seed) {
  Rng rng(seed ^ name_hash(manifest.name()));
  TemplateTruth truth;
  truth.speed = std::exp(0.3 * normal(rng));
  truth.register_factor = 0.9 + 0.4 * rng.uniform();
  const auto& parameters = manifest.parameters();
  for (const Parameter& p : parameters) {
    std::vector<double> effects;
    for (size_t l = 0; l < p.values.size(); ++l) effects.push_back(std::exp(0.06 * normal(rng)));
    truth.level_effect.push_back(std::move(effects));
  }
  for (int i = 0; i < 4 && parameters.size() > 1; ++i) {
    TemplateTruth::Interaction interaction;
    interaction.p = rng.below(parameters.size());
    do interaction.q = rng.below(parameters.size());
    while (interaction.q == interaction.p);
    for (size_t a = 0; a < parameters[interaction.p].values.size(); ++a) {
      std::vector<double> row;
      for (size_t b = 0; b < parameters[interaction.q].values.size(); ++b)
        row.push_back(std::exp(0.05 * normal(rng)));
      interaction.effect.push_back(std::move(row));
    }
    truth.interactions.push_back(std::move(interaction));
  }
  return truth;
}

struct SyntheticTrial {
  std::string status = "ok";
  double time_ms = 0;
  int64_t registers = 0;
  int64_t occupancy_blocks = 0;
};

// A cost model written apart from the strategy's (other constants, other tail and latency rules), so
// that the strategy has something to learn: roofline of the tile against L2, latency hiding by resident
// warps, accumulators per thread, whole waves, serial split-K and stream-K, plus hidden per-value
// effects, interactions and noise.
inline SyntheticTrial simulate(const DeviceInfo& device, const Footprint& f, const TemplateTruth& truth,
                               const uint8_t* levels, Rng& noise) {
  SyntheticTrial t;
  t.registers = std::min<int64_t>(255, std::lround(f.est_regs * truth.register_factor));
  if (f.est_regs * truth.register_factor > 255) {
    t.status = "spills";
    return t;
  }
  if (t.registers * f.threads > device.regs_per_sm) {
    t.status = "launch_error";
    return t;
  }
  const int64_t blocks_per_sm =
      std::min({int64_t{device.max_blocks_per_sm}, device.max_threads_per_sm / f.threads,
                device.regs_per_sm / (t.registers * f.threads), device.smem_per_sm / (f.smem_bytes + 1024)});
  if (blocks_per_sm == 0) {
    t.status = "launch_error";
    return t;
  }
  if (noise.uniform() < 0.02) {
    t.status = noise.uniform() < 0.5 ? "compile_error" : "wrong_result";
    return t;
  }
  t.occupancy_blocks = blocks_per_sm;
  const double sm_flops_per_ms = 2.0 * 128 * device.clock_khz * truth.speed;
  const double warps = static_cast<double>(blocks_per_sm * ((f.threads + 31) / 32));
  const double hiding = warps / (warps + 3.0);
  const double accumulators = static_cast<double>(f.tile_m * f.tile_n) / f.threads;
  const double issue = accumulators / (accumulators + 6.0);
  // Whole waves of `blocks` blocks, each summing k_extent of K.
  const auto phase_ms = [&](int64_t blocks, int64_t k_extent) {
    const double flops = 2.0 * f.tile_m * f.tile_n * k_extent;
    const double bytes = 4.0 * (f.tile_m + f.tile_n) * k_extent;
    const double block_ms = std::max(blocks_per_sm * flops / (sm_flops_per_ms * hiding * issue),
                                     blocks_per_sm * bytes / (sm_flops_per_ms / truth.speed * 0.08));
    const int64_t slots = blocks_per_sm * device.sm_count;
    return std::ceil(static_cast<double>(blocks) / slots) * (block_ms + 0.001);
  };
  double ms = 0.004;
  if (f.stream_blocks > 0) {
    const int64_t streamed = f.tiles - f.whole_tiles;
    ms += phase_ms(f.whole_tiles, f.k_per_split) + phase_ms(f.stream_blocks, f.stream_k) +
          0.003 * static_cast<double>(f.stream_blocks) / streamed;
  } else {
    ms += phase_ms(f.tiles * f.split_k, f.k_per_split) +
          (f.parallel_split ? 0.004 + 0.0002 * f.split_k : (f.split_k - 1) * 0.003);
  }
  for (size_t p = 0; p < truth.level_effect.size(); ++p) ms *= truth.level_effect[p][levels[p]];
  for (const auto& i : truth.interactions) ms *= i.effect[levels[i.p]][levels[i.q]];
  t.time_ms = ms * std::exp(0.01 * normal(noise));
  return t;
}

inline nlohmann::json problem_json(const KernelProblem& p) {
  return {{"dtype", "f32"},
          {"layout", p.layout()},
          {"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"align_a", p.align_a},
          {"align_b", p.align_b},
          {"align_c", p.align_c}};
}

}  // namespace detail

/// Five problems of different shapes (square, transposed B, few tiles, skinny, ragged and unaligned),
/// each over a pinned sub-space of a few hundred configs of two templates, as the recorded tables are.
inline std::vector<SyntheticRun> standard_runs() {
  const auto problem = [](int64_t m, int64_t n, int64_t k, const char* layout, int align) {
    KernelProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    parse_layout(layout, p.a_trans, p.b_trans);
    p.align_a = p.align_b = p.align_c = align;
    return p;
  };
  const auto pins = [](std::initializer_list<const char*> texts) {
    Pins out;
    for (const char* text : texts) add_pin(out, text);
    return out;
  };
  const Pins simt = pins({"STAGES=3", "MIN_BLOCKS=1", "BK=16", "UNROLL_K=4", "TM=8", "TN=8"});
  const Pins tf32 = pins({"MIN_BLOCKS=1", "BK=32", "STAGES=3", "FOLD_K=8"});
  return {
      {problem(4096, 4096, 4096, "nn", 4), {{"sgemm_simt", simt}, {"sgemm_tf32x3", tf32}}},
      {problem(1024, 1024, 8192, "nt", 4), {{"sgemm_simt", simt}, {"sgemm_tf32x3", tf32}}},
      {problem(256, 256, 16384, "nn", 4), {{"sgemm_simt", simt}, {"sgemm_tf32x3", tf32}}},
      {problem(32, 4096, 4096, "nn", 4),
       {{"sgemm_skinny", pins({"STAGES=3", "KT=4"})}, {"sgemm_tf32x3", tf32}}},
      {problem(127, 1000, 513, "tn", 1), {{"sgemm_simt", simt}, {"sgemm_tf32x3", tf32}}},
  };
}

/// A gemmforge export (format_version 1, with all trials) of synthetic exhaustive runs, marked by its
/// gemmforge_version "synthetic". The same seed gives the same document.
inline nlohmann::json synthetic_export(const TemplateLibrary& library, const std::vector<SyntheticRun>& runs,
                                       uint64_t seed) {
  const DeviceInfo device = synthetic_device();
  nlohmann::json results = nlohmann::json::array(), trials = nlohmann::json::array();
  Rng noise(seed);
  for (const SyntheticRun& run : runs) {
    std::vector<Space> spaces;
    for (const auto& [name, pins] : run.pins)
      spaces.push_back(Space::build(library.get(name), device, run.problem, pins));
    const SearchSpace space(std::move(spaces), device, run.problem);
    const CandidateTable table(space);
    std::vector<detail::TemplateTruth> truths;
    for (const Space& s : space.spaces())
      truths.push_back(detail::make_truth(s.kernel_template().manifest, seed));
    nlohmann::json best;
    for (size_t c = 0; c < space.size(); ++c) {
      const Space& template_space = space.space(c);
      const detail::SyntheticTrial t =
          detail::simulate(device, table.footprint(c), truths[space.space_of(c)], table.levels(c), noise);
      const bool ok = t.status == "ok";
      nlohmann::json measurement = {{"registers", t.registers}};
      if (ok) {
        measurement["time_median_ms"] = t.time_ms;
        measurement["time_min_ms"] = 0.98 * t.time_ms;
        measurement["time_max_ms"] = 1.05 * t.time_ms;
        measurement["repetitions"] = 50;
        measurement["tflops"] = run.problem.flops() / (t.time_ms * 1e9);
        measurement["occupancy_blocks"] = t.occupancy_blocks;
        measurement["smem_bytes"] = table.footprint(c).smem_bytes;
      }
      nlohmann::json trial = {{"device", device.uuid},
                              {"problem", detail::problem_json(run.problem)},
                              {"template", template_space.kernel_template().manifest.name()},
                              {"template_hash", template_space.kernel_template().hash},
                              {"config", space.config(c).key()},
                              {"status", t.status},
                              {"reason", ok ? "" : "synthetic failure"},
                              {"measurement", measurement}};
      if (ok && (best.is_null() || t.time_ms < best["measurement"]["time_median_ms"].get<double>()))
        best = trial;
      trials.push_back(std::move(trial));
    }
    if (!best.is_null()) {
      best.erase("status");
      best.erase("reason");
      results.push_back(std::move(best));
    }
  }
  nlohmann::json device_json = {{"uuid", device.uuid},
                                {"name", device.name},
                                {"cc_major", device.cc_major},
                                {"cc_minor", device.cc_minor},
                                {"sm_count", device.sm_count},
                                {"smem_per_block", device.smem_per_block},
                                {"smem_per_block_optin", device.smem_per_block_optin},
                                {"smem_per_sm", device.smem_per_sm},
                                {"regs_per_block", device.regs_per_block},
                                {"regs_per_sm", device.regs_per_sm},
                                {"max_threads_per_block", device.max_threads_per_block},
                                {"max_threads_per_sm", device.max_threads_per_sm},
                                {"max_blocks_per_sm", device.max_blocks_per_sm},
                                {"warp_size", device.warp_size},
                                {"l2_bytes", device.l2_bytes},
                                {"clock_khz", device.clock_khz}};
  return {{"format", "gemmforge-tuning"},
          {"format_version", 1},
          {"gemmforge_version", "synthetic"},
          {"exported_at", "2025-01-01T00:00:00.000Z"},
          {"devices", nlohmann::json::array({device_json})},
          {"results", std::move(results)},
          {"trials", std::move(trials)}};
}

}  // namespace gemmforge::tuner::synthetic
