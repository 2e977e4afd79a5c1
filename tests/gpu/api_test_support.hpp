// Shared pieces of the API GPU tests: a private database file, tuned results recorded for this GPU, and
// the C API's names of operations.
#pragma once

#include <cstdlib>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gemmforge/gemmforge.h"
#include "rtc/compiler.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_folder.hpp"

namespace gemmforge::testing {

/// A database file of its own for one test, in a folder removed with it (WAL files included).
class TempDatabase {
 public:
  const std::string& path() const { return path_; }

 private:
  test_support::TempFolder folder_;
  std::string path_ = folder_.file("gemmforge.db");
};

/// Records `config` as the tuned best of `problem` on the current GPU, as `gemmforge tune` would.
inline void record_tuned(const std::string& database_path, const KernelProblem& problem, const Config& config,
                         double ms = 1.0, double cublas_ms = 0) {
  int ordinal = 0;
  EXPECT_EQ(cudaGetDevice(&ordinal), cudaSuccess);
  DeviceInfo device = cuda::query_device(ordinal);
  device.nvrtc_version = rtc::nvrtc_version();
  db::Database database = db::Database::open(database_path);
  db::TrialRecord trial;
  trial.device_id = database.upsert_device(device);
  trial.problem = problem;
  trial.template_name = config.template_name();
  trial.template_hash = TemplateLibrary::instance().get(config.template_name()).hash;
  trial.config_key = config.key();
  trial.time_median_ms = ms;
  if (cublas_ms > 0) {
    trial.cublas_ms = cublas_ms;
    trial.ratio_vs_cublas = cublas_ms / ms;
  }
  database.record_trial(trial, db::BestUpdate::kAlways);
}

/// GEMMFORGE_VENDOR=0 while it lives: a handle created meanwhile serves generated kernels only.
class VendorOff {
  test_support::ScopedEnv vendor_{"GEMMFORGE_VENDOR", "0"};
};

/// Seed `index` of a template with some parameters changed.
inline Config seed_of(const std::string& template_name, size_t index,
                      std::initializer_list<std::pair<const char*, int64_t>> changes = {}) {
  Config config = TemplateLibrary::instance().get(template_name).manifest.seeds().at(index);
  for (const auto& [name, value] : changes) config.set(name, value);
  return config;
}

inline gemmforgeOperation_t capi_op(Op op) {
  return op == Op::kT ? GEMMFORGE_OP_T : GEMMFORGE_OP_N;
}

}  // namespace gemmforge::testing
