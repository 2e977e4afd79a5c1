// Finding a request's template in the worker and checking it is the code the tuner compiled.
#include "worker_templates.hpp"

#include <fmt/format.h>

#include "gemmforge/error.hpp"

namespace gemmforge::worker {

WorkerTemplates::WorkerTemplates(const std::string& folder) {
  if (!folder.empty()) folder_ = TemplateLibrary::from_directory(folder);
}

const KernelTemplate& WorkerTemplates::get(const std::string& name, const std::string& hash) const {
  const KernelTemplate* found = folder_ ? folder_->find(name) : nullptr;
  if (found == nullptr) found = &TemplateLibrary::instance().get(name);  // throws NotFoundError
  if (found->hash != hash) {
    throw InvalidArgumentError(fmt::format(
        "template {} differs between the tuner (source hash {}) and the worker (source hash {}, from {}); "
        "the worker would measure other code than was compiled. Use a gemmforge-worker built from the same "
        "tree as gemmforge, and the same GEMMFORGE_TEMPLATE_DIR for both",
        name, hash, found->hash, describe()));
  }
  return *found;
}

std::string WorkerTemplates::describe() const {
  const std::string builtin = TemplateLibrary::instance().origin();
  return folder_ ? fmt::format("{} over {}", folder_->origin(), builtin) : builtin;
}

}  // namespace gemmforge::worker
