// NVRTC compilation with ptxas' resource report.
#include "rtc/compiler.hpp"

#include <fmt/format.h>
#include <time.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>

#include "core/device_info.hpp"
#include "gemmforge/error.hpp"
#include "rtc/nvrtc_program.hpp"

namespace gemmforge::rtc {
namespace {

/// CPU time of the calling thread: NVRTC compiles on the thread that calls it.
double thread_cpu_ms() {
  timespec now{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

// A file of its own for each timed compilation (they run on several threads at once), or none where
// there is no temporary directory: timing is a report, never a reason for a compilation to fail.
std::optional<std::filesystem::path> phase_table_path() {
  static std::atomic<unsigned> next{0};
  std::error_code error;
  const std::filesystem::path directory = std::filesystem::temp_directory_path(error);
  if (error) return std::nullopt;
  return directory / fmt::format("gemmforge-nvrtc-phases-{}-{}.csv", ::getpid(), next.fetch_add(1));
}

std::string trim(const std::string& text) {
  const size_t begin = text.find_first_not_of(" \t\r");
  const size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string::npos ? std::string() : text.substr(begin, end - begin + 1);
}

}  // namespace

PhaseTimes parse_phase_times(const std::string& table) {
  PhaseTimes phases;
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) fields.push_back(trim(cell));
    if (fields.size() != 4 || fields[3] != "ms") continue;
    try {
      size_t used = 0;
      const double ms = std::stod(fields[2], &used);
      if (used == fields[2].size()) phases.emplace_back(fields[1], ms);
    } catch (const std::exception&) {
      // the header row, or a row NVRTC may add in another form
    }
  }
  return phases;
}

std::string nvrtc_version() {
  int major = 0;
  int minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

std::vector<std::string> supported_archs() {
  int count = 0;
  std::vector<std::string> out;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS) return out;
  std::vector<int> archs(count);
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return out;
  for (int cc : archs) {
    out.push_back(fmt::format("sm_{}", cc));
    if (cc == 90) out.push_back("sm_90a");  // architecture-specific features (wgmma, setmaxnreg)
  }
  return out;
}

ResourceUsage parse_ptxas_report(const std::string& log, const std::string& kernel) {
  ResourceUsage usage;
  // The report for one entry starts at "Compiling entry function 'NAME'" and runs to the next entry.
  const std::string marker = fmt::format("Compiling entry function '{}'", kernel);
  size_t begin = log.find(marker);
  if (begin == std::string::npos) return usage;
  size_t end = log.find("Compiling entry function", begin + marker.size());
  const std::string section = log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  std::smatch match;
  if (std::regex_search(
          section, match,
          std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)"))) {
    usage.stack_bytes = std::stoi(match[1]);
    usage.spill_store_bytes = std::stoi(match[2]);
    usage.spill_load_bytes = std::stoi(match[3]);
  }
  if (std::regex_search(section, match, std::regex(R"(Used (\d+) registers)")))
    usage.registers = std::stoi(match[1]);
  if (std::regex_search(section, match, std::regex(R"(used (\d+) barriers)")))
    usage.barriers = std::stoi(match[1]);
  if (std::regex_search(section, match, std::regex(R"((\d+) bytes smem)")))
    usage.static_smem_bytes = std::stoi(match[1]);
  return usage;
}

std::vector<std::string> CompileRequest::options() const {
  std::vector<std::string> out = {"-arch=" + normalize_arch(arch), "-std=c++17", "-default-device",
                                  "-Xptxas=-v", "-DGEMMFORGE_RTC=1"};
  for (const auto& [name, value] : defines) out.push_back(fmt::format("-D{}={}", name, value));
  out.insert(out.end(), extra_options.begin(), extra_options.end());
  return out;
}

const std::vector<char>& CompileResult::cubin_or_throw() const {
  if (!ok) throw NvrtcError(fmt::format("compilation failed: {}\n{}", error, log), log, options);
  return cubin;
}

namespace {

// One compilation, its phases timed into `phase_table` where one is given.
CompileResult compile_once(const CompileRequest& request, const std::filesystem::path* phase_table,
                           nvrtcResult& status) {
  CompileResult result;
  result.options = request.options();
  if (phase_table != nullptr) result.options.push_back("-time=" + phase_table->string());
  std::vector<std::pair<std::string, std::string>> headers(request.headers.begin(), request.headers.end());
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start_ms = thread_cpu_ms();
  NvrtcProgram program(request.source, request.source_name, headers);
  status = program.compile(result.options);
  result.log = program.log();
  if (status == NVRTC_SUCCESS) {
    result.cubin = program.cubin();
    result.ok = !result.cubin.empty();
    result.usage = parse_ptxas_report(result.log, request.kernel);
  } else {
    result.error =
        fmt::format("{} compiling {} for {}", nvrtcGetErrorString(status), request.source_name, request.arch);
  }
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.cpu_ms = thread_cpu_ms() - cpu_start_ms;
  if (phase_table != nullptr) {
    std::ifstream in(*phase_table);
    result.phases = parse_phase_times(std::string(std::istreambuf_iterator<char>(in), {}));
    std::error_code ignored;
    std::filesystem::remove(*phase_table, ignored);
  }
  return result;
}

}  // namespace

CompileResult compile(const CompileRequest& request) {
  nvrtcResult status = NVRTC_SUCCESS;
  if (request.time_phases) {
    if (const std::optional<std::filesystem::path> table = phase_table_path()) {
      CompileResult timed = compile_once(request, &*table, status);
      if (status != NVRTC_ERROR_TIME_FILE_WRITE_FAILED) return timed;
    }
  }
  return compile_once(request, nullptr, status);
}

const std::vector<char>& compile_once_per_process(const CompileRequest& request) {
  struct Entry {
    std::mutex mutex;  // held while the entry compiles
    std::optional<std::vector<char>> cubin;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> entries;  // by source name and arch; nodes stay where they are
  Entry* entry = nullptr;
  {
    std::lock_guard lock(mutex);
    entry = &entries[request.source_name + " " + request.arch];
  }
  std::lock_guard lock(entry->mutex);
  if (!entry->cubin) entry->cubin = compile(request).cubin_or_throw();
  return *entry->cubin;
}

}  // namespace gemmforge::rtc
