// The templates a worker can measure: its built-in library, and optionally a folder of templates (tests,
// template development) that takes precedence.
#pragma once

#include <optional>
#include <string>

#include "core/template_library.hpp"

namespace gemmforge::worker {

class WorkerTemplates {
 public:
  /// `folder` empty: the built-in library (or GEMMFORGE_TEMPLATE_DIR's, as for every gemmforge program).
  explicit WorkerTemplates(const std::string& folder);

  /// The template a request names, provided the worker's copy has the hash the tuner compiled; throws
  /// InvalidArgumentError otherwise, since measuring other code than was compiled would store lies.
  const KernelTemplate& get(const std::string& name, const std::string& hash) const;
  /// "built-in templates", or the folder and the built-in library.
  std::string describe() const;

 private:
  std::optional<TemplateLibrary> folder_;
};

}  // namespace gemmforge::worker
