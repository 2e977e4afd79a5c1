// One database file written and read by several threads at once, each with its own connection, as a tuner
// and a serving process share one: no "database is locked" failure and no lost row.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "db/database.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

TEST(DbConcurrency, EightThreadsWritingAndReadingOneFileLoseNothing) {
  TempFolder folder;
  const std::string path = folder.file("shared.db");
  const DeviceInfo h100 = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
  { db::Database::open(path).upsert_device(h100); }
  constexpr int kThreads = 8;
  constexpr int kTrialsEach = 40;
  std::atomic<int> failures{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        db::Database database = db::Database::open(path);
        const int64_t device = database.upsert_device(h100);
        for (int i = 0; i < kTrialsEach; ++i) {
          // Each thread its own problems, and a read of everything between writes.
          record(database, device, problem(64 * (1 + t), 64 * (1 + i), 256), seed(i % 3), 0.5 + 0.01 * i,
                 0.6);
          database.trials(device);
        }
      } catch (const std::exception& e) {
        ++failures;
        errors[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& error : errors) EXPECT_TRUE(error.empty()) << error;
  EXPECT_EQ(failures.load(), 0);
  db::Database database = db::Database::open(path);
  const std::vector<db::DeviceRecord> devices = database.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(database.trials(devices[0].id).size(), size_t{kThreads * kTrialsEach});
}

}  // namespace
}  // namespace gemmforge::testing
