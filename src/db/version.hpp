// The gemmforge version string stamped on runs, trials and exports.
#pragma once

namespace gemmforge::db {

/// GEMMFORGE_VERSION as the build defines it (the CMake project version), else "0.1.0".
const char* gemmforge_version() noexcept;

}  // namespace gemmforge::db
