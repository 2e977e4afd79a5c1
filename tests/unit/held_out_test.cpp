// Held-out discipline: the problems of the held-out files are never tuned and never fitted. None of them is
// a problem of a training file, and the data the performance model is fitted on (every trial and cuBLAS
// time of the shipped results) holds none of them. Problems compare as the tuner stores them (canonical,
// column-major), by element size, layout and shape: a held-out BF16 problem tuned in FP16 would leak too.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "core/dtype.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "model/training_data.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

struct ShapesFile {
  const char* name;
  const char* dtype;  // the type its problems are tuned or benched in (its family's other type alike)
};

constexpr ShapesFile kTraining[] = {{"fp32-suite.txt", "f32"},
                                    {"fp32-train.txt", "f32"},
                                    {"half-suite.txt", "bf16"},
                                    {"half-pitch-train.txt", "bf16"}};
constexpr ShapesFile kHeldOut[] = {
    {"fp32-holdout.txt", "f32"}, {"half-holdout.txt", "bf16"}, {"half-pitch.txt", "bf16"}};
// Files for quick checks and for timing tuning runs, whose results are not shipped.
constexpr const char* kNeither[] = {"smoke.txt", "fp32-large.txt"};

// "2 nn 4096x4096x4104": element bytes, layout and shape of a canonical problem.
std::string key(int element_bytes, const std::string& layout, const std::string& shape) {
  return std::to_string(element_bytes) + " " + layout + " " + shape;
}

// The canonical problems of a shapes file, as `gemmforge tune --print-problems` lists them
// ("bf16 nn 3000x3000x3000 align 8/8/8"), by key.
std::set<std::string> problems_of(const ShapesFile& file) {
  const CommandResult listed =
      run_command(gemmforge_tool() + " tune --print-problems --shapes '" + GEMMFORGE_SOURCE_DIR + "/shapes/" +
                  file.name + "' --dtype " + file.dtype);
  EXPECT_EQ(listed.status, 0) << file.name << ": " << listed.output;
  std::set<std::string> keys;
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string type, layout, shape;
    words >> type >> layout >> shape;
    Dtype dtype{};
    Dtype c_dtype{};
    parse_type_name(type, dtype, c_dtype);
    keys.insert(key(element_bytes(dtype), layout, shape));
  }
  EXPECT_FALSE(keys.empty()) << file.name << " lists no problem";
  return keys;
}

std::string key_of(const KernelProblem& problem) {
  return key(element_bytes(problem.dtype), problem.layout(), problem.shape());
}

TEST(HeldOut, EveryShapesFileIsTrainingHeldOutOrNeither) {
  std::set<std::string> known(std::begin(kNeither), std::end(kNeither));
  for (const ShapesFile& file : kTraining) known.insert(file.name);
  for (const ShapesFile& file : kHeldOut) known.insert(file.name);
  size_t files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(GEMMFORGE_SOURCE_DIR) + "/shapes")) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    EXPECT_EQ(known.count(entry.path().filename().string()), 1u)
        << "shapes/" << entry.path().filename().string()
        << " is neither training nor held out: add it to this test's lists";
  }
  EXPECT_EQ(files, known.size()) << "a file this test lists is not in shapes/";
}

TEST(HeldOut, NoHeldOutProblemIsATrainingProblem) {
  std::set<std::string> training;
  for (const ShapesFile& file : kTraining) training.merge(problems_of(file));
  for (const ShapesFile& file : kHeldOut) {
    for (const std::string& problem : problems_of(file)) {
      EXPECT_EQ(training.count(problem), 0u) << file.name << ": " << problem << " is a training problem too";
    }
  }
}

TEST(HeldOut, TheShippedResultsHoldNoHeldOutProblem) {
  std::set<std::string> held_out;
  for (const ShapesFile& file : kHeldOut) held_out.merge(problems_of(file));
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults shipped(runtime::builtin_result_files(), "built-in results", library);
  if (shipped.devices().empty()) GTEST_SKIP() << "this build ships no results (db/tuned/ held none)";
  std::set<int> capabilities;
  for (const DeviceInfo& device : shipped.devices()) capabilities.insert(device.cc());
  model::TrainingData data;
  for (int cc : capabilities) shipped.add_measurements(cc, library, data);
  std::set<std::string> leaked;  // "NVIDIA H200: bf16 nn 4104x4104x4104 align 8/8/8"
  const auto check = [&](const KernelProblem& problem, size_t device) {
    if (held_out.count(key_of(problem)) > 0) {
      leaked.insert(data.devices[device].name + ": " + problem.to_string());
    }
  };
  for (const model::KernelMeasurement& kernel : data.kernels) check(kernel.problem, kernel.device);
  for (const model::VendorMeasurement& vendor : data.vendor) check(vendor.problem, vendor.device);
  const size_t measurements = data.kernels.size() + data.vendor.size();
  std::string listed;
  for (const std::string& problem : leaked) listed += "\n  " + problem;
  EXPECT_TRUE(leaked.empty()) << "the shipped results measure held-out problems:" << listed;
  EXPECT_GT(measurements, 0u);
}

}  // namespace
}  // namespace gemmforge::testing
