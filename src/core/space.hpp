// The search space of one template for one problem on one device: every config its manifest allows,
// with the number of configs each constraint rejected.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"

namespace gemmforge {

/// Parameters pinned to fixed values ("BK" -> 8), narrowing a space before it is enumerated.
using Pins = std::map<std::string, int64_t>;

/// Parses "BK=8" into pins; throws InvalidArgumentError.
void add_pin(Pins& pins, const std::string& text);

class Space {
 public:
  /// Enumerates the template's configs valid for `problem` on `device` that its pruning rules keep,
  /// abandoning a partial config as soon as a rule over the parameters chosen so far fails. Throws
  /// InvalidArgumentError for a pin the manifest does not know or whose value lies outside the domain.
  /// With `prune` false, only validity constraints apply (every config that can run correctly).
  static Space build(const KernelTemplate& kernel_template, const DeviceInfo& device,
                     const KernelProblem& problem, const Pins& pins = {}, bool prune = true);

  const KernelTemplate& kernel_template() const { return *template_; }
  size_t size() const { return parameters_ == 0 ? 0 : indices_.size() / parameters_; }
  bool empty() const { return size() == 0; }
  Config config(size_t i) const;
  /// Value of parameter p (manifest order) in config i, without building the Config.
  int64_t value(size_t i, size_t p) const;
  /// Position of a config in this space, or -1 when it is not in it.
  int64_t find(const Config& config) const;

  /// Configs before any constraint (product of domains, after pins).
  double total() const { return total_; }
  struct Rejection {
    std::string rule;
    double count = 0;
    bool pruning = false;  ///< a search heuristic, not a validity constraint
  };
  /// Configs left out, by the first rule they broke: constraints in manifest order, then pruning rules.
  const std::vector<Rejection>& rejections() const { return rejections_; }

 private:
  const KernelTemplate* template_ = nullptr;
  size_t parameters_ = 0;
  std::vector<uint8_t> indices_;  // per config, the domain index of each parameter
  double total_ = 0;
  std::vector<Rejection> rejections_;
};

}  // namespace gemmforge
