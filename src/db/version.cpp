// The version string; src/db/CMakeLists.txt passes the CMake project version as GEMMFORGE_VERSION.
#include "db/version.hpp"

namespace gemmforge::db {

const char* gemmforge_version() noexcept {
#ifdef GEMMFORGE_VERSION
  return GEMMFORGE_VERSION;
#else
  return "0.1.0";
#endif
}

}  // namespace gemmforge::db
