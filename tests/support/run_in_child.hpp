// One test of this test program run again in a child process, so that nothing of this process (loaded
// modules, compiled kernels, caches) is warm when the child measures.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdio.h>

#include <filesystem>
#include <string>

namespace gemmforge::test_support {

// Runs this program again with only `test` selected and `variable`='`value`' in its environment (the child's
// part skips without it). Expects the child to exit 0 with its one test passed, and prints the line of its
// output that holds `echo`, so that what the child measured shows in this process's log.
inline void run_test_in_child(const char* variable, const std::string& value, const std::string& test,
                              const std::string& echo) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  // The parent may run as one shard of several: the child runs its one test whatever shard it falls in.
  const std::string command =
      fmt::format("env -u GTEST_SHARD_INDEX -u GTEST_TOTAL_SHARDS {}='{}' '{}' --gtest_filter={} 2>&1",
                  variable, value, self, test);
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t read = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, read);
  const int status = pclose(pipe);
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("[  PASSED  ] 1 test"), std::string::npos) << output;
  const size_t line = output.find(echo);
  if (line != std::string::npos)
    std::printf("%s", output.substr(line, output.find('\n', line) - line + 1).c_str());
}

}  // namespace gemmforge::test_support
