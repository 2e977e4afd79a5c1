// Fixtures shared by the tuner's unit and GPU tests: a temporary folder, the faulty test template ready
// for a worker to load, and the path of a built program.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/template_library.hpp"
#include "temp_folder.hpp"

namespace gemmforge::tuner::fixtures {

/// A fresh folder under the system's temp dir, removed with its contents.
using test_support::TempFolder;

/// tests/data/<name>, found through $GEMMFORGE_TEST_DATA, the source tree the tests were built from, or
/// the current folder and its parents (a GPU machine runs the tests from a copy of the repository).
inline std::string test_data(const std::string& name) {
  namespace fs = std::filesystem;
  if (const char* folder = std::getenv("GEMMFORGE_TEST_DATA"); folder != nullptr && *folder != '\0') {
    return (fs::path(folder) / name).string();
  }
#ifdef GEMMFORGE_SOURCE_DIR
  if (fs::path built = fs::path(GEMMFORGE_SOURCE_DIR) / "tests" / "data" / name; fs::exists(built)) {
    return built.string();
  }
#endif
  for (fs::path dir = fs::current_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::path candidate = dir / "tests" / "data" / name; fs::exists(candidate)) return candidate.string();
    if (dir == dir.root_path()) break;
  }
  throw std::runtime_error("tests/data/" + name +
                           " not found; run from the repository or set GEMMFORGE_TEST_DATA");
}

/// Writes the faulty test template (tests/data/faulty_templates) and the built-in headers it includes into
/// `folder`, so that TemplateLibrary::from_directory and a worker started with --templates both load it.
inline std::string write_faulty_templates(const TempFolder& folder) {
  namespace fs = std::filesystem;
  const fs::path target = folder.path() / "faulty_templates";
  fs::create_directories(target);
  for (const auto& entry : fs::directory_iterator(test_data("faulty_templates"))) {
    fs::copy_file(entry.path(), target / entry.path().filename(), fs::copy_options::overwrite_existing);
  }
  const TemplateLibrary builtin = TemplateLibrary::builtin();
  for (const auto& [name, text] : builtin.headers()) {
    std::ofstream(target / name, std::ios::binary) << text;
  }
  return target.string();
}

}  // namespace gemmforge::tuner::fixtures
