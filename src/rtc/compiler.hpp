// Source + options -> NVRTC -> cubin. A failed compile is a value carrying its log and options.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gemmforge::rtc {

/// "13.0".
std::string nvrtc_version();
/// Architectures this NVRTC can build cubins for, e.g. {"sm_75", "sm_80", ..., "sm_90", "sm_90a", ...}.
std::vector<std::string> supported_archs();

/// Resources of a compiled kernel as ptxas reports them; known without a GPU.
struct ResourceUsage {
  int registers = -1;  ///< -1: not reported
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;
  int static_smem_bytes = 0;
  int barriers = 0;
  bool spills() const { return spill_store_bytes > 0 || spill_load_bytes > 0; }
};

/// Reads ptxas' verbose report ("Used 128 registers, ... 0 bytes spill stores ...") for one entry.
ResourceUsage parse_ptxas_report(const std::string& log, const std::string& kernel);

/// Where one compilation's time went, as NVRTC's -time table reports it, in its order: the C++ front end,
/// the NVVM optimizer, PTX translation (ptxas), ...
using PhaseTimes = std::vector<std::pair<std::string, double>>;

/// Reads NVRTC's -time table ("File name, phase name, metric, unit" and rows such as
/// "gemm_tma.cu, NVVM Optimizer, 1516, ms"); rows in other units or unreadable are skipped.
PhaseTimes parse_phase_times(const std::string& table);

struct CompileRequest {
  std::string source;
  std::string source_name;  ///< shown in diagnostics, e.g. "sgemm_simt.cu"
  std::map<std::string, std::string> headers;
  std::string arch;  ///< "sm_90", "sm_90a", ...
  std::vector<std::pair<std::string, int64_t>> defines;
  std::vector<std::string> extra_options;
  std::string kernel;        ///< entry whose resource usage is read
  bool time_phases = false;  ///< have NVRTC time its phases (CompileResult::phases) through a temporary file;
                             ///< untimed, and compiled all the same, where no such file can be written

  /// The exact NVRTC option list.
  std::vector<std::string> options() const;
};

struct CompileResult {
  bool ok = false;
  std::vector<char> cubin;
  std::string log;
  std::vector<std::string> options;
  ResourceUsage usage;
  double compile_ms = 0;  ///< wall time of the compilation
  double cpu_ms = 0;      ///< CPU time the compiling thread spent in it: below compile_ms when it waited
  std::string error;      ///< one line when !ok, e.g. "NVRTC_ERROR_COMPILATION: 2 errors"
  PhaseTimes phases;      ///< with CompileRequest::time_phases

  /// The cubin, or an NvrtcError with the log and options.
  const std::vector<char>& cubin_or_throw() const;
};

/// Compiles for request.arch. Never throws for a compile error; throws only if NVRTC itself is unusable.
CompileResult compile(const CompileRequest& request);

/// The cubin of a support module (the utility kernels, the operand passes: a source that never changes
/// while a process runs), compiled once per process for each source name and architecture. Requests of
/// different keys compile at the same time; a failure throws NvrtcError and is tried again by the next
/// call. Makes no CUDA call, so a thread of its own may compile ahead of the code that loads the module.
const std::vector<char>& compile_once_per_process(const CompileRequest& request);

}  // namespace gemmforge::rtc
