// Tuning results shipped inside gemmforge: db/tuned/*.json, exported from tuning runs on real GPUs and
// embedded at build time. They answer when the user's database knows nothing of their GPU model.
#pragma once

#include <map>
#include <string>

#include "core/template_library.hpp"
#include "db/database.hpp"
#include "runtime/tuned_source.hpp"

namespace gemmforge::runtime {

/// JSON exports by file name.
using ResultFiles = std::map<std::string, std::string>;

/// The files embedded at build time (none when db/tuned/ held none).
ResultFiles builtin_result_files();
/// Every *.json file of a folder; throws NotFoundError when it is not a folder.
ResultFiles result_files_in(const std::string& folder);

/// A private in-memory database holding every file, each imported after validation against the
/// manifests (where files disagree, the faster result wins). Throws InvalidArgumentError naming the file
/// and the fault for a file that is not a valid export.
db::Database load_results(const ResultFiles& files, const std::string& origin,
                          const TemplateLibrary& library);

/// The shipped results of this process, loaded on first use: from the folder named by
/// GEMMFORGE_TUNED_DIR when it is set (for developing and testing them), else the built-in files.
TunedSource& shipped_results();

}  // namespace gemmforge::runtime
