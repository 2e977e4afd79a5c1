// Shipped results: the embedded files and a folder of test exports are read with the validation of
// `gemmforge import`; a broken file is named in the error.
#include <gtest/gtest.h>

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/gzip.hpp"
#include "gemmforge/error.hpp"
#include "model/vendor_model.hpp"
#include "rtc/compiler.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/operand_passes.hpp"
#include "runtime/config_check.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime_test_support.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::testing {
namespace {

TEST(RuntimeShipped, EveryBuiltInDeviceShipsResultsAndTheirCuBlasTimes) {
  const runtime::ResultFiles files = runtime::builtin_result_files();
  runtime::ShippedResults shipped(files, "built-in results", TemplateLibrary::instance());
  if (files.empty()) EXPECT_TRUE(shipped.devices().empty());
  for (const DeviceInfo& device : shipped.devices()) {
    model::TrainingData data;
    shipped.add_measurements(device.cc(), TemplateLibrary::instance(), data);
    EXPECT_FALSE(data.kernels.empty()) << device.name << " ships no result";
    EXPECT_FALSE(data.vendor.empty()) << device.name << " ships no cuBLAS time";
  }
}

// The built-in exports list each problem's fastest cuBLAS time before their trials: the time the vendor
// model learns from the trials, known without them. Exports of format_version 1 know none.
TEST(RuntimeShipped, TheBuiltInExportsTellCublasFastestTimesAsTheModelLearnsThemFromTheTrials) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults shipped(runtime::builtin_result_files(), "built-in results", library);
  EXPECT_TRUE(shipped.knows_vendor_times());
  size_t compared = 0;
  for (const DeviceInfo& device : shipped.devices()) {
    model::TrainingData data;
    shipped.add_measurements(device.cc(), library, data);
    const model::VendorModel vendor(device, data);
    for (const auto& [where, result] : shipped.bests(device.cc())) {
      if (!same_gpu_model(where.name, device.name)) continue;
      const model::Prediction measured = vendor.predict(result.problem);
      ASSERT_EQ(measured.basis, model::Basis::kMeasured) << result.problem.to_string();
      EXPECT_EQ(shipped.vendor_ms(device, result.problem), measured.time_ms)
          << result.problem.to_string() << " on " << device.name;
      ++compared;
    }
  }
  EXPECT_GT(compared, 0u);
  runtime::ShippedResults version_1(runtime::result_files_in(current_results()), "tests/data", library);
  EXPECT_FALSE(version_1.knows_vendor_times());
}

// The built-in exports are embedded compressed, as db/tuned/ keeps them, and read as they inflate: the same
// results and trials as the folder's exports inflated first.
TEST(RuntimeShipped, TheBuiltInExportsStayCompressedAndReadAsTheirInflatedText) {
  const runtime::ResultFiles builtin = runtime::builtin_result_files();
  const runtime::ResultFiles folder =
      runtime::result_files_in(std::string(GEMMFORGE_SOURCE_DIR) + "/db/tuned");
  ASSERT_EQ(builtin.size(), folder.size());
  for (const auto& [name, bytes] : builtin) {
    ASSERT_EQ(folder.count(name), 1u) << name;
    if (name.size() > 5 && name.substr(name.size() - 5) == ".json") {
      EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f) << name << " is embedded inflated";
      EXPECT_EQ(gunzip(bytes, name), folder.at(name)) << name;
    }
  }
  const TemplateLibrary& library = TemplateLibrary::instance();
  const runtime::ShippedResults compressed(builtin, "built-in results", library);
  const runtime::ShippedResults inflated(folder, "db/tuned", library);
  EXPECT_EQ(compressed.results(), inflated.results());
  EXPECT_GT(compressed.trials(), compressed.results());
  EXPECT_EQ(compressed.trials(), inflated.trials());
}

// The results are read at once; the trials, which only the performance model and retunes read, when first
// asked for: a fault among them is named then, every time they are asked for, while the results serve.
TEST(RuntimeShipped, TheTrialsAreReadWhenFirstAskedForAndAFaultAmongThemIsNamedThen) {
  TempFolder folder;
  {
    nlohmann::json document = nlohmann::json::parse(std::ifstream(current_results("shipped_h200.json")));
    nlohmann::json trial = document["results"][1];
    trial["status"] = "ok";
    trial["reason"] = "";
    trial["template"] = "sgemm_gone";
    document["trials"] = nlohmann::json::array({trial});
    std::ofstream(folder.file("late.json")) << document.dump();
  }
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults shipped(runtime::result_files_in(folder.file("")), "shipped", library);
  ASSERT_EQ(shipped.results(), 3u);
  const DeviceInfo device = shipped.devices().front();
  EXPECT_EQ(shipped.exact(device, test_support::typed_problem(1024, 1024, 1024, "nn", "f32")).size(), 1u);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      model::TrainingData data;
      shipped.add_measurements(90, library, data);
      FAIL() << "a trial of an unknown template was accepted";
    } catch (const InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("shipped/late.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("sgemm_gone"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(shipped.trials(), InvalidArgumentError);
}

TEST(RuntimeShipped, ExactResultsAreTheBestsOfTheAskedGpuModel) {
  runtime::ShippedResults shipped(runtime::result_files_in(current_results()), "tests/data",
                                  TemplateLibrary::instance());
  ASSERT_EQ(shipped.results(), 3u);
  const std::vector<DeviceInfo> devices = shipped.devices();
  const auto h200 = std::find_if(devices.begin(), devices.end(),
                                 [](const DeviceInfo& d) { return d.name == "NVIDIA H200"; });
  ASSERT_NE(h200, devices.end());
  EXPECT_EQ(h200->sm_count, 132);
  model::TrainingData data;
  shipped.add_measurements(90, TemplateLibrary::instance(), data);
  ASSERT_EQ(data.kernels.size(), 3u);
  const KernelProblem asked = data.kernels.front().problem;
  DeviceInfo other_card = *h200;
  other_card.uuid = "GPU-another-h200";
  const std::vector<db::TrialRecord> exact = shipped.exact(other_card, asked);
  ASSERT_EQ(exact.size(), 1u);
  EXPECT_EQ(exact.front().problem, asked);
  DeviceInfo h100 = *h200;
  h100.name = "NVIDIA H100 80GB HBM3";
  EXPECT_TRUE(shipped.exact(h100, asked).empty()) << "another GPU model's result is no exact result";
}

// Results of a problem on cards of one model: the serving card's own first while it is within a few percent
// of the fastest (cards and runs differ by that much), else the fastest, wherever it was measured.
TEST(RuntimeShipped, TheFastestResultOfTheModelServesUnlessTheCardsOwnIsAsFast) {
  const auto result = [](const char* template_name, double ms) {
    db::TrialRecord r;
    r.template_name = template_name;
    r.time_median_ms = ms;
    return r;
  };
  const auto order = [](std::vector<std::pair<bool, db::TrialRecord>> results) {
    std::string names;
    for (const db::TrialRecord& r : runtime::order_exact_results(std::move(results)))
      names += r.template_name + " ";
    return names;
  };
  // Another card's result 2.5 times faster (a later tune) is served over the card's own.
  EXPECT_EQ(order({{true, result("own", 2.0)}, {false, result("other", 0.8)}}), "other own ");
  // The card's own result within 5% of the fastest comes first.
  EXPECT_EQ(order({{false, result("other", 1.00)}, {true, result("own", 1.04)}}), "own other ");
  EXPECT_EQ(order({{false, result("other", 1.00)}, {true, result("own", 1.06)}}), "other own ");
  // Among other cards, fastest first; a result without a time last.
  EXPECT_EQ(order({{false, result("b", 2.0)}, {false, db::TrialRecord{}}, {false, result("a", 1.0)}}),
            "a b  ");
}

// Every shipped best of an architecture with a bundle has its cubin under the key the runtime computes, so
// no problem served from shipped results waits for NVRTC. A change to a template changes the keys: then
// `gemmforge bundle --arch sm_90 -o db/tuned/sm_90.cubins` (from a build with the new results) makes the
// bundle anew.
TEST(RuntimeShipped, TheShippedBundleHoldsTheCubinOfEveryShippedBestOfItsArchitecture) {
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults shipped(runtime::builtin_result_files(), "built-in results", library);
  ASSERT_GT(shipped.cubins(), 0u) << "no cubin bundle ships with the results";
  for (const std::string& version : shipped.cubin_nvrtc_versions()) {
    if (version != rtc::nvrtc_version()) {
      GTEST_SKIP() << "the shipped cubins were compiled by NVRTC " << version << ", this build uses "
                   << rtc::nvrtc_version() << ": their keys cannot match here";
    }
  }
  size_t checked = 0, preparing = 0;
  for (const auto& [device, result] : shipped.bests(90)) {
    const std::optional<runtime::CheckedConfig> config =
        runtime::check_config(library, result.template_name, result.config_key, device, result.problem);
    ASSERT_TRUE(config) << result.template_name << " " << result.config_key;
    const rtc::KernelSpec spec =
        rtc::make_spec(*config->kernel_template, config->config, result.problem, device.arch(), &device);
    EXPECT_FALSE(shipped.cubin(spec.cubin_key(library)).empty())
        << "no shipped cubin for " << result.problem.to_string() << " on " << device.name << " ("
        << result.config_key << "): run gemmforge bundle --arch sm_90 -o db/tuned/sm_90.cubins";
    if (config->kernel_template->manifest.prepares_operands()) ++preparing;
    ++checked;
  }
  EXPECT_GE(checked, 12u);
  // The operand passes those kernels launch (a module of their own, rtc::OperandPasses) ship beside them.
  ASSERT_GT(preparing, 0u);
  EXPECT_FALSE(shipped.cubin(rtc::OperandPasses::cubin_key(library, "sm_90")).empty())
      << "no shipped cubin of the operand passes: run gemmforge bundle --arch sm_90 -o db/tuned/sm_90.cubins";
}

// A result measured with another source of its template (tests/data's placeholder hash) may name parameters
// and values this manifest no longer has: it is read, and its cuBLAS time counts, but it is never served,
// fitted or bundled.
TEST(RuntimeShipped, AResultOfAnotherTemplateSourceIsKeptButNeverServed) {
  TempFolder folder;
  {
    nlohmann::json document = nlohmann::json::parse(std::ifstream(test_data("shipped_h200.json")));
    ASSERT_NE(document["results"][0]["template_hash"], TemplateLibrary::instance().get("sgemm_simt").hash);
    document["results"][0]["config"] = "BM=3,BN=5";  // outside every domain of today's sgemm_simt
    std::ofstream(folder.file("old.json")) << document.dump();
  }
  runtime::ShippedResults shipped(runtime::result_files_in(folder.file("")), "shipped",
                                  TemplateLibrary::instance());
  ASSERT_EQ(shipped.results(), 3u);
  model::TrainingData data;
  shipped.add_measurements(90, TemplateLibrary::instance(), data);
  EXPECT_TRUE(data.kernels.empty());
  EXPECT_EQ(data.vendor.size(), 3u);
  EXPECT_TRUE(shipped.bests(90).empty());
  for (const DeviceInfo& device : shipped.devices()) {
    for (const model::VendorMeasurement& v : data.vendor)
      EXPECT_TRUE(shipped.exact(device, v.problem).empty()) << v.problem.to_string();
  }
}

// Those results are where a retune starts: the fastest configs of each template a problem ran with an
// earlier source, where today's manifest still reads them.
TEST(RuntimeShipped, AResultOfAnotherTemplateSourceIsWhereARetuneStarts) {
  TempFolder folder;
  {
    nlohmann::json document = nlohmann::json::parse(std::ifstream(test_data("shipped_h200.json")));
    document["results"][0]["config"] = "BM=3,BN=5";  // unreadable today
    // A second, slower trial of the second result's problem, and a third config the limit leaves out.
    nlohmann::json slower = document["results"][1];
    slower["config"] =
        "BM=32,BN=32,BK=8,WM=16,WN=16,TM=4,TN=4,STAGES=2,VEC_A=4,VEC_B=4,XPOSE_A=1,XPOSE_B=1,"
        "UNROLL_K=2,MIN_BLOCKS=2,SPLIT_K=1,RASTER=1";
    // A measurement of `ms`, its other figures agreeing, as an import checks.
    const auto timed = [](nlohmann::json& trial, double ms) {
      nlohmann::json& m = trial["measurement"];
      m["time_min_ms"] = m["time_median_ms"] = ms;
      m["time_max_ms"] = ms * 1.1;
      m["tflops"] = 2.0 * 1024 * 1024 * 1024 / (ms * 1e-3) / 1e12;
      m["ratio_vs_cublas"] = m["cublas_ms"].get<double>() / ms;
    };
    timed(slower, 0.5);
    slower["status"] = "ok";
    slower["reason"] = "";
    nlohmann::json slowest = slower;
    slowest["config"] =
        "BM=64,BN=64,BK=8,WM=32,WN=32,TM=8,TN=4,STAGES=2,VEC_A=4,VEC_B=4,XPOSE_A=1,XPOSE_B=1,"
        "UNROLL_K=2,MIN_BLOCKS=1,SPLIT_K=1,RASTER=1";
    timed(slowest, 0.9);
    document["trials"] = nlohmann::json::array({slowest, slower});
    std::ofstream(folder.file("old.json")) << document.dump();
  }
  const TemplateLibrary& library = TemplateLibrary::instance();
  runtime::ShippedResults shipped(runtime::result_files_in(folder.file("")), "shipped", library);
  const DeviceInfo device = shipped.devices().front();
  const KernelProblem square = test_support::typed_problem(1024, 1024, 1024, "nn", "f32");
  ASSERT_TRUE(shipped.exact(device, square).empty());
  const std::vector<Config> starts = shipped.retired(device, square, library, 2);
  ASSERT_EQ(starts.size(), 2u);
  EXPECT_EQ(starts[0].at("BM"), 64);  // the result, 0.09 ms
  EXPECT_EQ(starts[0].at("UNROLL_K"), 4);
  EXPECT_EQ(starts[1].at("BM"), 32);  // 0.5 ms; the 0.9 ms trial is past the limit
  EXPECT_EQ(shipped.retired(device, square, library, 3).size(), 3u);
  // Another GPU model, or a config the manifest no longer reads, starts nothing.
  DeviceInfo other = device;
  other.name = "NVIDIA A100-SXM4-80GB";
  EXPECT_TRUE(shipped.retired(other, square, library, 2).empty());
  EXPECT_TRUE(shipped.retired(device, test_support::typed_problem(4096, 4096, 4096, "nn", "f32"), library, 2)
                  .empty());
}

// Shipped exports are kept gzip-compressed: a folder of results reads NAME.json.gz (here in two gzip
// members, as `cat a.gz b.gz` makes) as NAME.json, refuses an export it holds both ways, and names a file
// whose data is cut short or is not gzip.
TEST(RuntimeShipped, AFolderReadsExportsKeptGzipCompressed) {
  TempFolder folder;
  std::ifstream in(test_data("shipped_h200.json"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string gz = folder.file("h200.json.gz");
  const size_t half = text.size() / 2;
  for (const auto& [mode, part] :
       {std::pair{"wb9", text.substr(0, half)}, std::pair{"ab9", text.substr(half)}}) {
    gzFile out = gzopen(gz.c_str(), mode);
    ASSERT_NE(out, nullptr);
    ASSERT_EQ(gzwrite(out, part.data(), static_cast<unsigned>(part.size())), static_cast<int>(part.size()));
    ASSERT_EQ(gzclose(out), Z_OK);
  }
  const runtime::ResultFiles files = runtime::result_files_in(folder.file(""));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files.at("h200.json"), text);
  EXPECT_EQ(runtime::ShippedResults(files, "shipped", TemplateLibrary::instance()).results(), 3u);

  std::ofstream(folder.file("h200.json")) << text;
  try {
    runtime::result_files_in(folder.file(""));
    FAIL() << "an export held both compressed and not was read";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("h200.json both compressed and not"), std::string::npos) << e.what();
  }
  std::filesystem::remove(folder.file("h200.json"));

  std::string bytes;
  {
    std::ifstream packed(gz, std::ios::binary);
    bytes.assign((std::istreambuf_iterator<char>(packed)), std::istreambuf_iterator<char>());
  }
  std::ofstream(gz, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 4);
  try {
    runtime::result_files_in(folder.file(""));
    FAIL() << "a truncated gzip file was read";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("h200.json.gz: the gzip data ends early"), std::string::npos)
        << e.what();
  }
  std::ofstream(gz, std::ios::binary | std::ios::trunc) << text;
  try {
    runtime::result_files_in(folder.file(""));
    FAIL() << "a file that is not gzip was read";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("h200.json.gz: not gzip data"), std::string::npos) << e.what();
  }
}

TEST(RuntimeShipped, ABrokenFileIsNamedAndRejected) {
  TempFolder folder;
  {
    std::ifstream in(test_data("shipped_h200.json"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("\"sgemm_simt\""), 12, "\"sgemm_gone\"");
    std::ofstream(folder.file("bad.json")) << text;
  }
  try {
    runtime::ShippedResults(runtime::result_files_in(folder.file("")), "shipped",
                            TemplateLibrary::instance());
    FAIL() << "a result of an unknown template was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("shipped/bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sgemm_gone"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runtime::result_files_in(folder.file("missing")), NotFoundError);
}

}  // namespace
}  // namespace gemmforge::testing
