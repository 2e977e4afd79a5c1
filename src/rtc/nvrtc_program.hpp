// An NVRTC program handle, destroyed with the object. Move-only.
#pragma once

#include <nvrtc.h>

#include <string>
#include <utility>
#include <vector>

namespace gemmforge::rtc {

class NvrtcProgram {
 public:
  /// Creates a program from source and named headers; throws NvrtcError if NVRTC refuses.
  NvrtcProgram(const std::string& source, const std::string& name,
               const std::vector<std::pair<std::string, std::string>>& headers);
  ~NvrtcProgram();
  NvrtcProgram(NvrtcProgram&& other) noexcept : program_(std::exchange(other.program_, nullptr)) {}
  NvrtcProgram& operator=(NvrtcProgram&& other) noexcept {
    std::swap(program_, other.program_);
    return *this;
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;

  /// Compiles; returns NVRTC's status rather than throwing so a failure can be kept as data.
  nvrtcResult compile(const std::vector<std::string>& options);
  std::string log() const;
  std::vector<char> cubin() const;

 private:
  nvrtcProgram program_ = nullptr;
};

}  // namespace gemmforge::rtc
