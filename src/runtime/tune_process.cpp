// Starting and watching `gemmforge tune` for one problem; the process is a tuner::ChildProcess, so it dies
// with the thread that started it and is always reaped.
#include "runtime/tune_process.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <thread>
#include <utility>

#include "gemmforge/error.hpp"
#include "tuner/child_process.hpp"

namespace gemmforge::runtime {
namespace {

constexpr const char* kCliName = "gemmforge";
constexpr size_t kStderrLines = 6;     // kept to explain a failure
constexpr size_t kMaxLineBytes = 400;  // of each kept line

bool is_executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
}

// Reads what is there without blocking; `use` gets each chunk.
template <typename Use>
void drain(int fd, Use&& use) {
  if (fd < 0) return;
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof(buffer));
    if (got > 0) {
      use(buffer, static_cast<size_t>(got));
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // nothing more for now (EAGAIN), or the end
    }
  }
}

class ProcessTuneJob : public TuneJob {
 public:
  ProcessTuneJob(tuner::ChildProcess process, std::string name)
      : process_(std::move(process)), name_(std::move(name)) {}

  std::optional<TuneOutcome> poll() override {
    read_output();
    const std::optional<tuner::ExitStatus> status = process_.try_wait();
    if (!status) return std::nullopt;
    read_output();  // what it wrote just before it ended
    end_line();
    if (status->ok()) return TuneOutcome{TuneOutcome::Status::kTuned, ""};
    std::string detail = fmt::format("{} {}", name_, status->describe());
    if (!lines_.empty()) detail += fmt::format(": {}", fmt::join(lines_, " / "));
    return TuneOutcome{TuneOutcome::Status::kFailed, std::move(detail)};
  }

  void kill() override { process_.kill(); }

 private:
  void read_output() {
    drain(process_.channel(), [](const char*, size_t) {});  // its summary table: the database has it all
    drain(process_.error_output(), [&](const char* data, size_t size) {
      for (size_t i = 0; i < size; ++i) {
        if (data[i] == '\n') {
          end_line();
        } else if (partial_.size() < kMaxLineBytes) {
          partial_ += data[i];
        }
      }
    });
  }

  void end_line() {
    if (partial_.find_first_not_of(" \t\r") != std::string::npos) {
      lines_.push_back(std::move(partial_));
      if (lines_.size() > kStderrLines) lines_.pop_front();
    }
    partial_.clear();
  }

  tuner::ChildProcess process_;
  std::string name_;
  std::string partial_;
  std::deque<std::string> lines_;
};

}  // namespace

FirstUseSettings first_use_settings(const RuntimeOptions& options) {
  FirstUseSettings settings;
  settings.enabled = options.tune_at_first_use;
  settings.evaluations = options.first_use_evaluations;
  if (const char* on = std::getenv("GEMMFORGE_TUNE_AT_FIRST_USE"); on != nullptr && *on != '\0') {
    if (std::strcmp(on, "1") == 0 || std::strcmp(on, "0") == 0) {
      settings.enabled = *on == '1';
    } else {
      spdlog::warn("GEMMFORGE_TUNE_AT_FIRST_USE is '{}'; it takes 1 (on) or 0 (off), so it is ignored", on);
    }
  }
  if (const char* budget = std::getenv("GEMMFORGE_TUNE_BUDGET"); budget != nullptr && *budget != '\0') {
    size_t value = 0;
    const char* end = budget + std::strlen(budget);
    const auto [last, error] = std::from_chars(budget, end, value);
    if (error == std::errc() && last == end && value > 0) {
      settings.evaluations = value;
    } else {
      spdlog::warn("GEMMFORGE_TUNE_BUDGET is '{}'; it takes a number of evaluations above 0, so {} are used",
                   budget, settings.evaluations);
    }
  }
  if (settings.evaluations == 0) settings.evaluations = 1;  // `--max-evals 0` would mean no limit at all
  return settings;
}

std::vector<std::string> tune_arguments(const TuneCommand& command, const KernelProblem& problem,
                                        const std::vector<Config>& first) {
  std::vector<std::string> arguments = {
      command.executable,
      "tune",
      "--db",
      command.database,
      "--device",
      command.device_uuid,
      "--shape",
      problem.shape(),
      "--dtype",
      problem.type_name(),
      "--layout",
      problem.layout(),
      "--order",
      "row",  // the canonical problem is row-major: no operand is swapped
      "--align",
      fmt::format("{},{},{}", problem.align_a, problem.align_b, problem.align_c),
      "--max-evals",
      std::to_string(command.evaluations),
      "--threads",
      std::to_string(command.compile_threads),
      "--rank",
      "none",  // an application launched by srun or mpirun tunes its own problem, whatever its rank
      "--quiet"};
  for (const Config& config : first) {
    arguments.push_back("--first");
    arguments.push_back(config.template_name() + ":" + config.key());
  }
  return arguments;
}

std::string find_cli_executable() {
  if (const char* variable = std::getenv("GEMMFORGE_CLI"); variable != nullptr && *variable != '\0') {
    if (is_executable(variable)) return variable;
    throw NotFoundError(fmt::format(
        "GEMMFORGE_CLI is '{}', which is not an executable file; point it at the {} tool or unset it",
        variable, kCliName));
  }
  std::vector<std::string> tried;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::string beside = (self.parent_path() / kCliName).string();
    if (is_executable(beside)) return beside;
    tried.push_back(beside);
  }
  // The build tree before the installed tool: while the build tree exists, its tool is the one built with
  // this library, and an older installed one may lack the options used here.
#ifdef GEMMFORGE_CLI_BUILD_PATH
  if (is_executable(GEMMFORGE_CLI_BUILD_PATH)) return GEMMFORGE_CLI_BUILD_PATH;
  tried.push_back(GEMMFORGE_CLI_BUILD_PATH);
#endif
#ifdef GEMMFORGE_CLI_INSTALL_PATH
  if (is_executable(GEMMFORGE_CLI_INSTALL_PATH)) return GEMMFORGE_CLI_INSTALL_PATH;
  tried.push_back(GEMMFORGE_CLI_INSTALL_PATH);
#endif
  throw NotFoundError(fmt::format(
      "cannot find the {} tool that tunes problems at first use (looked at {}); install it beside the "
      "application or set GEMMFORGE_CLI to its path",
      kCliName, fmt::join(tried, ", ")));
}

unsigned background_tune_threads() {
  return std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u);
}

std::unique_ptr<TuneJob> start_tune_process(const std::vector<std::string>& argv) {
  tuner::ChildProcess process = tuner::ChildProcess::spawn(argv);
  spdlog::debug("first-use tuning: started {} (pid {})", fmt::join(argv, " "), process.pid());
  const std::string name = argv.size() > 1 && std::filesystem::path(argv[0]).filename() == kCliName
                               ? fmt::format("{} {}", kCliName, argv[1])
                               : std::filesystem::path(argv.front()).filename().string();
  return std::make_unique<ProcessTuneJob>(std::move(process), name);
}

}  // namespace gemmforge::runtime
