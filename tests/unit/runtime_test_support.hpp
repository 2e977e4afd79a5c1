// Shared pieces of the runtime, query and C API unit tests: temporary folders, tuning results written
// with Database calls, devices with nominal limits, and running the gemmforge tool.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "support/temp_folder.hpp"

namespace gemmforge::testing {

/// A fresh folder under the test temp dir, removed with everything in it.
using test_support::TempFolder;

/// A GPU model with the nominal limits of its architecture, as a real card would be recorded.
inline DeviceInfo model(const std::string& name, const std::string& arch, const std::string& uuid) {
  DeviceInfo device = DeviceInfo::nominal(arch);
  device.name = name;
  device.uuid = uuid;
  return device;
}

/// A canonical problem with explicit alignments.
inline KernelProblem problem(int64_t m, int64_t n, int64_t k, const std::string& layout = "nn",
                             int align_a = 4, int align_b = 4, int align_c = 4) {
  KernelProblem p;
  parse_layout(layout, p.a_trans, p.b_trans);
  p.m = m, p.n = n, p.k = k;
  p.align_a = align_a, p.align_b = align_b, p.align_c = align_c;
  return p;
}

/// Seed `index` of a template with some parameters changed.
inline Config seed(size_t index, std::initializer_list<std::pair<const char*, int64_t>> changes = {},
                   const std::string& template_name = "sgemm_simt") {
  Config config = TemplateLibrary::instance().get(template_name).manifest.seeds().at(index);
  for (const auto& [name, value] : changes) config.set(name, value);
  return config;
}

/// Stores an ok trial (it becomes the best when it is the fastest of its problem); returns its id.
inline int64_t record(db::Database& database, int64_t device_id, const KernelProblem& p, const Config& config,
                      double ms, double cublas_ms = 0) {
  db::TrialRecord trial;
  trial.device_id = device_id;
  trial.problem = p;
  trial.template_name = config.template_name();
  trial.template_hash = TemplateLibrary::instance().get(config.template_name()).hash;
  trial.config_key = config.key();
  trial.time_median_ms = ms;
  trial.rel_error = 2.5e-7;  // verified, as every tuned ok trial is
  if (cublas_ms > 0) {
    trial.cublas_ms = cublas_ms;
    trial.ratio_vs_cublas = cublas_ms / ms;
  }
  return database.record_trial(trial);
}

/// Everything the database holds that an export carries, every trial included, without the time of
/// the export.
inline nlohmann::json contents(const db::Database& database) {
  nlohmann::json doc = db::export_json(database, {.device = std::nullopt, .all_trials = true});
  doc.erase("exported_at");
  return doc;
}

/// contents() without the times a device was seen, which an import sets to its own time.
inline nlohmann::json transferable_contents(const db::Database& database) {
  nlohmann::json doc = contents(database);
  for (nlohmann::json& device : doc["devices"]) {
    device.erase("first_seen");
    device.erase("last_seen");
  }
  return doc;
}

/// Exit status and everything a command printed (standard output and error together).
struct CommandResult {
  int status = -1;
  std::string output;
};

/// Runs a shell command line and waits for it.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer{};
  size_t read = 0;
  while ((read = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), read);
  const int status = pclose(pipe);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// The gemmforge tool of this build, quoted for a shell.
inline std::string gemmforge_tool() {
  return std::string("'") + GEMMFORGE_BINARY_DIR + "/bin/gemmforge'";
}

/// Folder of the test data files.
inline std::string test_data(const std::string& name) {
  return std::string(GEMMFORGE_SOURCE_DIR) + "/tests/data/" + name;
}

/// A file of tests/data's shipped results (shipped_h200.json; "": their folder) as results of this build:
/// the placeholder template hashes of the file replaced by the current sources', without which they would
/// be kept for the record but never served. The folder lives as long as the test process.
inline std::string current_results(const std::string& name = "") {
  static const TempFolder folder;
  static const bool written = [] {
    const std::string file = "shipped_h200.json";
    nlohmann::json document = nlohmann::json::parse(std::ifstream(test_data(file)));
    for (const char* list : {"results", "trials"}) {
      if (!document.contains(list)) continue;
      for (nlohmann::json& entry : document[list]) {
        entry["template_hash"] = TemplateLibrary::instance().get(entry["template"].get<std::string>()).hash;
      }
    }
    std::ofstream(folder.file(file)) << document.dump(1);
    return true;
  }();
  return written ? folder.file(name) : std::string();
}

}  // namespace gemmforge::testing
