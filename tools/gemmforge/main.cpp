// gemmforge: tune GEMM kernels per GPU and problem, query and serve the best, benchmark against cuBLAS.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_common.hpp"
#include "db/exchange.hpp"
#include "db/schema.hpp"
#include "db/version.hpp"
#include "gemmforge/error.hpp"

namespace {

const std::vector<std::string> kLogLevels = {"trace", "debug", "info", "warn", "error", "off"};

std::string version_text() {
  return fmt::format("gemmforge {} (database schema version {}, export format version {})",
                     gemmforge::db::gemmforge_version(), gemmforge::db::builtin_migrations().back().version,
                     gemmforge::db::kExportFormatVersion);
}

// The first word of the command line that is not an option of gemmforge itself: the command's name.
std::string command_word(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--log-level") {
      ++i;  // its value
      continue;
    }
    if (!word.empty() && word[0] == '-') continue;
    return word;
  }
  return {};
}

// CLI11 says "A subcommand is required" or "The following argument was not expected"; a user who typed
// a command gemmforge does not have wants to hear which commands there are.
int unknown_command(const std::string& word, const std::vector<gemmforge::cli::Command>& commands) {
  std::vector<std::string> names;
  for (const gemmforge::cli::Command& command : commands) names.push_back(command.app->get_name());
  std::string suggestion;
  for (const std::string& name : names) {
    if (name.rfind(word.substr(0, 3), 0) == 0 && word.size() >= 3)
      suggestion = fmt::format(" (did you mean '{}'?)", name);
  }
  if (word.empty()) {
    std::fprintf(stderr, "gemmforge: a command is required: %s; see gemmforge --help\n",
                 fmt::format("{}", fmt::join(names, ", ")).c_str());
  } else {
    std::fprintf(stderr,
                 "gemmforge: '%s' is not a gemmforge command%s; the commands are %s; see gemmforge --help\n",
                 word.c_str(), suggestion.c_str(), fmt::format("{}", fmt::join(names, ", ")).c_str());
  }
  return gemmforge::cli::kExitInvalid;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gemmforge;
  CLI::App app{"gemmforge: run-time generated, autotuned GEMM kernels"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text(),
                       "Print the version of gemmforge, its database schema and its "
                       "export format, and exit");
  std::string log_level = "warn";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str()
      ->check(cli::one_of(kLogLevels));
  app.footer(cli::exit_status_help());

  const std::vector<cli::Command> commands = cli::make_commands(app);
  bool help_or_version = false;
  for (int i = 1; i < argc; ++i) {
    help_or_version = help_or_version || std::strcmp(argv[i], "--help") == 0 ||
                      std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--version") == 0;
  }
  if (!help_or_version) {
    const std::string word = command_word(argc, argv);
    bool known = false;
    for (const cli::Command& command : commands) known = known || command.app->check_name(word);
    if (!known) return unknown_command(word, commands);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and version exit with 0; every mistake on the command line with the one status of bad input.
    const int status = app.exit(e);
    return status == 0 ? cli::kExitOk : cli::kExitInvalid;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  try {
    for (const cli::Command& command : commands) {
      if (command.app->parsed()) return command.run();
    }
    return cli::kExitInternal;
  } catch (const Error& e) {
    std::fprintf(stderr, "gemmforge: %s: %s\n", to_string(e.kind()), e.what());
    return cli::exit_status(e.kind());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemmforge: internal error: %s\n", e.what());
    return cli::kExitInternal;
  }
}
