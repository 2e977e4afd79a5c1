// gemmforge-worker: started by `gemmforge tune` to load, verify and time candidates in a process of their
// own. Speaks framed requests on stdin and replies on stdout (see src/tuner/worker_messages.hpp).
#include <fcntl.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "gemmforge/error.hpp"
#include "gpu_backend.hpp"
#include "simulated_backend.hpp"
#include "worker_loop.hpp"
#include "worker_templates.hpp"

int main(int argc, char** argv) {
  using namespace gemmforge;
  CLI::App app{
      "gemmforge-worker: measures candidate kernels for `gemmforge tune` (not meant to be run by hand)"};
  int device = 0;
  std::string templates_folder;
  std::string log_level = "warn";
  bool simulate = false;
  app.add_option("--device", device, "CUDA device ordinal")->capture_default_str();
  app.add_option("--templates", templates_folder, "Folder of templates known besides the built-in ones");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();
  app.add_flag("--simulate", simulate, "Answer without a GPU, as scripted by each request's payload (tests)");
  CLI11_PARSE(app, argc, argv);

  if (::isatty(STDIN_FILENO)) {
    std::fprintf(stderr,
                 "gemmforge-worker reads framed requests from gemmforge tune; it is not interactive\n");
    return worker::kExitUsage;
  }
  // The protocol gets a descriptor of its own, and stdout becomes stderr: device printf, library chatter
  // or a stray print can then never corrupt a reply.
  const int channel = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (channel < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::perror("gemmforge-worker: cannot set up its output channel");
    return worker::kExitInternal;
  }
  auto logger = spdlog::stderr_logger_mt("worker");
  logger->set_pattern("[%H:%M:%S.%e] [%l] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));

  try {
    const worker::WorkerTemplates templates(templates_folder);
    std::unique_ptr<worker::Backend> backend;
    if (simulate) {
      backend = std::make_unique<worker::SimulatedBackend>(templates, channel, device);
    } else {
      auto gpu = std::make_unique<worker::GpuBackend>(device, templates);
      gpu->prepare();
      backend = std::move(gpu);
    }
    const int code = worker::serve(*backend, STDIN_FILENO, channel);
    // Skip destructors after a lost context: they would only log failures of a dead CUDA context.
    if (code == worker::kExitContextLost) std::_Exit(code);
    return code;
  } catch (const Error& e) {
    spdlog::error("{}", e.what());
    return worker::kExitInternal;
  }
}
