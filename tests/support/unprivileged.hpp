// Running a command as a user without privileges. Root may write any file whatever its permissions, so a
// test of read-only files must drop root to mean anything; where it cannot, it skips and says why.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace gemmforge::test_support {

/// The user id of "nobody" on Debian and most Linux systems.
inline constexpr int kNobody = 65534;

/// A prefix that runs a shell command as an unprivileged user: empty when the test is not root already,
/// setpriv to "nobody" when root and setpriv exists, nullopt when neither.
inline std::optional<std::string> unprivileged_prefix() {
  if (::geteuid() != 0) return std::string();
  if (std::system("command -v setpriv > /dev/null 2>&1") == 0) {
    return "setpriv --reuid=" + std::to_string(kNobody) + " --regid=" + std::to_string(kNobody) +
           " --clear-groups ";
  }
  return std::nullopt;
}

/// Why unprivileged_prefix() is nullopt, for GTEST_SKIP.
inline const char* kNoUnprivilegedUser =
    "running as root without setpriv: root writes read-only files anyway, so nothing read-only can be tested";

}  // namespace gemmforge::test_support
