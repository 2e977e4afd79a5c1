// The `gemmforge tune` process that tunes one problem at first use: the settings (RuntimeOptions and the
// environment), where the tool is, the command line that states exactly the problem, and the process
// watched as a TuneJob.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/problem.hpp"
#include "gemmforge/gemmforge.hpp"
#include "runtime/first_use_tuner.hpp"

namespace gemmforge::runtime {

struct FirstUseSettings {
  bool enabled = false;
  size_t evaluations = 24;
};

/// The first-use settings of `options` with the environment applied: GEMMFORGE_TUNE_AT_FIRST_USE=1 or =0
/// turns tuning on or off, GEMMFORGE_TUNE_BUDGET=N (a positive integer) sets the evaluations per problem.
/// Other values are ignored with a warning.
FirstUseSettings first_use_settings(const RuntimeOptions& options);

/// What the tunes of one runtime share.
struct TuneCommand {
  std::string executable;   ///< the gemmforge tool
  std::string database;     ///< the runtime's database file
  std::string device_uuid;  ///< the GPU the runtime serves
  size_t evaluations = 24;  ///< --max-evals
  unsigned compile_threads = 1;
};

/// The command line (executable first) of `gemmforge tune` that tunes exactly `problem`: its shape, element
/// types and layout as the row-major problem it is, and each operand's alignment (which the tuner reproduces
/// with leading dimensions of its own). The search measures `first` first (--first), in their order, and
/// fits no model of its own for where to start.
std::vector<std::string> tune_arguments(const TuneCommand& command, const KernelProblem& problem,
                                        const std::vector<Config>& first = {});

/// $GEMMFORGE_CLI if set, else gemmforge beside this executable, else the one in the build tree this
/// library was built in, else the installed one. Throws NotFoundError listing the places looked at.
std::string find_cli_executable();

/// NVRTC threads of a tune in the background: half the cores, 1 to 8, so the application keeps the rest.
unsigned background_tune_threads();

/// Starts `argv` (executable first) as a child process and watches it: exit code 0 is a finished tune,
/// anything else a failure explained by the last lines the process wrote to stderr. Its output is drained
/// as it comes, so a chatty process never blocks on a full pipe. Throws Error when it cannot be started.
std::unique_ptr<TuneJob> start_tune_process(const std::vector<std::string>& argv);

}  // namespace gemmforge::runtime
