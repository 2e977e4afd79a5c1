// NVRTC program lifetime and outputs.
#include "rtc/nvrtc_program.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gemmforge/error.hpp"

namespace gemmforge::rtc {
namespace {

void check(nvrtcResult status, const char* call) {
  if (status != NVRTC_SUCCESS) {
    throw NvrtcError(fmt::format("{}: {}", call, nvrtcGetErrorString(status)), "", {});
  }
}

}  // namespace

NvrtcProgram::NvrtcProgram(const std::string& source, const std::string& name,
                           const std::vector<std::pair<std::string, std::string>>& headers) {
  std::vector<const char*> contents;
  std::vector<const char*> names;
  for (const auto& [header, text] : headers) {
    names.push_back(header.c_str());
    contents.push_back(text.c_str());
  }
  check(nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), static_cast<int>(headers.size()),
                           contents.data(), names.data()),
        "nvrtcCreateProgram");
}

NvrtcProgram::~NvrtcProgram() {
  if (program_ == nullptr) return;
  const nvrtcResult status = nvrtcDestroyProgram(&program_);
  if (status != NVRTC_SUCCESS) {
    try {
      spdlog::warn("nvrtcDestroyProgram: {}", nvrtcGetErrorString(status));
    } catch (...) {
    }
  }
}

nvrtcResult NvrtcProgram::compile(const std::vector<std::string>& options) {
  std::vector<const char*> raw;
  for (const std::string& option : options) raw.push_back(option.c_str());
  return nvrtcCompileProgram(program_, static_cast<int>(raw.size()), raw.data());
}

std::string NvrtcProgram::log() const {
  size_t size = 0;
  check(nvrtcGetProgramLogSize(program_, &size), "nvrtcGetProgramLogSize");
  std::string text(size, '\0');
  check(nvrtcGetProgramLog(program_, text.data()), "nvrtcGetProgramLog");
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::vector<char> NvrtcProgram::cubin() const {
  size_t size = 0;
  check(nvrtcGetCUBINSize(program_, &size), "nvrtcGetCUBINSize");
  std::vector<char> image(size);
  check(nvrtcGetCUBIN(program_, image.data()), "nvrtcGetCUBIN");
  return image;
}

}  // namespace gemmforge::rtc
