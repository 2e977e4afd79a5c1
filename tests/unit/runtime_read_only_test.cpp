// A tuning database the process may not write, served as the runtime serves it without a GPU: its exact
// results chosen, a site-wide database consulted under the user's, what the process learns recorded in the
// per-user database instead, and the read-only files left exactly as they were.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "runtime/database_layers.hpp"
#include "runtime/miss_log.hpp"
#include "runtime/selector.hpp"
#include "runtime/tuned_source.hpp"
#include "runtime_test_support.hpp"
#include "support/folder_snapshot.hpp"
#include "support/scoped_env.hpp"
#include "support/unprivileged.hpp"

namespace gemmforge::testing {
namespace {

namespace fs = std::filesystem;
using runtime::DatabaseLayers;
using runtime::Selection;
using runtime::Selector;
using runtime::TunedSource;
using test_support::ScopedEnv;

constexpr fs::perms kReadOnly = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;

class RuntimeReadOnly : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(folder_.path() / "site");
    fs::create_directories(folder_.path() / "home");
    {
      db::Database site = db::Database::open(site_db());
      const int64_t h100 = site.upsert_device(h100_);
      // Times near what an H100 takes: a shipped result of another GPU model that is predicted much
      // faster than the site's would serve instead.
      record(site, h100, problem(4096, 4096, 4096), seed(1), 1.1, 2.1);
      record(site, h100, problem(4096, 4096, 4096), seed(2), 1.2, 2.1);
      record(site, h100, problem(1024, 1024, 1024), seed(2), 0.10, 0.12);
    }
    fs::permissions(site_db(), kReadOnly);
  }
  void TearDown() override { fs::permissions(site_db(), fs::perms::owner_all, fs::perm_options::add); }

  std::string site_db() const { return (folder_.path() / "site" / "results.db").string(); }
  // Root may write any file, so the check that decides is injected: nothing under site/ is writable.
  db::WritableCheck site_locked() const {
    const std::string site = (folder_.path() / "site").string();
    return [site](const std::string& path) { return path.rfind(site, 0) != 0; };
  }
  Selection select(TunedSource& source, const KernelProblem& p) const {
    return Selector(TemplateLibrary::instance(), h100_, {&source}).select(p);
  }

  TempFolder folder_;
  const DeviceInfo h100_ = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
};

TEST_F(RuntimeReadOnly, ServesItsResultsRecordsMissesPerUserAndLeavesItsFolderAsItWas) {
  const ScopedEnv home("HOME", (folder_.path() / "home").string());
  const ScopedEnv cache("XDG_CACHE_HOME", "");
  const auto before = test_support::snapshot(folder_.path() / "site");
  {
    DatabaseLayers::Options options;
    options.database_path = site_db();
    options.writable_check = site_locked();
    DatabaseLayers layers = DatabaseLayers::open(options);
    ASSERT_EQ(layers.lookup().size(), 2u) << layers.label();
    ASSERT_NE(layers.writable(), nullptr);
    EXPECT_EQ(layers.writable()->path(), db::Database::cache_path());
    EXPECT_TRUE(layers.lookup()[1]->read_only());
    EXPECT_NE(layers.label().find("read-only database " + site_db()), std::string::npos) << layers.label();

    TunedSource source(layers.lookup(), layers.label());
    const Selection exact = select(source, problem(4096, 4096, 4096));
    EXPECT_EQ(exact.level, PlanLevel::kExact);
    ASSERT_TRUE(exact.choice);
    EXPECT_EQ(exact.choice->config, seed(1));
    ASSERT_TRUE(exact.time_ms);
    EXPECT_DOUBLE_EQ(*exact.time_ms, 1.1);

    // A problem served untuned is recorded where the process may write: the per-user database.
    const int64_t device_id =
        layers.writable()->with([&](db::Database& d) { return d.upsert_device(h100_); });
    EXPECT_TRUE(runtime::record_miss_once(*layers.writable(), device_id, problem(333, 444, 555)));
    const auto misses = layers.writable()->with([&](db::Database& d) { return d.misses(device_id); });
    ASSERT_EQ(misses.size(), 1u);
    EXPECT_EQ(misses[0].problem, problem(333, 444, 555));
  }
  EXPECT_TRUE(fs::exists(db::Database::cache_path()));
  const auto after = test_support::snapshot(folder_.path() / "site");
  EXPECT_TRUE(before == after) << test_support::snapshot_difference(before, after);
}

TEST_F(RuntimeReadOnly, ASiteDatabaseAnswersUnderTheUsersOwnResults) {
  const std::string user_db = folder_.file("user.db");
  {
    db::Database user = db::Database::open(user_db);
    const int64_t h100 = user.upsert_device(h100_);
    record(user, h100, problem(4096, 4096, 4096), seed(3), 1.0, 2.1);  // the user's own measurement
  }
  DatabaseLayers::Options options;
  options.database_path = user_db;
  options.site_path = site_db();
  options.writable_check = site_locked();
  DatabaseLayers layers = DatabaseLayers::open(options);
  ASSERT_EQ(layers.lookup().size(), 2u) << layers.label();
  EXPECT_EQ(layers.writable()->path(), user_db);
  TunedSource source(layers.lookup(), layers.label());

  const Selection own = select(source, problem(4096, 4096, 4096));
  EXPECT_EQ(own.level, PlanLevel::kExact);
  ASSERT_TRUE(own.choice);
  EXPECT_EQ(own.choice->config, seed(3)) << "the user's result comes first";

  const Selection site = select(source, problem(1024, 1024, 1024));
  EXPECT_EQ(site.level, PlanLevel::kExact) << "only the site database tuned this problem";
  ASSERT_TRUE(site.choice);
  EXPECT_EQ(site.choice->config, seed(2));
}

TEST_F(RuntimeReadOnly, AnUnreadableSiteDatabaseCostsAWarningNotTheProcess) {
  DatabaseLayers::Options options;
  options.database_path = folder_.file("user.db");
  options.site_path = folder_.file("nowhere/site.db");
  DatabaseLayers layers = DatabaseLayers::open(options);
  EXPECT_EQ(layers.lookup().size(), 1u);
  EXPECT_NE(layers.writable(), nullptr);
}

// The gemmforge tool as a user who may not write the file or its folder.
TEST_F(RuntimeReadOnly, QueryReportAndExportReadAFileTheUserCannotWrite) {
  const std::optional<std::string> prefix = test_support::unprivileged_prefix();
  if (!prefix) GTEST_SKIP() << test_support::kNoUnprivilegedUser;
  fs::permissions(folder_.path(), fs::perms::others_read | fs::perms::others_exec, fs::perm_options::add);
  fs::permissions(folder_.path() / "site", fs::perms::owner_read | fs::perms::owner_exec |
                                               fs::perms::group_read | fs::perms::group_exec |
                                               fs::perms::others_read | fs::perms::others_exec);
  const auto before = test_support::snapshot(folder_.path() / "site");
  const std::string env = "HOME=" + (folder_.path() / "home").string() + " XDG_CACHE_HOME= ";
  const CommandResult query =
      run_command(env + *prefix + gemmforge_tool() + " query --device-name 'NVIDIA H100 80GB HBM3' --shape " +
                  "4096x4096x4096 --json --db '" + site_db() + "'");
  const CommandResult report =
      run_command(env + *prefix + gemmforge_tool() + " report --db '" + site_db() + "'");
  fs::create_directories(folder_.path() / "out");
  fs::permissions(folder_.path() / "out", fs::perms::all);
  const std::string exported = (folder_.path() / "out" / "results.json").string();
  const CommandResult export_run = run_command(env + *prefix + gemmforge_tool() + " export -o '" + exported +
                                               "' --db '" + site_db() + "'");
  fs::permissions(folder_.path() / "site", fs::perms::owner_all, fs::perm_options::add);
  ASSERT_EQ(query.status, 0) << query.output;
  const nlohmann::json answer = nlohmann::json::parse(
      query.output.substr(query.output.find('{'), query.output.rfind('}') + 1 - query.output.find('{')));
  EXPECT_EQ(answer["level"], "exact");
  EXPECT_EQ(answer["config"], seed(1).key());
  EXPECT_EQ(report.status, 0) << report.output;
  EXPECT_NE(report.output.find("4096x4096x4096"), std::string::npos) << report.output;
  ASSERT_EQ(export_run.status, 0) << export_run.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(exported))["results"].size(), 2u);
  const auto after = test_support::snapshot(folder_.path() / "site");
  EXPECT_TRUE(before == after) << test_support::snapshot_difference(before, after);
}

}  // namespace
}  // namespace gemmforge::testing
