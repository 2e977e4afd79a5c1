// One database file written and read by several threads at once, each with its own connection, as a tuner
// and a serving process share one: no "database is locked" failure and no lost row.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "db/database.hpp"
#include "runtime_test_support.hpp"

namespace gemmforge::testing {
namespace {

// Whether another process could take a write lock on the bytes whose read lock is SQLite's SHARED lock on a
// database file (https://www.sqlite.org/lockingv3.html; 510 bytes from 2 past the 1 GiB pending byte). A
// WAL connection holds that lock while it is open, and a connection closing finds itself the last one,
// checkpoints the WAL and deletes it, only where it can take this lock. Asked from a child process, since a
// process never conflicts with its own locks; the child calls nothing but open, fcntl and _exit.
bool another_process_can_lock(const std::string& path) {
  const pid_t child = ::fork();
  if (child == 0) {
    const int fd = ::open(path.c_str(), O_RDWR);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0x40000000 + 2;
    lock.l_len = 510;
    ::_exit(fd >= 0 && ::fcntl(fd, F_SETLK, &lock) == 0 ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Closing any descriptor of a file drops every POSIX lock the process holds on it, so a second opening of a
// file the process has open already must read it only through SQLite, which keeps such descriptors open
// while its connections hold locks. Else a tuning process ending beside a runtime deletes the WAL that the
// runtime still writes, and the file comes out malformed.
TEST(DbConcurrency, OpeningAFileTheProcessHasOpenKeepsTheLocksOfItsConnections) {
  TempFolder folder;
  const std::string path = folder.file("shared.db");
  const DeviceInfo h100 = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
  db::Database first = db::Database::open(path);
  first.upsert_device(h100);
  ASSERT_FALSE(another_process_can_lock(path)) << "an open WAL connection holds its SHARED lock";
  {
    db::Database second = db::Database::open(path);
    second.devices();
  }
  { db::Database reader = db::Database::open(path, db::OpenOptions{.access = db::Access::kReadOnly}); }
  EXPECT_FALSE(another_process_can_lock(path))
      << "opening the file again dropped the first connection's lock";
  first.upsert_device(model("NVIDIA H200", "sm_90", "GPU-22222222-bbbb"));
  EXPECT_EQ(db::Database::open(path).devices().size(), 2u);
}

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
