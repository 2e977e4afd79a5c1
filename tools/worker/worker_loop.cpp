// Dispatching worker requests and turning every failure into a reply the tuner can act on.
#include "worker_loop.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cuda/check.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::worker {
namespace {

struct Answer {
  tuner::Frame frame;
  int exit_code = -1;  // >= 0: exit with it once the frame is sent
};

Answer answer(Backend& backend, const tuner::Frame& request) {
  const std::string type = tuner::frame_type(request);
  if (type == tuner::HelloRequest::kType) {
    const tuner::HelloRequest hello = tuner::from_frame<tuner::HelloRequest>(request);
    if (hello.protocol != tuner::kWorkerProtocolVersion) {
      throw InvalidArgumentError(
          fmt::format("the tuner speaks worker protocol {}, this worker {}; use a worker "
                      "built from the same tree as gemmforge",
                      hello.protocol, tuner::kWorkerProtocolVersion));
    }
    return {tuner::to_frame(backend.hello())};
  }
  if (type == tuner::SetProblemRequest::kType) {
    return {tuner::to_frame(backend.set_problem(tuner::from_frame<tuner::SetProblemRequest>(request)))};
  }
  if (type == tuner::EvaluateRequest::kType) {
    const tuner::EvaluateReply reply = backend.evaluate(tuner::from_frame<tuner::EvaluateRequest>(request));
    return {tuner::to_frame(reply), reply.fatal ? kExitContextLost : -1};
  }
  if (type == tuner::ShutdownRequest::kType) return {tuner::to_frame(tuner::ShutdownReply{}), kExitOk};
  throw InvalidArgumentError(fmt::format("unknown request type '{}'", type));
}

// The reply to a request that failed for a reason other than the candidate; fatal when the process
// cannot serve anything more.
Answer refuse(const Error& error) {
  tuner::ErrorReply reply{error.kind(), error.what(), false};
  int exit_code = -1;
  if (error.kind() == ErrorKind::kNoDevice) {
    reply.fatal = true;
    exit_code = kExitNoDevice;
  }
  if (const auto* cuda_error = dynamic_cast<const CudaError*>(&error);
      cuda_error != nullptr && cuda::is_sticky(static_cast<cudaError_t>(cuda_error->code()))) {
    reply.fatal = true;
    exit_code = kExitContextLost;
  }
  return {tuner::to_frame(reply), exit_code};
}

}  // namespace

int serve(Backend& backend, int in, int out) {
  try {
    while (std::optional<tuner::Frame> request = tuner::read_frame(in)) {
      Answer reply;
      try {
        reply = answer(backend, *request);
      } catch (const Error& e) {
        spdlog::warn("{}", e.what());
        reply = refuse(e);
      } catch (const std::exception& e) {
        reply = refuse(InternalError(e.what()));
      }
      tuner::write_frame(out, reply.frame);
      if (reply.exit_code >= 0) return reply.exit_code;
    }
    return kExitOk;  // the tuner closed the channel
  } catch (const tuner::ProtocolError& e) {
    spdlog::error("{}", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    spdlog::error("internal error: {}", e.what());
    return kExitInternal;
  }
}

}  // namespace gemmforge::worker
