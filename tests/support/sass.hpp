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

}  // namespace gemmforge::test_support
