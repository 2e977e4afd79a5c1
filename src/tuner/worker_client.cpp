// Requests to the worker under a watchdog: one poll loop writes the request, reads the reply and drains
// the worker's stderr into the log, and tells a reply from a crash or a hang.
#include "tuner/worker_client.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

constexpr const char* kWorkerName = "gemmforge-worker";
constexpr size_t kMaxStderrLine = 400;

bool is_executable(const std::string& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path);
}

// Rethrows, in this process, an error the worker met, keeping its kind.
[[noreturn]] void throw_error(ErrorKind kind, const std::string& message) {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
      throw InvalidArgumentError(message);
    case ErrorKind::kNoDevice:
      throw NoDeviceError(message);
    case ErrorKind::kCuda:
      throw CudaError(-1, message);
    case ErrorKind::kNvrtc:
      throw NvrtcError(message, "", {});
    case ErrorKind::kCublas:
      throw CublasError(-1, message);
    case ErrorKind::kDatabase:
      throw DatabaseError(message);
    case ErrorKind::kNotFound:
      throw NotFoundError(message);
    case ErrorKind::kNotSupported:
      throw NotSupportedError(message);
    case ErrorKind::kInternal:
      break;
  }
  throw InternalError(message);
}

double seconds_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
}

}  // namespace

std::string find_worker_executable() {
  if (const char* variable = std::getenv("GEMMFORGE_WORKER"); variable != nullptr && *variable != '\0') {
    if (is_executable(variable)) return variable;
    throw NotFoundError(
        fmt::format("GEMMFORGE_WORKER is '{}', which is not an executable file; point it at {} or unset it",
                    variable, kWorkerName));
  }
  std::vector<std::string> tried;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::string beside = (self.parent_path() / kWorkerName).string();
    if (is_executable(beside)) return beside;
    tried.push_back(beside);
  }
#ifdef GEMMFORGE_WORKER_BUILD_PATH
  if (is_executable(GEMMFORGE_WORKER_BUILD_PATH)) return GEMMFORGE_WORKER_BUILD_PATH;
  tried.push_back(GEMMFORGE_WORKER_BUILD_PATH);
#endif
  throw NotFoundError(fmt::format(
      "cannot find the {} executable that measures candidates (looked at {}); install it beside this "
      "program or set GEMMFORGE_WORKER to its path",
      kWorkerName, fmt::join(tried, ", ")));
}

WorkerClient::WorkerClient(WorkerOptions options) : options_(std::move(options)) {
  executable_ = options_.executable.empty() ? find_worker_executable() : options_.executable;
}

WorkerClient::~WorkerClient() {
  try {
    shutdown();
  } catch (const std::exception& e) {
    spdlog::warn("stopping the worker: {}", e.what());
  }
}

void WorkerClient::spawn() {
  std::vector<std::string> argv = {executable_, "--device", std::to_string(options_.device)};
  const std::string level = options_.log_level.empty()
                                ? std::string(spdlog::level::to_string_view(spdlog::get_level()).data())
                                : options_.log_level;
  argv.insert(argv.end(), {"--log-level", level});
  if (!options_.template_dir.empty()) argv.insert(argv.end(), {"--templates", options_.template_dir});
  if (options_.simulate) argv.push_back("--simulate");
  stderr_partial_.clear();
  stderr_tail_.clear();
  process_ = ChildProcess::spawn(argv);
  greeted_ = false;
  ++starts_;
  if (starts_ > 1) ++restarts_;
  spdlog::debug("started {} (pid {}){}", executable_, process_.pid(),
                starts_ > 1 ? fmt::format(", restart {}", restarts_) : "");
}

void WorkerClient::launch() {
  if (!process_.running()) spawn();
}

const HelloReply& WorkerClient::start() {
  if (process_.running() && greeted_) return *hello_;
  launch();
  const auto asked = std::chrono::steady_clock::now();
  HelloReply hello = setup_request<HelloReply>(to_frame(HelloRequest{}), options_.start_timeout_s, "start");
  spdlog::debug("worker {} on GPU {}: CUDA set up in {:.0f} ms", process_.pid(), options_.device,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked).count());
  if (hello.protocol != kWorkerProtocolVersion) {
    process_.kill();
    throw InternalError(
        fmt::format("{} speaks worker protocol {}, this program {}; use a worker built with it", executable_,
                    hello.protocol, kWorkerProtocolVersion));
  }
  if (hello_ && hello_->device.uuid != hello.device.uuid) {
    process_.kill();
    throw InternalError(fmt::format("the restarted worker measures on {} ({}), not on {} ({}) as before",
                                    hello.device.name, hello.device.uuid, hello_->device.name,
                                    hello_->device.uuid));
  }
  hello_ = std::move(hello);
  greeted_ = true;
  if (problem_) {
    const ProblemReady ready = setup_request<ProblemReady>(to_frame(*problem_), options_.problem_timeout_s,
                                                           "set up the problem again after a restart");
    spdlog::debug("restarted worker: cuBLAS {:.4f} ms (first measured {:.4f} ms)", ready.cublas.median_ms,
                  cublas_ ? cublas_->median_ms : 0.0);
  }
  return *hello_;
}

Timing WorkerClient::set_problem(const SetProblemRequest& request) {
  problem_.reset();  // start() must not send the previous problem to a new worker
  cublas_.reset();
  start();
  const ProblemReady ready =
      setup_request<ProblemReady>(to_frame(request), options_.problem_timeout_s, "set up the problem");
  problem_ = request;
  cublas_ = ready.cublas;
  return ready.cublas;
}

Measurement WorkerClient::evaluate(const EvaluateRequest& request) {
  if (!problem_) throw InternalError("WorkerClient::evaluate before set_problem");
  start();
  const double timeout_s = evaluate_timeout_s(request.timing);
  Exchange exchanged = exchange(to_frame(request), timeout_s, "measuring a candidate");
  if (!exchanged.reply) {
    Measurement failed;
    failed.outcome = exchanged.failure;
    failed.reason = exchanged.reason;
    return failed;
  }
  if (frame_type(*exchanged.reply) == ErrorReply::kType) {
    const ErrorReply error = from_frame<ErrorReply>(*exchanged.reply);
    if (error.fatal) reap(5.0);
    throw_error(error.kind, error.message);
  }
  EvaluateReply reply = from_frame<EvaluateReply>(*exchanged.reply);
  // A fatal reply comes from a worker whose CUDA context is lost; it exits on its own right after.
  if (reply.fatal) reap(5.0);
  return reply.measurement;
}

void WorkerClient::shutdown() {
  if (!process_.running()) return;
  exchange(to_frame(ShutdownRequest{}), 2.0, "shutting down");
  reap(1.0);
}

double WorkerClient::evaluate_timeout_s(const TimingOptions& timing) const {
  if (options_.evaluate_timeout_s > 0) return options_.evaluate_timeout_s;
  const double cublas_s = cublas_ ? cublas_->median_ms / 1e3 : 0.0;
  // Two verification launches, warm-up, the minimum repetitions and one batch of overshoot, each allowed
  // 50 times cuBLAS; the timing budget twice over; and a few seconds for loading the module.
  const int launches = 2 + timing.warmup + timing.min_repetitions + 8;
  const double seconds = launches * 50.0 * cublas_s + 2.0 * timing.budget_ms / 1e3 + 5.0;
  return std::max(options_.min_evaluate_timeout_s, seconds);
}

template <class Reply>
Reply WorkerClient::setup_request(const Frame& request, double timeout_s, const char* what) {
  Exchange exchanged = exchange(request, timeout_s, what);
  if (!exchanged.reply) {
    throw InternalError(fmt::format("the worker ({}) could not {}: {}", executable_, what, exchanged.reason));
  }
  if (frame_type(*exchanged.reply) == ErrorReply::kType) {
    const ErrorReply error = from_frame<ErrorReply>(*exchanged.reply);
    reap(error.fatal ? 5.0 : 0.0);  // a worker that failed to set up is not trusted with the next request
    throw_error(error.kind, error.message);
  }
  try {
    return from_frame<Reply>(*exchanged.reply);
  } catch (const ProtocolError&) {
    process_.kill();
    throw;
  }
}

WorkerClient::Exchange WorkerClient::exchange(const Frame& request, double timeout_s, const char* what) {
  ++requests_;
  const std::string bytes = encode_frame(request);
  size_t sent = 0;
  FrameDecoder decoder;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                             std::chrono::duration<double>(timeout_s));
  auto died = [&](const std::string& how) {
    const ExitStatus status = process_.wait_or_kill(2.0);
    read_stderr();
    Exchange out;
    out.failure = Outcome::kCrashed;
    out.reason = fmt::format("the worker {} while {}{}{}",
                             status.signal != 0 || status.code >= 0 ? status.describe() : "disappeared", what,
                             how, last_stderr());
    return out;
  };

  while (true) {
    const double left_s = seconds_until(deadline);
    if (left_s <= 0) {
      const ExitStatus status = process_.kill();
      read_stderr();
      Exchange out;
      out.failure = Outcome::kTimeout;
      out.reason = fmt::format("no reply within {:.1f} s while {}; the worker was killed ({}){}", timeout_s,
                               what, status.describe(), last_stderr());
      return out;
    }
    pollfd fds[2] = {
        {process_.channel(), static_cast<short>(POLLIN | (sent < bytes.size() ? POLLOUT : 0)), 0},
        {process_.error_output(), POLLIN, 0}};
    const int wait_ms = static_cast<int>(std::min(1000.0, std::ceil(left_s * 1e3)));
    if (::poll(fds, 2, wait_ms) < 0) {
      if (errno == EINTR) continue;
      throw InternalError(fmt::format("poll on the worker's pipes failed: {}", std::strerror(errno)));
    }
    if (fds[1].revents != 0) read_stderr();
    if ((fds[0].revents & POLLOUT) != 0 && sent < bytes.size()) {
      const ssize_t wrote =
          ::send(process_.channel(), bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (wrote > 0) {
        sent += static_cast<size_t>(wrote);
      } else if (wrote < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return died(fmt::format(" (sending the request failed: {})", std::strerror(errno)));
      }
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      const Drained drained = drain_socket(process_.channel(), decoder);
      if (drained.error != 0) {
        return died(fmt::format(" (reading its reply failed: {})", std::strerror(drained.error)));
      }
      try {
        // A reply read with the end of the stream is still the reply: a worker that lost its context
        // writes its fatal reply and exits at once.
        if (std::optional<Frame> frame = decoder.next()) return Exchange{std::move(frame), Outcome::kOk, ""};
      } catch (const ProtocolError& e) {
        process_.kill();
        read_stderr();
        Exchange out;
        out.failure = Outcome::kCrashed;
        out.reason = fmt::format("the worker's reply was unreadable while {} ({}); it was killed{}", what,
                                 e.what(), last_stderr());
        return out;
      }
      if (drained.ended) {
        return died(decoder.pending() > 0 ? fmt::format(" ({} bytes into its reply)", decoder.pending())
                                          : std::string());
      }
    }
  }
}

void WorkerClient::read_stderr() {
  if (process_.error_output() < 0) return;
  char buffer[4096];
  while (true) {
    const ssize_t got = ::read(process_.error_output(), buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) process_.close_error_output();
      break;
    }
    stderr_partial_.append(buffer, static_cast<size_t>(got));
    size_t end = 0;
    while ((end = stderr_partial_.find('\n')) != std::string::npos) {
      std::string line = stderr_partial_.substr(0, std::min(end, kMaxStderrLine));
      stderr_partial_.erase(0, end + 1);
      spdlog::debug("worker {}: {}", process_.pid(), line);
      stderr_tail_.push_back(std::move(line));
      while (stderr_tail_.size() > options_.stderr_lines) stderr_tail_.pop_front();
    }
  }
}

void WorkerClient::reap(double grace_s) {
  const ExitStatus status = process_.wait_or_kill(grace_s);
  read_stderr();
  spdlog::debug("worker {}", status.describe());
}

std::string WorkerClient::last_stderr() const {
  std::vector<std::string> lines(stderr_tail_.begin(), stderr_tail_.end());
  if (!stderr_partial_.empty()) lines.push_back(stderr_partial_.substr(0, kMaxStderrLine));
  if (lines.empty()) return "; it wrote nothing to stderr";
  return fmt::format("; its last output: {}", fmt::join(lines, " | "));
}

}  // namespace gemmforge::tuner
