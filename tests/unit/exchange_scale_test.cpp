// Results at scale and under stress, through the gemmforge tool as users run it: an export larger than the
// old 256 MiB cap survives a round trip in bounded memory, eight processes importing and querying one
// database lose nothing, and an import killed midway leaves the database as it was.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "runtime_test_support.hpp"
#include "support/export_generator.hpp"

namespace gemmforge::testing {
namespace {

namespace fs = std::filesystem;
using test_support::generated_problem;
using test_support::GeneratedExport;
using test_support::write_generated_export;

struct Counts {
  int64_t devices = 0;
  int64_t problems = 0;
  int64_t trials = 0;
  int64_t best = 0;
  double time_sum = 0;  // a checksum of every stored time
};

Counts counts(const std::string& path) {
  SQLite::Database raw(path, SQLite::OPEN_READONLY);
  Counts c;
  c.devices = raw.execAndGet("SELECT count(*) FROM devices").getInt64();
  c.problems = raw.execAndGet("SELECT count(*) FROM problems").getInt64();
  c.trials = raw.execAndGet("SELECT count(*) FROM trials").getInt64();
  c.best = raw.execAndGet("SELECT count(*) FROM best").getInt64();
  c.time_sum = raw.execAndGet("SELECT total(time_median_ms) FROM trials").getDouble();
  return c;
}

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

// The gemmforge tool with the environment of a test: no default database outside the folder.
std::string tool(const TempFolder& folder) {
  return "GEMMFORGE_DB=" + quoted(folder.file("default.db")) + " HOME=" + quoted(folder.path().string()) +
         " XDG_CACHE_HOME= " + gemmforge_tool();
}

// A run of the gemmforge tool: its exit status, what it printed and the largest memory it held.
struct Measured {
  int status = -1;
  std::string output;
  int64_t peak_bytes = 0;
};

// Runs the tool with `arguments` in a process of its own, its output in `log`, and waits for it.
Measured run_measured(const TempFolder& folder, const std::vector<std::string>& arguments) {
  const std::string binary = std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge";
  const std::string log = folder.file("command.log");
  std::vector<std::string> words{binary};
  words.insert(words.end(), arguments.begin(), arguments.end());
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::setenv("HOME", folder.path().c_str(), 1);
    ::setenv("XDG_CACHE_HOME", "", 1);
    ::setenv("GEMMFORGE_DB", folder.file("default.db").c_str(), 1);
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  Measured m;
  int status = 0;
  rusage usage{};
  if (pid > 0 && ::wait4(pid, &status, 0, &usage) == pid) {
    m.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    m.peak_bytes = int64_t{usage.ru_maxrss} * 1024;
  }
  std::ifstream in(log);
  m.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return m;
}

// Streaming holds one entry at a time: the memory a command holds beyond what the tool takes to start (the
// CUDA libraries, mapped and relocated, take a few hundred MB) stays far below the 256 MiB the file holds.
constexpr int64_t kBoundedBytes = int64_t{64} << 20;

TEST(ExchangeScale, AnExportLargerThan256MiBRoundTripsInBoundedMemory) {
  TempFolder folder;
  // 420k entries of about 700 bytes: past 256 MiB.
  const GeneratedExport made = write_generated_export(folder.file("big.json"), 84000, 4);
  ASSERT_GT(made.bytes, uint64_t{256} << 20);
  const int64_t start = run_measured(folder, {"--version"}).peak_bytes;

  const Measured first =
      run_measured(folder, {"import", folder.file("big.json"), "--db", folder.file("a.db")});
  ASSERT_EQ(first.status, 0) << first.output;
  EXPECT_LT(first.peak_bytes - start, kBoundedBytes) << "import";
  fs::remove(folder.file("big.json"));
  const Counts a = counts(folder.file("a.db"));
  EXPECT_EQ(a.devices, 1);
  EXPECT_EQ(a.problems, made.results);
  EXPECT_EQ(a.trials, made.trials);
  EXPECT_EQ(a.best, made.results);

  const Measured exported = run_measured(
      folder, {"export", "--all-trials", "-o", folder.file("e.json"), "--db", folder.file("a.db")});
  ASSERT_EQ(exported.status, 0) << exported.output;
  EXPECT_LT(exported.peak_bytes - start, kBoundedBytes) << "export";
  EXPECT_GT(fs::file_size(folder.file("e.json")), uintmax_t{256} << 20)
      << "the export itself passes the old cap";

  const Measured second =
      run_measured(folder, {"import", folder.file("e.json"), "--db", folder.file("b.db")});
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_LT(second.peak_bytes - start, kBoundedBytes) << "import of the export";
  const Counts b = counts(folder.file("b.db"));
  EXPECT_EQ(b.devices, a.devices);
  EXPECT_EQ(b.problems, a.problems);
  EXPECT_EQ(b.trials, a.trials);
  EXPECT_EQ(b.best, a.best);
  EXPECT_NEAR(b.time_sum, a.time_sum, 1e-9 * a.time_sum);  // summed in another order
}

TEST(ExchangeScale, EightProcessesImportingAndQueryingOneDatabaseLoseNothing) {
  TempFolder folder;
  constexpr int kProcesses = 8;
  constexpr int kFilesEach = 3;
  constexpr int64_t kProblems = 400;
  constexpr int kConfigs = 3;
  const std::string database = folder.file("shared.db");
  int64_t results = 0, trials = 0;
  for (int p = 0; p < kProcesses; ++p) {
    for (int f = 0; f < kFilesEach; ++f) {
      const int64_t first = (p * kFilesEach + f) * kProblems;
      const GeneratedExport made =
          write_generated_export(folder.file("p" + std::to_string(p) + "_" + std::to_string(f) + ".json"),
                                 kProblems, kConfigs, first);
      results += made.results;
      trials += made.trials;
    }
  }
  // Each process imports its files one by one, querying and reporting between them, while the others do
  // the same; every command's status and output are kept.
  std::string script;
  for (int p = 0; p < kProcesses; ++p) {
    std::string steps;
    for (int f = 0; f < kFilesEach; ++f) {
      const std::string file = folder.file("p" + std::to_string(p) + "_" + std::to_string(f) + ".json");
      const KernelProblem own = generated_problem((p * kFilesEach + f) * kProblems);
      steps += tool(folder) + " import " + quoted(file) + " --db " + quoted(database) + " && " +
               tool(folder) + " query --device-name 'NVIDIA H200' --shape " + std::to_string(own.m) + "x" +
               std::to_string(own.n) + "x" + std::to_string(own.k) + " --json --db " + quoted(database) +
               " && " + tool(folder) + " report --top 1 --db " + quoted(database) + " && ";
    }
    const std::string log = quoted(folder.file("log" + std::to_string(p)));
    script += "( " + steps + "true ) > " + log + " 2>&1; echo $? > " + log + ".status &\n";
  }
  script += "wait\n";
  { std::ofstream(folder.file("run.sh")) << script; }
  const CommandResult r = run_command("sh " + quoted(folder.file("run.sh")));
  ASSERT_EQ(r.status, 0) << r.output;
  for (int p = 0; p < kProcesses; ++p) {
    std::ifstream status_file(folder.file("log" + std::to_string(p) + ".status"));
    int status = -1;
    status_file >> status;
    std::ifstream log_file(folder.file("log" + std::to_string(p)));
    const std::string log((std::istreambuf_iterator<char>(log_file)), std::istreambuf_iterator<char>());
    EXPECT_EQ(status, 0) << "process " << p << ":\n" << log;
    EXPECT_EQ(log.find("locked"), std::string::npos) << log;
    EXPECT_NE(log.find("\"level\": \"exact\""), std::string::npos) << "its own results serve:\n" << log;
  }
  const Counts c = counts(database);
  EXPECT_EQ(c.devices, 1);
  EXPECT_EQ(c.problems, results);
  EXPECT_EQ(c.best, results);
  EXPECT_EQ(c.trials, trials);
}

TEST(ExchangeScale, AnImportKilledMidwayLeavesTheDatabaseAsItWas) {
  TempFolder folder;
  const std::string database = folder.file("kept.db");
  write_generated_export(folder.file("small.json"), 200, 2);
  const CommandResult setup = run_command(tool(folder) + " import " + quoted(folder.file("small.json")) +
                                          " --db " + quoted(database));
  ASSERT_EQ(setup.status, 0) << setup.output;
  const Counts before = counts(database);
  write_generated_export(folder.file("large.json"), 40000, 4, 1000);

  // The import runs in a process of its own, killed once it has written part of its transaction.
  const std::string binary = std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge";
  const std::string file = folder.file("large.json");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execl(binary.c_str(), binary.c_str(), "import", file.c_str(), "--db", database.c_str(), nullptr);
    ::_exit(127);
  }
  const auto start = std::chrono::steady_clock::now();
  bool written = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) {
    std::error_code error;
    if (fs::file_size(database + "-wal", error) > (uintmax_t{4} << 20)) {
      written = true;
      break;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) FAIL() << "the import ended before it could be killed";
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(written) << "the import wrote nothing in 60 s";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // The database opens, passes SQLite's integrity check and holds what it held; the import can run again.
  {
    SQLite::Database raw(database, SQLite::OPEN_READONLY);
    EXPECT_EQ(raw.execAndGet("PRAGMA quick_check").getString(), "ok");
  }
  const Counts after = counts(database);
  EXPECT_EQ(after.trials, before.trials);
  EXPECT_EQ(after.problems, before.problems);
  EXPECT_EQ(after.best, before.best);
  EXPECT_NEAR(after.time_sum, before.time_sum, 1e-9 * before.time_sum);
  const CommandResult report = run_command(tool(folder) + " report --db " + quoted(database));
  EXPECT_EQ(report.status, 0) << report.output;
  const CommandResult again =
      run_command(tool(folder) + " import " + quoted(file) + " --db " + quoted(database));
  ASSERT_EQ(again.status, 0) << again.output;
  EXPECT_EQ(counts(database).trials, before.trials + 40000 * 4);
}

}  // namespace
}  // namespace gemmforge::testing
