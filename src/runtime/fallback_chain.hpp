// Problem -> config: the fallback chain of the serving journey. Exact match in the user's database ->
// nearest tuned problem of the same GPU model -> that model's default config -> the results shipped
// inside gemmforge (exact, nearest, default again) -> a heuristic valid on any supported GPU. Every
// answer is re-checked against its manifest for the asked problem and device before it is returned;
// one that fails is passed over. Needs no GPU: the device may carry nominal limits.
#pragma once

#include <optional>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "core/template_library.hpp"
#include "runtime/selection.hpp"
#include "runtime/tuned_source.hpp"

namespace gemmforge::runtime {

class FallbackChain {
 public:
  /// Either source may be null (no user database; shipped results turned off).
  FallbackChain(const TemplateLibrary& library, TunedSource* user, TunedSource* shipped);

  /// Always answers for a problem some template computes on the device; throws ArchMismatchError or
  /// NotFoundError otherwise (see heuristic_selection).
  Selection select(const DeviceInfo& device, const KernelProblem& problem) const;

 private:
  /// The level of `source` that answers first, each candidate re-checked; nullopt if none does.
  std::optional<Selection> from_source(TunedSource& source, const DeviceInfo& device,
                                       const KernelProblem& problem, bool shipped) const;
  std::optional<Selection> exact(TunedSource& source, const DeviceInfo& device,
                                 const KernelProblem& problem) const;
  std::optional<Selection> nearest(TunedSource& source, const DeviceInfo& device,
                                   const KernelProblem& problem) const;
  std::optional<Selection> device_default(TunedSource& source, const DeviceInfo& device,
                                          const KernelProblem& problem) const;
  /// check_config, logging why a candidate is passed over.
  std::optional<CheckedConfig> usable(const std::string& template_name, const std::string& config_key,
                                      const DeviceInfo& device, const KernelProblem& problem) const;

  const TemplateLibrary& library_;
  TunedSource* user_;
  TunedSource* shipped_;
};

}  // namespace gemmforge::runtime
