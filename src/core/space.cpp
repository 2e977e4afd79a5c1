// Pruned enumeration of a template's parameter space.
#include "core/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "gemmforge/error.hpp"

namespace gemmforge {

void add_pin(Pins& pins, const std::string& text) {
  const size_t equals = text.find('=');
  int64_t value = 0;
  const char* first = text.data() + equals + 1;
  const char* last = text.data() + text.size();
  if (equals == std::string::npos || equals == 0 || std::from_chars(first, last, value).ptr != last ||
      first == last) {
    throw InvalidArgumentError(fmt::format("pin '{}' must be NAME=INTEGER, e.g. BK=8", text));
  }
  pins[text.substr(0, equals)] = value;
}

namespace {

// Depth-first walk over the parameters in manifest order. After choosing parameter d, the derived values
// and constraints whose last parameter is d are evaluated; a failure prunes every completion at once.
class Enumerator {
 public:
  Enumerator(const Manifest& manifest, const DeviceInfo& device, const KernelProblem& problem,
             std::vector<std::vector<uint8_t>> allowed, bool prune)
      : manifest_(manifest),
        allowed_(std::move(allowed)),
        symbols_(manifest.symbol_count(), 0),
        choice_(manifest.parameters().size(), 0) {
    for (const Constraint& c : manifest.constraints()) rules_.push_back(&c);
    if (prune) {
      for (const Constraint& c : manifest.pruning()) rules_.push_back(&c);
    }
    rejected_.assign(rules_.size(), 0);
    manifest.bind_context(symbols_.data(), &device, &problem);
    const int parameters = static_cast<int>(manifest.parameters().size());
    derived_at_.resize(parameters + 1);
    constraints_at_.resize(parameters + 1);
    // Level 0 holds what depends on no parameter; level d + 1 what becomes known with parameter d.
    for (size_t i = 0; i < manifest.derived().size(); ++i) {
      derived_at_[manifest.derived()[i].value.last_parameter + 1].push_back(i);
    }
    for (size_t i = 0; i < rules_.size(); ++i)
      constraints_at_[rules_[i]->condition.last_parameter + 1].push_back(i);
    // What remains below each depth, to count a pruned subtree without walking it.
    remaining_.assign(parameters + 1, 1.0);
    for (int d = parameters - 1; d >= 0; --d) remaining_[d] = remaining_[d + 1] * allowed_[d].size();
  }

  void run(std::vector<uint8_t>& out) {
    out_ = &out;
    if (settle(0)) walk(0);
  }

  const std::vector<const Constraint*>& rules() const { return rules_; }
  const std::vector<double>& rejected() const { return rejected_; }

 private:
  // Evaluates level `level`; false (and the subtree counted) if a constraint fails.
  bool settle(int level) {
    for (size_t i : derived_at_[level]) {
      symbols_[manifest_.derived_slot(i)] = manifest_.derived()[i].value.evaluate(symbols_.data());
    }
    for (size_t i : constraints_at_[level]) {
      if (rules_[i]->condition.evaluate(symbols_.data()) == 0) {
        rejected_[i] += remaining_[level];
        return false;
      }
    }
    return true;
  }

  void walk(int depth) {
    if (depth == static_cast<int>(choice_.size())) {
      out_->insert(out_->end(), choice_.begin(), choice_.end());
      return;
    }
    const Parameter& parameter = manifest_.parameters()[depth];
    for (uint8_t index : allowed_[depth]) {
      choice_[depth] = index;
      symbols_[depth] = parameter.values[index];
      if (settle(depth + 1)) walk(depth + 1);
    }
  }

  const Manifest& manifest_;
  std::vector<const Constraint*> rules_;  // constraints, then pruning rules
  std::vector<std::vector<uint8_t>> allowed_;
  std::vector<int64_t> symbols_;
  std::vector<uint8_t> choice_;
  std::vector<std::vector<size_t>> derived_at_;
  std::vector<std::vector<size_t>> constraints_at_;
  std::vector<double> remaining_;
  std::vector<double> rejected_;
  std::vector<uint8_t>* out_ = nullptr;
};

}  // namespace

Space Space::build(const KernelTemplate& kernel_template, const DeviceInfo& device,
                   const KernelProblem& problem, const Pins& pins, bool prune) {
  const Manifest& manifest = kernel_template.manifest;
  for (const auto& [name, value] : pins) {
    if (manifest.find_parameter(name) == nullptr) {
      throw InvalidArgumentError(
          fmt::format("template {} has no parameter '{}' to pin", manifest.name(), name));
    }
  }
  std::vector<std::vector<uint8_t>> allowed;
  Space space;
  space.template_ = &kernel_template;
  space.parameters_ = manifest.parameters().size();
  space.total_ = 1;
  for (const Parameter& p : manifest.parameters()) {
    if (p.values.size() > 255)
      throw InvalidArgumentError(fmt::format("parameter {} has over 255 values", p.name));
    std::vector<uint8_t> indices;
    auto pin = pins.find(p.name);
    for (size_t i = 0; i < p.values.size(); ++i) {
      if (pin == pins.end() || pin->second == p.values[i]) indices.push_back(static_cast<uint8_t>(i));
    }
    if (indices.empty()) {
      throw InvalidArgumentError(fmt::format("{}={} is outside the domain of {}: {}", p.name, pin->second,
                                             p.name, fmt::join(p.values, ", ")));
    }
    space.total_ *= static_cast<double>(indices.size());
    allowed.push_back(std::move(indices));
  }
  Enumerator enumerator(manifest, device, problem, std::move(allowed), prune);
  enumerator.run(space.indices_);
  for (size_t i = 0; i < enumerator.rules().size(); ++i) {
    if (enumerator.rejected()[i] > 0) {
      space.rejections_.push_back(
          {enumerator.rules()[i]->name, enumerator.rejected()[i], i >= manifest.constraints().size()});
    }
  }
  return space;
}

int64_t Space::value(size_t i, size_t p) const {
  return template_->manifest.parameters()[p].values[indices_[i * parameters_ + p]];
}

Config Space::config(size_t i) const {
  Config::Values values;
  const auto& parameters = template_->manifest.parameters();
  for (size_t p = 0; p < parameters_; ++p) values.emplace_back(parameters[p].name, value(i, p));
  return Config(template_->manifest.name(), std::move(values));
}

int64_t Space::find(const Config& config) const {
  const Config normalized = template_->manifest.normalize(config);
  for (size_t i = 0; i < size(); ++i) {
    bool same = true;
    for (size_t p = 0; p < parameters_ && same; ++p) same = value(i, p) == normalized.values()[p].second;
    if (same) return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace gemmforge
