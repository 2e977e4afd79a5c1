// Where a tune starts: the configs the runtime would serve a problem nobody tuned.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"

namespace gemmforge::runtime {

struct ServingModel;

/// How many of the serving model's best-ranked configs a tune measures first: nvMatmulHeuristics reports
/// 96-99% of the best within 8 to 16 ranked configs, and the first is what serves the problem untuned.
inline constexpr size_t kModelStarts = 8;

/// How many of a problem's fastest configs of each template, measured with an earlier source of the template
/// and shipped, a tune measures before the model's: a retune after a template changes starts where the last
/// tune ended.
inline constexpr size_t kRetiredStarts = 2;

/// The first `count` configs of `model`'s ranking for `problem`.
std::vector<Config> model_ranking(const ServingModel& model, const KernelProblem& problem, size_t count);

/// The serving model's first `count` configs for a problem on a device, ranked as for a problem nobody
/// tuned (`gemmforge query --candidates`), after the problem's shipped configs of retired template sources
/// (kRetiredStarts of each template), fitted on the results in the database or export at `database`
/// (the default database when empty) and the shipped ones. The model is fitted once per GPU model, so
/// later calls rank on what the first fit read. The models of the GPUs in `ahead` start fitting at once, on
/// threads of their own (the database must exist then), so that a tune's first search, which waits for its
/// workers to start anyway, finds them ready; another GPU model's is fitted at its first call. Thread-safe;
/// a source or a fit that fails throws from the call. A tune that measures these first
/// (tuner::measure_first) ends no slower than what served the problem before.
std::function<std::vector<Config>(const DeviceInfo&, const KernelProblem&)> model_first_candidates(
    const TemplateLibrary& library, std::string database, size_t count,
    const std::vector<DeviceInfo>& ahead = {});

}  // namespace gemmforge::runtime
