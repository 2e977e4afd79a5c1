// `query --device-name`: a GPU model resolved without the GPU, from a database row (real limits), the
// shipped results, or the nominal limits of a known model's architecture.
#include <gtest/gtest.h>

#include "gemmforge/error.hpp"
#include "runtime/model_lookup.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime/tuned_source.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

using runtime::SharedDatabase;
using runtime::TunedSource;

TEST(QueryModel, KnownModelNamesMapToTheirArchitecture) {
  EXPECT_EQ(runtime::known_model_arch("NVIDIA H100 80GB HBM3"), "sm_90");
  EXPECT_EQ(runtime::known_model_arch("NVIDIA H200"), "sm_90");
  EXPECT_EQ(runtime::known_model_arch("nvidia gh200 480gb"), "sm_90");
  EXPECT_EQ(runtime::known_model_arch("NVIDIA A100-SXM4-40GB"), "sm_80");
  EXPECT_EQ(runtime::known_model_arch("NVIDIA A10"), "sm_86");
  EXPECT_EQ(runtime::known_model_arch("NVIDIA L40S"), "sm_89");
  EXPECT_EQ(runtime::known_model_arch("NVIDIA L4"), "sm_89");
  EXPECT_EQ(runtime::known_model_arch("Radeon Instinct MI300X"), std::nullopt);
}

class QueryModelLookup : public ::testing::Test {
 protected:
  SharedDatabase user_db_{db::Database::open(":memory:")};
  TunedSource user_{user_db_, "test database"};
  runtime::ShippedResults shipped_{runtime::result_files_in(current_results()), "tests/data",
                                   TemplateLibrary::instance()};
};

TEST_F(QueryModelLookup, ARecordedDeviceGivesItsRealLimits) {
  DeviceInfo l40s = model("NVIDIA L40S", "sm_89", "GPU-l40s");
  l40s.sm_count = 142;
  user_db_.with([&](db::Database& d) { return d.upsert_device(l40s); });
  const runtime::ModelDevice found = runtime::model_device("L40S", &user_, shipped_);
  EXPECT_EQ(found.info.name, "NVIDIA L40S");
  EXPECT_EQ(found.info.sm_count, 142);
  EXPECT_EQ(found.origin, "test database");
}

TEST_F(QueryModelLookup, TheShippedResultsKnowTheirModels) {
  const runtime::ModelDevice found = runtime::model_device("h200", &user_, shipped_);
  EXPECT_EQ(found.info.name, "NVIDIA H200");
  EXPECT_EQ(found.info.smem_per_block_optin, 232448);
  EXPECT_EQ(found.origin, "shipped results");
}

TEST_F(QueryModelLookup, AKnownModelFallsBackToNominalLimits) {
  const runtime::ModelDevice found = runtime::model_device("NVIDIA A100-SXM4-80GB", nullptr, shipped_);
  EXPECT_EQ(found.info.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(found.info.arch(), "sm_80");
  EXPECT_EQ(found.origin, "nominal sm_80 limits");
}

TEST_F(QueryModelLookup, UnknownOrAmbiguousNamesAreErrors) {
  EXPECT_THROW(runtime::model_device("Voodoo 5", &user_, shipped_), NotFoundError);
  EXPECT_THROW(runtime::model_device("", &user_, shipped_), InvalidArgumentError);
  user_db_.with([&](db::Database& d) {
    d.upsert_device(model("NVIDIA H100 PCIe", "sm_90", "GPU-pcie"));
    return d.upsert_device(model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-sxm"));
  });
  EXPECT_THROW(runtime::model_device("H100", &user_, shipped_), InvalidArgumentError);
  EXPECT_EQ(runtime::model_device("NVIDIA H100 PCIe", &user_, shipped_).info.uuid, "GPU-pcie");
}

}  // namespace
}  // namespace gemmforge::testing
