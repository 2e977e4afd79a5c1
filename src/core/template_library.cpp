// Loading kernel templates from the binary or from a development folder.
#include "core/template_library.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "core/embedded.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {

std::string Hasher::hex() const {
  return fmt::format("{:016x}", state_);
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Names of the library headers `source` includes ("#include "x.cuh""), directly or through other headers,
// in name order.
std::set<std::string> included_headers(const std::string& source, const TemplateLibrary::Headers& headers) {
  std::set<std::string> found;
  std::vector<const std::string*> pending = {&source};
  while (!pending.empty()) {
    const std::string& text = *pending.back();
    pending.pop_back();
    for (size_t at = text.find("#include"); at != std::string::npos; at = text.find("#include", at + 1)) {
      const size_t open = text.find('"', at);
      const size_t line_end = text.find('\n', at);
      if (open == std::string::npos || open > line_end) continue;
      const size_t close = text.find('"', open + 1);
      if (close == std::string::npos || close > line_end) continue;
      const std::string name = text.substr(open + 1, close - open - 1);
      const auto header = headers.find(name);
      if (header != headers.end() && found.insert(name).second) pending.push_back(&header->second);
    }
  }
  return found;
}

}  // namespace

TemplateLibrary TemplateLibrary::from_files(const std::map<std::string, std::string>& files,
                                            const std::string& origin) {
  TemplateLibrary library;
  library.origin_ = origin;
  for (const auto& [path, content] : files) {
    const std::string name = std::filesystem::path(path).filename().string();
    if (ends_with(name, ".cuh")) library.headers_[name] = content;
    if (ends_with(name, ".cu")) library.sources_[name] = content;
  }
  // The headers a template includes, directly or through another header, are part of its identity: editing
  // one must invalidate its cached cubins (and only those of the templates that include it).
  for (const auto& [path, content] : files) {
    if (!ends_with(path, ".json")) continue;
    auto entry = std::make_shared<KernelTemplate>();
    entry->manifest = Manifest::parse(content, origin + "/" + path);
    auto source = library.sources_.find(entry->manifest.source_file());
    if (source == library.sources_.end()) {
      throw InvalidArgumentError(fmt::format("{}/{}: source '{}' not found beside the manifest", origin, path,
                                             entry->manifest.source_file()));
    }
    entry->source = source->second;
    Hasher hash;
    for (const std::string& name : included_headers(entry->source, library.headers_))
      hash.add(name).add(library.headers_.at(name));
    hash.add(entry->source).add(content);
    if (entry->manifest.prepares_operands()) {
      if (library.sources_.count(kOperandPassesSource) == 0) {
        throw InvalidArgumentError(
            fmt::format("{}/{}: template '{}' runs the operand passes, but {} is missing", origin, path,
                        entry->manifest.name(), kOperandPassesSource));
      }
      hash.add(kOperandPassesSource).add(library.support_hash(kOperandPassesSource));
    }
    entry->hash = hash.hex();
    const std::string template_name = entry->manifest.name();
    if (!library.templates_.emplace(template_name, std::move(entry)).second) {
      throw InvalidArgumentError(fmt::format("{}: two manifests name template '{}'", origin, template_name));
    }
  }
  return library;
}

TemplateLibrary TemplateLibrary::builtin() {
  std::map<std::string, std::string> files;
  for (std::size_t i = 0; i < embedded::kTemplatesCount; ++i) {
    const embedded::File& file = embedded::kTemplates[i];
    files[file.path] = std::string(reinterpret_cast<const char*>(file.data), file.size());
  }
  return from_files(files, "built-in templates");
}

TemplateLibrary TemplateLibrary::from_directory(const std::string& folder) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder)) {
    throw NotFoundError(fmt::format("template folder '{}' does not exist", folder));
  }
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() ||
        !(ends_with(name, ".json") || ends_with(name, ".cu") || ends_with(name, ".cuh"))) {
      continue;
    }
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    files[name] = text.str();
  }
  return from_files(files, folder);
}

const TemplateLibrary& TemplateLibrary::instance() {
  static const TemplateLibrary library = [] {
    if (const char* folder = std::getenv("GEMMFORGE_TEMPLATE_DIR"); folder != nullptr && *folder != '\0') {
      return from_directory(folder);
    }
    return builtin();
  }();
  return library;
}

const KernelTemplate* TemplateLibrary::find(const std::string& name) const {
  auto it = templates_.find(name);
  return it == templates_.end() ? nullptr : it->second.get();
}

const KernelTemplate& TemplateLibrary::get(const std::string& name) const {
  if (const KernelTemplate* found = find(name)) return *found;
  std::string known;
  for (const auto& [key, value] : templates_) known += (known.empty() ? "" : ", ") + key;
  throw NotFoundError(fmt::format("unknown template '{}' in {}; known: {}", name, origin_, known));
}

std::vector<const KernelTemplate*> TemplateLibrary::all() const {
  std::vector<const KernelTemplate*> out;
  for (const auto& [name, entry] : templates_) out.push_back(entry.get());
  return out;
}

const std::string& TemplateLibrary::support_source(const std::string& file) const {
  auto it = sources_.find(file);
  if (it == sources_.end())
    throw NotFoundError(fmt::format("support source '{}' not found in {}", file, origin_));
  return it->second;
}

std::string TemplateLibrary::support_hash(const std::string& file) const {
  const std::string& source = support_source(file);
  Hasher hash;
  for (const std::string& name : included_headers(source, headers_)) hash.add(name).add(headers_.at(name));
  return hash.add(source).hex();
}

}  // namespace gemmforge
