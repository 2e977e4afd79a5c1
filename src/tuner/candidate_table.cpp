// The footprint and parameter levels of every candidate, and the analytic estimate of all of them.
#include "tuner/candidate_table.hpp"

#include <algorithm>

#include "model/analytic.hpp"

namespace gemmforge::tuner {

CandidateTable::CandidateTable(const SearchSpace& space) {
  footprints_.reserve(space.size());
  space_index_.reserve(space.size());
  level_offsets_.reserve(space.size());
  for (size_t s = 0; s < space.spaces().size(); ++s) {
    const Space& template_space = space.spaces()[s];
    const Manifest& manifest = template_space.kernel_template().manifest;
    const auto& parameters = manifest.parameters();
    parameter_counts_.push_back(parameters.size());
    const model::FootprintReader reader(manifest, space.device(), space.problem());
    for (size_t i = 0; i < template_space.size(); ++i) {
      level_offsets_.push_back(levels_.size());
      space_index_.push_back(static_cast<uint32_t>(s));
      for (size_t p = 0; p < parameters.size(); ++p) {
        const auto& domain = parameters[p].values;
        const int64_t value = template_space.value(i, p);
        levels_.push_back(
            static_cast<uint8_t>(std::find(domain.begin(), domain.end(), value) - domain.begin()));
      }
      footprints_.push_back(reader.read(template_space.config(i)));
    }
  }
}

std::vector<double> estimate_all(const SearchSpace& space, const CandidateTable& table) {
  std::vector<double> times(table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const Footprint& f = table.footprint(i);
    times[i] = model::estimate(space.device(), space.problem(), f, f.est_regs).time_ms;
  }
  return times;
}

}  // namespace gemmforge::tuner
