// Large, valid gemmforge exports written straight as text, for tests of imports and exports at scale: one
// H200-like device, many problems, several verified trials of real sgemm_simt configs per problem.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "runtime/config_check.hpp"

namespace gemmforge::test_support {

struct GeneratedExport {
  uint64_t bytes = 0;
  int64_t results = 0;
  int64_t trials = 0;
};

inline constexpr const char* kGeneratedDevice = "GPU-5ca1ab1e-0000-4000-8000-0000000b16e7";

/// Problem `i` of a generated export: distinct for every i, aligned, so that every config used is valid.
inline KernelProblem generated_problem(int64_t i) {
  KernelProblem p;
  p.m = 64 * (1 + i % 2048);
  p.n = 64 * (1 + (i / 2048) % 2048);
  p.k = 512 + 64 * (i / (2048 * 2048));
  return p;
}

/// Writes an export of `problems` problems, generated_problem(first) onwards, with `configs_per_problem` ok
/// trials each (every trial in "trials", the fastest of each problem in "results").
inline GeneratedExport write_generated_export(const std::string& path, int64_t problems,
                                              int configs_per_problem, int64_t first = 0) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& simt = library.get("sgemm_simt");
  const db::ConfigValidator validate = runtime::manifest_validator(library);
  // Seeds valid for every generated problem: checked on the extremes of the family.
  std::vector<std::string> configs;
  for (const Config& seed : simt.manifest.seeds()) {
    try {
      for (int64_t i : {first, first + 2047, first + problems - 1}) {
        validate("sgemm_simt", simt.hash, seed.key(), generated_problem(i));
      }
      configs.push_back(seed.key());
    } catch (const std::exception&) {
    }
    if (static_cast<int>(configs.size()) == configs_per_problem) break;
  }
  if (static_cast<int>(configs.size()) < configs_per_problem)
    throw std::runtime_error("not enough valid seeds");

  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (out == nullptr) throw std::runtime_error("cannot write " + path);
  GeneratedExport made;
  auto write = [&](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), out);
    made.bytes += text.size();
  };
  write(fmt::format(
      "{{\"format\": \"gemmforge-tuning\", \"format_version\": 1, \"gemmforge_version\": \"0.1.0\", "
      "\"exported_at\": \"2025-06-01T00:00:00.000Z\",\n\"devices\": [\n"
      "{{\"uuid\":\"{}\",\"name\":\"NVIDIA "
      "H200\",\"pci_bus_id\":\"0000:19:00.0\",\"memory_bytes\":150754820096,"
      "\"nvrtc_version\":\"13.0\",\"cc_major\":9,\"cc_minor\":0,\"sm_count\":132,\"smem_per_block\":49152,"
      "\"smem_per_block_optin\":232448,\"smem_per_sm\":233472,\"regs_per_block\":65536,\"regs_per_sm\":65536,"
      "\"max_threads_per_block\":1024,\"max_threads_per_sm\":2048,\"max_blocks_per_sm\":32,\"warp_size\":32,"
      "\"l2_bytes\":62914560,\"clock_khz\":1980000,\"memory_clock_khz\":3201000,\"memory_bus_width\":6144,"
      "\"driver_version\":13000,\"runtime_version\":13000,\"first_seen\":\"2025-06-01T00:00:00.000Z\","
      "\"last_seen\":\"2025-06-01T00:00:00.000Z\"}}\n]",
      kGeneratedDevice));
  // The rate of config c on problem i, 10..60 TFLOP/s: times that differ per config and suit the problem's
  // size, every value consistent with them.
  auto rate = [](int64_t i, int c) {
    return 10.0 + static_cast<double>((i * 7919 + c * 104729) % 100000) / 2000.0;
  };
  auto entry = [&](int64_t i, int c, bool with_status) {
    const KernelProblem p = generated_problem(i);
    const double t = p.flops() / (rate(i, c) * 1e9);
    const double cublas = t * 1.0625;
    std::string text = fmt::format(
        "{{\"device\":\"{}\",\"problem\":{{\"dtype\":\"f32\",\"layout\":\"nn\",\"m\":{},\"n\":{},\"k\":{},"
        "\"align_a\":4,\"align_b\":4,\"align_c\":4}},\"template\":\"sgemm_simt\",\"template_hash\":\"{}\","
        "\"config\":\"{}\",\"measurement\":{{\"time_median_ms\":{},\"time_min_ms\":{},\"time_max_ms\":{},"
        "\"repetitions\":50,\"cublas_ms\":{},\"tflops\":{},\"ratio_vs_cublas\":{},\"registers\":96,"
        "\"smem_bytes\":24576,\"spill_bytes\":0,\"occupancy_blocks\":2,\"occupancy_pct\":25.0,"
        "\"compile_ms\":250.5,\"rel_error\":3.1e-07}},\"created_at\":\"2025-06-01T00:00:00.000Z\","
        "\"gemmforge_version\":\"0.1.0\"",
        kGeneratedDevice, p.m, p.n, p.k, simt.hash, configs[c], t, t * 0.97, t * 1.1, cublas,
        p.flops() / (t * 1e9), cublas / t);
    if (with_status) text += ",\"status\":\"ok\",\"reason\":\"\"";
    return text + "}";
  };
  auto fastest = [&](int64_t i) {
    int best = 0;
    for (int c = 1; c < configs_per_problem; ++c) {
      if (rate(i, c) > rate(i, best)) best = c;
    }
    return best;
  };
  write(",\n\"results\": [");
  for (int64_t i = first; i < first + problems; ++i) {
    write((i == first ? "\n" : ",\n") + entry(i, fastest(i), false));
    ++made.results;
  }
  write("\n],\n\"trials\": [");
  for (int64_t i = first; i < first + problems; ++i) {
    for (int c = 0; c < configs_per_problem; ++c) {
      write((made.trials == 0 ? "\n" : ",\n") + entry(i, c, true));
      ++made.trials;
    }
  }
  write("\n]}\n");
  if (std::fclose(out) != 0) throw std::runtime_error("cannot write " + path);
  return made;
}

}  // namespace gemmforge::test_support
