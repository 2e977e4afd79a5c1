// The tuner's side of the isolated worker: starts gemmforge-worker, sends requests with a watchdog,
// turns a worker that dies or hangs into a failed measurement, and restarts it for the next request.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "tuner/child_process.hpp"
#include "tuner/problem_rig.hpp"
#include "tuner/timing.hpp"
#include "tuner/worker_messages.hpp"
#include "tuner/worker_protocol.hpp"

namespace gemmforge::tuner {

struct WorkerOptions {
  std::string executable;    ///< empty: find_worker_executable()
  int device = 0;            ///< CUDA ordinal the worker measures on
  std::string template_dir;  ///< a folder of templates the worker knows besides its built-in ones
  bool simulate = false;     ///< the worker's GPU-less simulation, for tests (see tools/worker)
  std::string log_level;     ///< the worker's spdlog level; empty: this process's level

  double start_timeout_s = 120;    ///< hello: CUDA start-up and the utility kernels' compilation
  double problem_timeout_s = 600;  ///< set_problem: operands, cuBLAS references and cuBLAS timing
  double evaluate_timeout_s = 0;   ///< per candidate; 0: automatic (see WorkerClient::evaluate_timeout_s)
  double min_evaluate_timeout_s = 10;
  size_t stderr_lines = 12;  ///< last lines of the worker's stderr kept for crash reports
};

/// $GEMMFORGE_WORKER if set, else gemmforge-worker beside this executable, else the one in the build
/// tree this library was built in. Throws NotFoundError listing the places looked at.
std::string find_worker_executable();

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options);
  /// Asks the worker to exit and kills it if it does not within a second.
  ~WorkerClient();
  WorkerClient(const WorkerClient&) = delete;
  WorkerClient& operator=(const WorkerClient&) = delete;

  /// Starts the worker process if none runs, without waiting for it: workers launched one after another
  /// set CUDA up at the same time, and start() then finds each ready sooner.
  void launch();

  /// Starts the worker if none runs (sending the current problem again after a restart) and returns
  /// its hello. Throws Error, of the kind the worker met, when it cannot start or set up the problem,
  /// or when a restarted worker reports another GPU.
  const HelloReply& start();

  /// Builds a problem in the worker and returns cuBLAS's timing on it. The request is kept: a restarted
  /// worker gets it again before its next candidate, and cublas() keeps this first timing, so every
  /// candidate of a problem is compared with one cuBLAS figure.
  Timing set_problem(const SetProblemRequest& request);
  const std::optional<Timing>& cublas() const { return cublas_; }
  /// The problem set last, if any.
  const std::optional<SetProblemRequest>& problem() const { return problem_; }

  /// Verifies and times one candidate. A worker that dies while doing so gives outcome kCrashed, one that
  /// misses its deadline is killed and gives kTimeout; either way the reason says what happened,
  /// with the worker's last stderr lines. Throws only when the worker refuses the request (e.g. a
  /// template hash mismatch) or cannot be restarted.
  Measurement evaluate(const EvaluateRequest& request);

  /// Ends the worker politely; the next request starts a new one.
  void shutdown();

  /// Deadline of one evaluate: the option if set, else room for every launch of a candidate 50 times
  /// slower than cuBLAS, and never below min_evaluate_timeout_s.
  double evaluate_timeout_s(const TimingOptions& timing) const;

  /// Workers started after the first one.
  int restarts() const { return restarts_; }
  /// Requests sent, restarts' hello and set_problem included.
  size_t requests() const { return requests_; }
  const WorkerOptions& options() const { return options_; }

 private:
  // What came back for one request: a frame, or why none will.
  struct Exchange {
    std::optional<Frame> reply;
    Outcome failure = Outcome::kOk;  // kCrashed or kTimeout when there is no reply
    std::string reason;
  };

  Exchange exchange(const Frame& request, double timeout_s, const char* what);
  // Sends a set-up request (hello, set_problem) and decodes its reply; any failure throws.
  template <class Reply>
  Reply setup_request(const Frame& request, double timeout_s, const char* what);
  void spawn();
  void read_stderr();
  void reap(double grace_s);
  std::string last_stderr() const;

  WorkerOptions options_;
  std::string executable_;
  ChildProcess process_;
  std::optional<HelloReply> hello_;
  bool greeted_ = false;  // the running process answered a hello
  std::optional<SetProblemRequest> problem_;
  std::optional<Timing> cublas_;
  std::string stderr_partial_;  // an unfinished last line
  std::deque<std::string> stderr_tail_;
  int starts_ = 0;
  int restarts_ = 0;
  size_t requests_ = 0;
};

}  // namespace gemmforge::tuner
