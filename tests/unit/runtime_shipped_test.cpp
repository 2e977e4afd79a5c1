// Shipped results: the embedded files and a folder of test exports load through the same import as
// `gemmforge import`, validated against the manifests; a broken file is named in the error.
#include <gtest/gtest.h>

#include <fstream>

#include "gemmforge/error.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

TEST(RuntimeShipped, BuiltInResultsLoadWhateverTheirNumber) {
  const runtime::ResultFiles files = runtime::builtin_result_files();
  const db::Database database = runtime::load_results(files, "built-in results", TemplateLibrary::instance());
  if (files.empty()) EXPECT_TRUE(database.devices().empty());
  for (const db::DeviceRecord& device : database.devices()) {
    EXPECT_FALSE(database.best_for_device(device.id).empty()) << device.info.name << " ships no result";
  }
}

TEST(RuntimeShipped, TestExportsLoadThroughTheShippedPath) {
  const runtime::ResultFiles files = runtime::result_files_in(test_data(""));
  ASSERT_EQ(files.count("shipped_h200.json"), 1u);
  const db::Database database = runtime::load_results(files, "tests/data", TemplateLibrary::instance());
  const std::vector<db::TrialRecord> h200 = database.best_for_model("nvidia h200");
  ASSERT_EQ(h200.size(), 3u);
  EXPECT_EQ(database.find_device("NVIDIA H200")->info.sm_count, 132);
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
    runtime::load_results(runtime::result_files_in(folder.file("")), "shipped", TemplateLibrary::instance());
    FAIL() << "a result of an unknown template was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("shipped/bad.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("sgemm_gone"), std::string::npos) << e.what();
  }
  EXPECT_THROW(runtime::result_files_in(folder.file("missing")), NotFoundError);
}

}  // namespace
}  // namespace gemmforge::testing
