// The messages the tuner and its worker process exchange, and their JSON form inside a Frame.
//
// Every request gets exactly one reply: hello -> hello, set_problem -> problem_ready, evaluate ->
// measurement (a cubin travels as the payload of evaluate), shutdown -> bye; any request may instead be
// answered by error. A reply marked fatal means the worker exits right after sending it (its CUDA context
// is unusable), so the next request needs a new worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "tuner/problem_rig.hpp"
#include "tuner/timing.hpp"
#include "tuner/worker_protocol.hpp"

namespace gemmforge::tuner {

/// Bumped whenever a message changes shape; hello refuses a worker speaking another version.
inline constexpr int kWorkerProtocolVersion = 4;

struct HelloRequest {
  static constexpr const char* kType = "hello";
  int protocol = kWorkerProtocolVersion;
};

struct HelloReply {
  static constexpr const char* kType = "hello";
  int protocol = kWorkerProtocolVersion;
  DeviceInfo device;           ///< the GPU the worker measures on (nominal limits when simulated)
  std::string worker_version;  ///< gemmforge version of the worker binary
  std::string nvrtc_version;
  std::string templates;  ///< where the worker's templates come from
  int64_t pid = 0;
  bool simulated = false;
};

struct SetProblemRequest {
  static constexpr const char* kType = "set_problem";
  KernelProblem problem;
  uint64_t seed = 42;  ///< operands are random with this seed, so a restarted worker rebuilds the same ones
  TimingOptions timing;
};

struct ProblemReady {
  static constexpr const char* kType = "problem_ready";
  Timing cublas;  ///< cuBLAS on the same operands, timed as candidates are
};

struct EvaluateRequest {
  static constexpr const char* kType = "evaluate";
  std::string template_name;
  std::string template_hash;  ///< the worker refuses a template whose source differs from its own
  std::string config_key;
  TimingOptions timing;
  double error_bound = 1e-5;
  std::vector<char> cubin;  ///< travels as the frame's payload
};

struct EvaluateReply {
  static constexpr const char* kType = "measurement";
  Measurement measurement;
  bool fatal = false;
};

struct ShutdownRequest {
  static constexpr const char* kType = "shutdown";
};

struct ShutdownReply {
  static constexpr const char* kType = "bye";
};

/// A request the worker could not serve, for a reason that is not the candidate's fault (unknown
/// template, template hash mismatch, no problem set, out of memory building the problem).
struct ErrorReply {
  static constexpr const char* kType = "error";
  ErrorKind kind = ErrorKind::kInternal;  ///< so the tuner rethrows the error the worker met
  std::string message;
  bool fatal = false;
};

/// The "type" of a frame's header; throws ProtocolError when the header is not a JSON object with one.
std::string frame_type(const Frame& frame);

Frame to_frame(const HelloRequest& message);
Frame to_frame(const HelloReply& message);
Frame to_frame(const SetProblemRequest& message);
Frame to_frame(const ProblemReady& message);
Frame to_frame(const EvaluateRequest& message);
Frame to_frame(const EvaluateReply& message);
Frame to_frame(const ShutdownRequest& message);
Frame to_frame(const ShutdownReply& message);
Frame to_frame(const ErrorReply& message);

/// Decodes a frame as `Message`; throws ProtocolError naming the field for a header of another type,
/// a missing field or a value of the wrong kind.
template <class Message>
Message from_frame(const Frame& frame);
template <>
HelloRequest from_frame<HelloRequest>(const Frame& frame);
template <>
HelloReply from_frame<HelloReply>(const Frame& frame);
template <>
SetProblemRequest from_frame<SetProblemRequest>(const Frame& frame);
template <>
ProblemReady from_frame<ProblemReady>(const Frame& frame);
template <>
EvaluateRequest from_frame<EvaluateRequest>(const Frame& frame);
template <>
EvaluateReply from_frame<EvaluateReply>(const Frame& frame);
template <>
ShutdownRequest from_frame<ShutdownRequest>(const Frame& frame);
template <>
ShutdownReply from_frame<ShutdownReply>(const Frame& frame);
template <>
ErrorReply from_frame<ErrorReply>(const Frame& frame);

/// Inverse of to_string(Outcome); throws ProtocolError for an unknown name.
Outcome parse_outcome(const std::string& text);

}  // namespace gemmforge::tuner
