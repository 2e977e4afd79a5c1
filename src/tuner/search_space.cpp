// The flat numbering of every template's candidates for one problem.
#include <fmt/format.h>

#include <algorithm>

#include "gemmforge/error.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

SearchSpace::SearchSpace(std::vector<Space> spaces, DeviceInfo device, KernelProblem problem)
    : spaces_(std::move(spaces)), device_(std::move(device)), problem_(problem) {
  size_t first = 0;
  for (const Space& space : spaces_) {
    offsets_.push_back(first);
    first += space.size();
  }
  offsets_.push_back(first);
}

size_t SearchSpace::space_of(size_t i) const {
  if (i >= size()) {
    throw InvalidArgumentError(fmt::format("candidate {} is outside a search space of {}", i, size()));
  }
  // The last space starting at or before i: an empty space shares its offset with the next one.
  const auto after = std::upper_bound(offsets_.begin(), offsets_.end() - 1, i);
  return static_cast<size_t>(after - offsets_.begin()) - 1;
}

int64_t SearchSpace::find(const Config& config) const {
  for (size_t s = 0; s < spaces_.size(); ++s) {
    if (spaces_[s].kernel_template().manifest.name() != config.template_name()) continue;
    int64_t local = -1;
    try {
      local = spaces_[s].find(config);
    } catch (const InvalidArgumentError&) {
      return -1;  // parameters the template does not have, or values outside its domains
    }
    if (local >= 0) return static_cast<int64_t>(offsets_[s]) + local;
  }
  return -1;
}

}  // namespace gemmforge::tuner
