// gemmforge: tune GEMM kernels per GPU and problem, query and serve the best, benchmark against cuBLAS.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <vector>

#include "cli_common.hpp"
#include "gemmforge/error.hpp"

int main(int argc, char** argv) {
  using namespace gemmforge;
  CLI::App app{"gemmforge: run-time generated, autotuned GEMM kernels"};
  app.require_subcommand(1);
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")->capture_default_str();

  const std::vector<cli::Command> commands = cli::make_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  try {
    for (const cli::Command& command : commands) {
      if (command.app->parsed()) return command.run();
    }
    return 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "gemmforge: %s: %s\n", to_string(e.kind()), e.what());
    return e.kind() == ErrorKind::kNoDevice ? 3 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmforge: internal error: %s\n", e.what());
    return 70;
  }
}
