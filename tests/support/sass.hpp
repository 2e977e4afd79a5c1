// Disassembling cubins in tests: cuobjdump where it is installed, the SASS of a cubin, counting opcodes.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "support/temp_folder.hpp"

namespace gemmforge::test_support {

/// cuobjdump from the PATH or the CUDA toolkit, or empty.
inline std::string find_cuobjdump() {
  for (const char* candidate : {"cuobjdump", "/usr/local/cuda/bin/cuobjdump"}) {
    const std::string probe = fmt::format("command -v {} > /dev/null 2>&1", candidate);
    if (std::system(probe.c_str()) == 0) return candidate;
  }
  return {};
}

/// The SASS of a cubin, or empty where cuobjdump fails.
inline std::string sass_of(const std::string& cuobjdump, const std::vector<char>& cubin,
                           const TempFolder& folder) {
  const std::string path = folder.file("kernel.cubin");
  std::ofstream(path, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
  const std::string command = fmt::format("{} -sass {} 2>&1", cuobjdump, path);
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    std::array<char, 4096> buffer;
    size_t read;
    while ((read = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), read);
    ::pclose(pipe);
  }
  return out;
}

/// Occurrences of `word` in `text`.
inline size_t count(const std::string& text, const std::string& word) {
  size_t n = 0;
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) ++n;
  return n;
}

/// The SASS of one kernel of a disassembled cubin (from its "Function : name" line to the next kernel's);
/// empty where the cubin holds no kernel of that name.
inline std::string function_sass(const std::string& sass, const std::string& name) {
  const std::string header = "Function : " + name + "\n";
  const size_t begin = sass.find(header);
  if (begin == std::string::npos) return {};
  const size_t end = sass.find("Function : ", begin + header.size());
  return sass.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

/// The SASS of the innermost loop around the first instruction holding `opcode`: from that instruction's line
/// to the first branch after it back to an address at or before it. Empty where there is no such branch.
inline std::string loop_around(const std::string& sass, const std::string& opcode) {
  const size_t at = sass.find(opcode);
  if (at == std::string::npos) return {};
  const size_t line = sass.rfind('\n', at) + 1;  // npos + 1 == 0 on the first line
  // Each SASS line begins "/*0abc*/": its address.
  const auto address = [&](size_t from) -> long long {
    const size_t open = sass.find("/*", from);
    if (open == std::string::npos || sass.find('\n', from) < open) return -1;
    return std::stoll(sass.substr(open + 2, sass.find("*/", open) - open - 2), nullptr, 16);
  };
  const long long first = address(line);
  if (first < 0) return {};
  for (size_t branch = sass.find("BRA ", at); branch != std::string::npos;
       branch = sass.find("BRA ", branch + 1)) {
    const size_t target = sass.find("0x", branch);
    if (target == std::string::npos || target > sass.find('\n', branch)) continue;
    if (std::stoll(sass.substr(target + 2), nullptr, 16) <= first) {
      return sass.substr(line, sass.find('\n', branch) - line);
    }
  }
  return {};
}

}  // namespace gemmforge::test_support
