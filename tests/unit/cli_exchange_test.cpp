// The gemmforge tool doing what its conventions promise with good input: --version and the exit statuses
// in --help, imports of several files and of standard input, report and query reading exports and the
// shipped results directly, exports compressed with gzip read as plain ones, and merges that give the same
// database whatever the order of their inputs.
#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "db/schema.hpp"
#include "runtime_test_support.hpp"
#include "support/export_generator.hpp"

namespace gemmforge::testing {
namespace {

using nlohmann::json;
using test_support::generated_problem;
using test_support::write_generated_export;

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

int64_t count(const std::string& database, const char* table) {
  SQLite::Database raw(database, SQLite::OPEN_READONLY);
  return raw.execAndGet(std::string("SELECT count(*) FROM ") + table).getInt64();
}

class CliExchange : public ::testing::Test {
 protected:
  // The tool with no default database outside the folder.
  CommandResult tool(const std::string& arguments) const {
    return run_command("GEMMFORGE_DB=" + quoted(folder_.file("default.db")) +
                       " HOME=" + quoted(folder_.path().string()) + " XDG_CACHE_HOME= " + gemmforge_tool() +
                       " " + arguments);
  }
  // An export of `problems` generated problems from `first` on, three configs each.
  std::string generated(const std::string& name, int64_t problems, int64_t first) const {
    write_generated_export(folder_.file(name), problems, 3, first);
    return folder_.file(name);
  }

  TempFolder folder_;
};

TEST_F(CliExchange, VersionNamesTheSchemaAndFormatAndHelpListsTheExitStatuses) {
  const CommandResult version = tool("--version");
  EXPECT_EQ(version.status, 0) << version.output;
  EXPECT_NE(version.output.find("gemmforge 0."), std::string::npos) << version.output;
  EXPECT_NE(version.output.find("database schema version " +
                                std::to_string(db::builtin_migrations().back().version)),
            std::string::npos)
      << version.output;
  EXPECT_NE(version.output.find("export format version 2"), std::string::npos) << version.output;
  const CommandResult help = tool("--help");
  EXPECT_EQ(help.status, 0);
  for (const char* line : {"Exit status:", "  2   invalid command line or input",
                           "  4   a database cannot be", "  70  an internal error"}) {
    EXPECT_NE(help.output.find(line), std::string::npos) << line << "\n" << help.output;
  }
}

TEST_F(CliExchange, ImportReadsSeveralFilesAndStandardInputInOneTransaction) {
  const std::string a = generated("a.json", 40, 0);
  const std::string b = generated("b.json", 40, 40);
  const std::string c = generated("c.json", 40, 80);
  const std::string database = folder_.file("team.db");
  const CommandResult both =
      tool("import " + quoted(a) + " " + quoted(b) + " --json --db " + quoted(database));
  ASSERT_EQ(both.status, 0) << both.output;
  const json report = json::parse(both.output);
  EXPECT_EQ(report["results"]["imported"], 80);
  EXPECT_EQ(report["committed"], true);
  EXPECT_EQ(count(database, "best"), 80);
  const CommandResult piped = tool("import - --db " + quoted(database) + " < " + quoted(c));
  ASSERT_EQ(piped.status, 0) << piped.output;
  EXPECT_EQ(count(database, "best"), 120);
  EXPECT_EQ(count(database, "trials"), 360);
}

TEST_F(CliExchange, ReportAndQueryReadAnExportAndTheShippedResultsDirectly) {
  const std::string exported = generated("results.json", 30, 0);
  const KernelProblem p = generated_problem(7);
  const CommandResult query =
      tool("query --device-name 'NVIDIA H200' --json --shape " + std::to_string(p.m) + "x" +
           std::to_string(p.n) + "x" + std::to_string(p.k) + " --db " + quoted(exported));
  ASSERT_EQ(query.status, 0) << query.output;
  EXPECT_EQ(json::parse(query.output)["level"], "exact");
  const CommandResult report = tool("report --json --top 1 --db " + quoted(exported));
  ASSERT_EQ(report.status, 0) << report.output;
  EXPECT_EQ(json::parse(report.output).size(), 30u);
  const CommandResult shipped = tool("report --shipped --top 1");
  ASSERT_EQ(shipped.status, 0) << shipped.output;
  EXPECT_NE(shipped.output.find("NVIDIA H200"), std::string::npos) << shipped.output;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("default.db"))) << "reading created a database";
}

// Exports travel compressed as db/tuned/ keeps them: import (a file, or standard input), query and merge
// read gzip as they read JSON, cut gzip data is an error that names the file and imports nothing, and
// export writes gzip to a name ending in .gz.
TEST_F(CliExchange, ExportsTravelCompressedWithGzip) {
  const std::string a = generated("a.json", 40, 0);
  const std::string b = generated("b.json", 40, 40);
  for (const std::string& name : {a, b}) {
    const CommandResult packed = run_command("gzip -9n " + quoted(name));
    ASSERT_EQ(packed.status, 0) << packed.output;
  }
  const std::string database = folder_.file("team.db");
  const CommandResult file = tool("import " + quoted(a + ".gz") + " --db " + quoted(database));
  ASSERT_EQ(file.status, 0) << file.output;
  const CommandResult piped = tool("import - --db " + quoted(database) + " < " + quoted(b + ".gz"));
  ASSERT_EQ(piped.status, 0) << piped.output;
  EXPECT_EQ(count(database, "best"), 80);
  EXPECT_EQ(count(database, "trials"), 240);

  const KernelProblem p = generated_problem(7);
  const CommandResult query =
      tool("query --device-name 'NVIDIA H200' --json --shape " + std::to_string(p.m) + "x" +
           std::to_string(p.n) + "x" + std::to_string(p.k) + " --db " + quoted(a + ".gz"));
  ASSERT_EQ(query.status, 0) << query.output;
  EXPECT_EQ(json::parse(query.output)["level"], "exact");
  const CommandResult merged = tool("merge " + quoted(a + ".gz") + " " + quoted(b + ".gz") + " -o " +
                                    quoted(folder_.file("pooled.db")));
  ASSERT_EQ(merged.status, 0) << merged.output;
  EXPECT_EQ(count(folder_.file("pooled.db"), "best"), 80);

  const std::string cut = folder_.file("cut.json.gz");
  ASSERT_EQ(run_command("head -c 3000 " + quoted(b + ".gz") + " > " + quoted(cut)).status, 0);
  const CommandResult refused = tool("import " + quoted(cut) + " --db " + quoted(database));
  EXPECT_EQ(refused.status, 2) << refused.output;
  EXPECT_NE(refused.output.find("cut.json.gz: the gzip data ends early"), std::string::npos)
      << refused.output;
  EXPECT_EQ(count(database, "trials"), 240);

  // And `export -o NAME.gz` writes one: gzip checks it, and it imports whole.
  const std::string packed = folder_.file("team.json.gz");
  const CommandResult exported =
      tool("export --db " + quoted(database) + " --format json --all-trials -o " + quoted(packed));
  ASSERT_EQ(exported.status, 0) << exported.output;
  const CommandResult checked = run_command("gzip -t " + quoted(packed));
  EXPECT_EQ(checked.status, 0) << checked.output;
  const CommandResult again = tool("import " + quoted(packed) + " --db " + quoted(folder_.file("again.db")));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(count(folder_.file("again.db"), "best"), 80);
  EXPECT_EQ(count(folder_.file("again.db"), "trials"), 240);
}

// Left out, a tuned problem is predicted, not looked up: the model's choice among the configs measured on it
// is scored against the fastest of them and against cuBLAS.
TEST_F(CliExchange, ReportLeftOutScoresTheModelsChoiceOnProblemsItWasNotFittedOn) {
  const CommandResult left_out =
      tool("report --shipped --left-out --device h200 --shape 4096x4096x4096 --dtype bf16 --ranked 3 --json");
  ASSERT_EQ(left_out.status, 0) << left_out.output;
  const json answer = json::parse(left_out.output);
  ASSERT_EQ(answer.size(), 1u) << answer.dump(2);
  EXPECT_EQ(answer[0]["device"], "NVIDIA H200");
  const json& problems = answer[0]["problems"];
  ASSERT_FALSE(problems.empty()) << answer.dump(2);
  for (const json& p : problems) {
    EXPECT_NE(p["problem"].get<std::string>().find("bf16 n"), std::string::npos) << p.dump();
    EXPECT_NE(p["problem"].get<std::string>().find(" 4096x4096x4096 "), std::string::npos) << p.dump();
    EXPECT_GE(p["configs"].get<int>(), 8);
    EXPECT_GE(p["chosen_over_best"].get<double>(), 1.0);
    EXPECT_LE(std::abs(p["rank_correlation"].get<double>()), 1.0);
    // A prediction: the chosen config's own measurement was left out with its problem.
    EXPECT_NE(p["chosen_predicted_over_measured"].get<double>(), 1.0) << p.dump();
    EXPECT_GT(p["served_vs_cublas"].get<double>(), 0.0);
    // --ranked: the model's first three by their pessimistic time, the chosen one first, and the three
    // fastest measured, the best first.
    const json& ranked = p["ranked_first"];
    const json& fastest = p["measured_first"];
    ASSERT_EQ(ranked.size(), 3u) << p.dump();
    ASSERT_EQ(fastest.size(), 3u) << p.dump();
    EXPECT_EQ(ranked[0]["config"], p["chosen"]);
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_LE(ranked[i - 1]["pessimistic_ms"].get<double>(), ranked[i]["pessimistic_ms"].get<double>());
      EXPECT_LE(fastest[i - 1]["measured_ms"].get<double>(), fastest[i]["measured_ms"].get<double>());
    }
    EXPECT_NEAR(ranked[0]["measured_ms"].get<double>() / fastest[0]["measured_ms"].get<double>(),
                p["chosen_over_best"].get<double>(), 1e-9);
  }
  EXPECT_EQ(tool("report --shipped --ranked 3").status, 2) << "--ranked without --left-out";
  const CommandResult unknown = tool("report --shipped --left-out --device 'no such gpu'");
  EXPECT_EQ(unknown.status, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("NVIDIA H200"), std::string::npos) << unknown.output;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("default.db"))) << "reading created a database";
}

TEST_F(CliExchange, MergeGivesTheSameDatabaseWhateverTheOrderOfItsInputs) {
  const std::string a = generated("a.json", 30, 0);
  const std::string b = generated("b.json", 30, 20);  // ten problems in common
  const std::string from_a = folder_.file("from_a.db");
  ASSERT_EQ(tool("import " + quoted(a) + " --db " + quoted(from_a)).status, 0);
  const CommandResult forward =
      tool("merge " + quoted(from_a) + " " + quoted(b) + " -o " + quoted(folder_.file("ab.db")));
  ASSERT_EQ(forward.status, 0) << forward.output;
  const CommandResult backward =
      tool("merge " + quoted(b) + " " + quoted(from_a) + " -o " + quoted(folder_.file("ba.db")));
  ASSERT_EQ(backward.status, 0) << backward.output;
  EXPECT_EQ(count(folder_.file("ab.db"), "best"), 50);
  EXPECT_EQ(count(folder_.file("ab.db"), "trials"), 150);
  for (const char* name : {"ab", "ba"}) {
    const CommandResult exported =
        tool(std::string("export --all-trials -o ") + quoted(folder_.file(std::string(name) + ".json")) +
             " --db " + quoted(folder_.file(std::string(name) + ".db")));
    ASSERT_EQ(exported.status, 0) << exported.output;
  }
  json ab = json::parse(std::ifstream(folder_.file("ab.json")));
  json ba = json::parse(std::ifstream(folder_.file("ba.json")));
  ab.erase("exported_at");
  ba.erase("exported_at");
  for (json* doc : {&ab, &ba}) {
    for (json& device : (*doc)["devices"]) {
      device.erase("first_seen");
      device.erase("last_seen");
    }
  }
  EXPECT_TRUE(ab == ba) << "the merges differ";
}

}  // namespace
}  // namespace gemmforge::testing
