// Choosing and opening the database layers of a process.
#include "runtime/database_layers.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "gemmforge/error.hpp"

namespace gemmforge::runtime {

namespace {

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  return std::filesystem::path(a).lexically_normal() == std::filesystem::path(b).lexically_normal();
}

}  // namespace

DatabaseLayers DatabaseLayers::open(const Options& options) {
  DatabaseLayers layers;
  layers.path_ = options.database_path.empty() ? db::Database::default_path() : options.database_path;
  db::OpenOptions primary_options{db::Access::kAuto, true, options.writable_check};
  if (!options.writable) primary_options = {db::Access::kReadOnly, false, options.writable_check};
  std::unique_ptr<SharedDatabase> primary;
  try {
    primary = std::make_unique<SharedDatabase>(db::Database::open(layers.path_, primary_options));
  } catch (const NotFoundError&) {
    if (options.writable) throw;  // only a read-only opening declines to create the file
  }

  std::vector<std::unique_ptr<SharedDatabase>> read_only;
  if (primary && primary->read_only()) {
    const std::string reason = primary->read_only_reason();
    read_only.push_back(std::move(primary));
    std::string cache;
    try {
      cache = db::Database::cache_path();
    } catch (const DatabaseError&) {
    }
    if (options.writable) {
      if (!cache.empty() && !same_file(cache, layers.path_)) {
        try {
          primary = std::make_unique<SharedDatabase>(
              db::Database::open(cache, {db::Access::kReadWrite, true, options.writable_check}));
        } catch (const Error& e) {
          spdlog::warn(
              "{} is read-only ({}) and the per-user database cannot be written either ({}): problems "
              "served untuned and compiled kernels are not recorded",
              layers.path_, reason, e.what());
        }
      } else {
        spdlog::warn(
            "{} is read-only ({}): problems served untuned and compiled kernels are not recorded; set "
            "GEMMFORGE_DB to a writable file to record them",
            layers.path_, reason);
      }
    }
  }

  std::string site = options.site_path;
  if (site.empty()) {
    if (const char* variable = std::getenv("GEMMFORGE_SITE_DB"); variable != nullptr) site = variable;
  }
  if (!site.empty() && !same_file(site, layers.path_)) {
    try {
      read_only.push_back(std::make_unique<SharedDatabase>(
          db::Database::open(site, {db::Access::kReadOnly, false, options.writable_check})));
    } catch (const Error& e) {
      spdlog::warn("the site database {} is not consulted: {}", site, e.what());
    }
  }

  std::string label;
  if (primary) {
    layers.writable_ = primary.get();
    layers.lookup_.push_back(primary.get());
    label = fmt::format("database {}", primary->path());
    layers.owned_.push_back(std::move(primary));
  }
  for (auto& layer : read_only) {
    layers.lookup_.push_back(layer.get());
    label += fmt::format("{}{} database {}", label.empty() ? "" : ", then ", "read-only", layer->path());
    layers.owned_.push_back(std::move(layer));
  }
  layers.label_ = label.empty() ? "no database" : label;
  return layers;
}

}  // namespace gemmforge::runtime
