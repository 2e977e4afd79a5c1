// fork/exec of the worker with its standard streams wired to the parent, and reaping it.
#include "tuner/child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <utility>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

void close_fd(int& fd) noexcept {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw InternalError(fmt::format("fcntl(O_NONBLOCK) failed on a worker pipe: {}", std::strerror(errno)));
  }
}

ExitStatus decode(int status) {
  ExitStatus out;
  if (WIFEXITED(status)) out.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) out.signal = WTERMSIG(status);
  return out;
}

// Between fork and exec only async-signal-safe calls are allowed: the parent has other threads (the
// compile pool) whose locks the child inherits in whatever state they were.
[[noreturn]] void exec_child(char* const* argv, pid_t parent, int channel, int error_output, int report) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  ::dup2(channel, STDIN_FILENO);
  ::dup2(channel, STDOUT_FILENO);
  ::dup2(error_output, STDERR_FILENO);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(SIGPIPE, &default_action, nullptr);
  ::execv(argv[0], argv);
  const int error = errno;
  [[maybe_unused]] const ssize_t ignored = ::write(report, &error, sizeof(error));
  ::_exit(127);
}

}  // namespace

std::string ExitStatus::describe() const {
  if (signal != 0) {
    const char* name = ::strsignal(signal);
    return fmt::format("killed by signal {} ({})", signal, name != nullptr ? name : "unknown");
  }
  if (code >= 0) return fmt::format("exited with code {}", code);
  return "still running";
}

ChildProcess ChildProcess::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) throw InternalError("ChildProcess::spawn needs at least the executable");
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  int channel[2] = {-1, -1};
  int error_output[2] = {-1, -1};
  int report[2] = {-1, -1};  // carries errno from a failed exec; closed by a successful one
  auto close_all = [&] {
    for (int* fd : {&channel[0], &channel[1], &error_output[0], &error_output[1], &report[0], &report[1]})
      close_fd(*fd);
  };
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0 ||
      ::pipe2(error_output, O_CLOEXEC) != 0 || ::pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    close_all();
    throw InternalError(
        fmt::format("cannot create the pipes to start {}: {}", argv[0], std::strerror(error)));
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    close_all();
    throw InternalError(fmt::format("cannot start {}: fork failed: {}", argv[0], std::strerror(error)));
  }
  if (pid == 0) exec_child(args.data(), parent, channel[1], error_output[1], report[1]);

  close_fd(channel[1]);
  close_fd(error_output[1]);
  close_fd(report[1]);
  int exec_error = 0;
  ssize_t got = 0;
  do {
    got = ::read(report[0], &exec_error, sizeof(exec_error));
  } while (got < 0 && errno == EINTR);
  close_fd(report[0]);

  ChildProcess child;
  child.pid_ = pid;
  child.channel_ = channel[0];
  child.stderr_ = error_output[0];
  if (got == static_cast<ssize_t>(sizeof(exec_error))) {
    child.kill();
    throw NotFoundError(fmt::format("cannot start {}: {}", argv[0], std::strerror(exec_error)));
  }
  set_nonblocking(child.channel_);
  set_nonblocking(child.stderr_);
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      channel_(std::exchange(other.channel_, -1)),
      stderr_(std::exchange(other.stderr_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    channel_ = std::exchange(other.channel_, -1);
    stderr_ = std::exchange(other.stderr_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  release();
}

void ChildProcess::release() noexcept {
  if (pid_ > 0) kill();
  close_fd(channel_);
  close_fd(stderr_);
}

void ChildProcess::close_error_output() {
  close_fd(stderr_);
}

std::optional<ExitStatus> ChildProcess::try_wait() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  pid_t done = 0;
  do {
    done = ::waitpid(pid_, &status, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == 0) return std::nullopt;
  pid_ = -1;
  if (done < 0) return ExitStatus{};  // reaped elsewhere; nothing more can be learnt
  return decode(status);
}

ExitStatus ChildProcess::wait_or_kill(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (pid_ > 0) {
    if (std::optional<ExitStatus> status = try_wait()) return *status;
    if (std::chrono::steady_clock::now() >= deadline) return kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ExitStatus{};
}

ExitStatus ChildProcess::kill() {
  if (pid_ <= 0) return ExitStatus{};
  ::kill(pid_, SIGKILL);
  int status = 0;
  pid_t done = 0;
  do {
    done = ::waitpid(pid_, &status, 0);
  } while (done < 0 && errno == EINTR);
  pid_ = -1;
  return done > 0 ? decode(status) : ExitStatus{};
}

}  // namespace gemmforge::tuner
