// A child process owned by the tuner: started with a socket on its stdin/stdout and a pipe from its
// stderr, and always reaped. Nothing here knows about the worker protocol.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gemmforge::tuner {

/// How a child process ended.
struct ExitStatus {
  int code = -1;   ///< exit code when it exited, else -1
  int signal = 0;  ///< the signal that ended it, else 0
  bool ok() const { return signal == 0 && code == 0; }
  /// "exited with code 4", "killed by signal 11 (Segmentation fault)".
  std::string describe() const;
};

/// Move-only. The child dies with the thread that started it (PR_SET_PDEATHSIG), so a tuner killed by
/// SIGKILL leaves no worker behind; the destructor kills and reaps a child still running.
class ChildProcess {
 public:
  ChildProcess() = default;
  /// Starts argv[0] (a path, not searched in PATH). Throws Error naming the executable and the reason
  /// when it cannot be started (missing, not executable, fork failed).
  static ChildProcess spawn(const std::vector<std::string>& argv);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  /// True from spawn until the child has been reaped.
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  /// The parent's end of the socket that is the child's stdin and stdout (non-blocking).
  int channel() const { return channel_; }
  /// The read end of the child's stderr (non-blocking); -1 once closed.
  int error_output() const { return stderr_; }
  void close_error_output();

  /// Reaps the child if it has ended; nullopt while it runs.
  std::optional<ExitStatus> try_wait();
  /// Waits up to `seconds` for the child to end, then kills it; returns how it ended.
  ExitStatus wait_or_kill(double seconds);
  /// SIGKILL, then reaps; returns how it ended (a child that had already ended keeps its own status).
  ExitStatus kill();

 private:
  void release() noexcept;

  pid_t pid_ = -1;
  int channel_ = -1;
  int stderr_ = -1;
};

}  // namespace gemmforge::tuner
