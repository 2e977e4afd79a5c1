// Everything a folder holds, file by file, so a test can assert that a command that failed changed
// nothing and left nothing behind.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace gemmforge::test_support {

/// Relative path -> content ("<folder>" for a folder, size and time for a file over 64 MiB) of every entry
/// below `root`.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::string> entries;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string name = std::filesystem::relative(entry.path(), root).string();
    if (entry.is_directory()) {
      entries[name] = "<folder>";
      continue;
    }
    // Huge test files (sparse ones of gigabytes) are known by their size and time, not read.
    constexpr std::uintmax_t kRead = 64 << 20;
    if (entry.file_size() > kRead) {
      entries[name] = "<" + std::to_string(entry.file_size()) + " bytes, written at " +
                      std::to_string(entry.last_write_time().time_since_epoch().count()) + ">";
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    entries[name] = bytes.str();
  }
  return entries;
}

/// The names that differ between two snapshots, for a failure message.
inline std::string snapshot_difference(const std::map<std::string, std::string>& before,
                                       const std::map<std::string, std::string>& after) {
  std::string out;
  for (const auto& [name, content] : after) {
    const auto it = before.find(name);
    if (it == before.end()) {
      out += "  new: " + name + "\n";
    } else if (it->second != content) {
      out += "  changed: " + name + "\n";
    }
  }
  for (const auto& [name, content] : before) {
    if (after.count(name) == 0) out += "  removed: " + name + "\n";
  }
  return out;
}

}  // namespace gemmforge::test_support
