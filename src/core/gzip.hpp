// Reading gzip-compressed files: the shipped exports are kept as NAME.json.gz (db/tuned/), and a folder of
// results (GEMMFORGE_TUNED_DIR, `gemmforge bundle --results`) may hold them so.
#pragma once

#include <string>

namespace gemmforge {

/// The contents of the gzip data `bytes`, its members one after another as `gzip -d` gives them. Throws
/// InvalidArgumentError naming `origin` for data that is not gzip, is damaged or ends early.
std::string gunzip(const std::string& bytes, const std::string& origin);

}  // namespace gemmforge
