// The worker channel: frames survive any split of the byte stream, malformed or truncated frames are
// rejected with a reason, and every message round-trips through its JSON form.
#include "tuner/worker_protocol.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <thread>

#include "tuner/worker_messages.hpp"

namespace gemmforge::tuner {
namespace {

Frame make(const std::string& header, const std::string& payload) {
  return Frame{header, std::vector<char>(payload.begin(), payload.end())};
}

// A pipe whose ends close with the test.
class Pipe {
 public:
  Pipe() {
    if (::pipe(fds_) != 0) throw std::runtime_error("pipe failed");
  }
  ~Pipe() {
    close_write();
    if (fds_[0] >= 0) ::close(fds_[0]);
  }
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_write() {
    if (fds_[1] >= 0) ::close(fds_[1]);
    fds_[1] = -1;
  }

 private:
  int fds_[2] = {-1, -1};
};

TEST(WorkerFrames, RoundTripHeaderAndPayload) {
  const Frame frame = make(R"({"type":"evaluate"})", std::string("\0\x7f"
                                                                 "ELF binary\n",
                                                                 13));
  const std::string bytes = encode_frame(frame);
  ASSERT_EQ(bytes.size(), kFramePrefixBytes + frame.header.size() + frame.payload.size());
  EXPECT_EQ(bytes.substr(0, 4), "GFW1");

  FrameDecoder decoder;
  decoder.feed(bytes.data(), bytes.size());
  const std::optional<Frame> decoded = decoder.next();
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->header, frame.header);
  EXPECT_EQ(decoded->payload, frame.payload);
  EXPECT_FALSE(decoder.next());
  EXPECT_EQ(decoder.pending(), 0u);
}

TEST(WorkerFrames, DecoderWaitsForWholeFramesFedByteByByte) {
  const std::string bytes =
      encode_frame(make(R"({"type":"a"})", "payload")) + encode_frame(make(R"({"type":"b"})", ""));
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char c : bytes) {
    decoder.feed(&c, 1);
    while (std::optional<Frame> frame = decoder.next()) frames.push_back(std::move(*frame));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].header, R"({"type":"a"})");
  EXPECT_EQ(std::string(frames[0].payload.begin(), frames[0].payload.end()), "payload");
  EXPECT_EQ(frames[1].header, R"({"type":"b"})");
  EXPECT_TRUE(frames[1].payload.empty());
}

TEST(WorkerFrames, DecoderRejectsAWrongMagicShowingTheBytes) {
  FrameDecoder decoder;
  const std::string noise = "warning: something printed here\n";
  decoder.feed(noise.data(), noise.size());
  try {
    decoder.next();
    FAIL() << "a frame without the magic was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("warning: someth"), std::string::npos) << e.what();
  }
}

TEST(WorkerFrames, DecoderRejectsLengthsBeyondTheLimits) {
  std::string header_too_long = encode_frame(make("{}", ""));
  const uint32_t header_bytes = kMaxHeaderBytes + 1;
  for (int i = 0; i < 4; ++i) header_too_long[4 + i] = static_cast<char>((header_bytes >> (8 * i)) & 0xff);
  FrameDecoder first;
  first.feed(header_too_long.data(), header_too_long.size());
  EXPECT_THROW(first.next(), ProtocolError);

  std::string payload_too_long = encode_frame(make("{}", ""));
  const uint64_t payload_bytes = kMaxPayloadBytes + 1;
  for (int i = 0; i < 8; ++i) payload_too_long[8 + i] = static_cast<char>((payload_bytes >> (8 * i)) & 0xff);
  FrameDecoder second;
  second.feed(payload_too_long.data(), payload_too_long.size());
  EXPECT_THROW(second.next(), ProtocolError);
}

TEST(WorkerFrames, EncoderRefusesAnOversizedHeader) {
  EXPECT_THROW(encode_frame(Frame{std::string(kMaxHeaderBytes + 1, ' '), {}}), ProtocolError);
}

TEST(WorkerFrames, ReadFrameSeesCleanEndBetweenFramesAndErrorInsideOne) {
  Pipe clean;
  write_frame(clean.write_end(), make(R"({"type":"x"})", "abc"));
  clean.close_write();
  const std::optional<Frame> frame = read_frame(clean.read_end());
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->header, R"({"type":"x"})");
  EXPECT_FALSE(read_frame(clean.read_end()));  // end of input between frames

  Pipe truncated;
  const std::string bytes = encode_frame(make(R"({"type":"x"})", "abcdef"));
  ASSERT_EQ(write_all(truncated.write_end(), bytes.data(), bytes.size() - 3), 0);
  truncated.close_write();
  EXPECT_THROW(read_frame(truncated.read_end()), ProtocolError);

  Pipe short_prefix;
  ASSERT_EQ(write_all(short_prefix.write_end(), "GFW1", 4), 0);
  short_prefix.close_write();
  EXPECT_THROW(read_frame(short_prefix.read_end()), ProtocolError);
}

TEST(WorkerFrames, LargePayloadCrossesASocketIntact) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  std::vector<char> payload(3 << 20);
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 2654435761u >> 24);
  std::thread writer([&] { write_frame(fds[0], Frame{R"({"type":"big"})", payload}); });
  const std::optional<Frame> frame = read_frame(fds[1]);
  writer.join();
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->payload, payload);
}

TEST(WorkerFrames, DrainFeedsTheLastFrameBeforeReportingTheEnd) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  FrameDecoder decoder;
  EXPECT_FALSE(drain_socket(fds[1], decoder).ended);  // nothing yet: would block
  // The writer sends its last frame and is gone before the reader looks: both come in one drain.
  write_frame(fds[0], make(R"({"type":"last"})", "xyz"));
  ::close(fds[0]);
  const Drained drained = drain_socket(fds[1], decoder);
  ::close(fds[1]);
  EXPECT_TRUE(drained.ended);
  EXPECT_EQ(drained.error, 0);
  const std::optional<Frame> frame = decoder.next();
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->header, R"({"type":"last"})");
  EXPECT_EQ(decoder.pending(), 0u);

  FrameDecoder not_a_socket;
  Pipe pipe;
  EXPECT_EQ(drain_socket(pipe.read_end(), not_a_socket).error, ENOTSOCK);
}

TEST(WorkerFrames, WritingToAClosedSocketIsAnErrorNotASignal) {
  int fds[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  ::close(fds[1]);
  EXPECT_THROW(write_frame(fds[0], make("{}", "x")), ProtocolError);
  ::close(fds[0]);
}

TEST(WorkerMessages, HelloRoundTripsTheDevice) {
  HelloReply hello;
  hello.device = DeviceInfo::nominal("sm_90");
  hello.device.ordinal = 1;
  hello.device.uuid = "GPU-1234";
  hello.device.clock_khz = 1980000;
  hello.device.nvrtc_version = "13.0";
  hello.worker_version = "0.1.0";
  hello.nvrtc_version = "13.0";
  hello.templates = "built-in templates";
  hello.pid = 4242;
  const Frame frame = to_frame(hello);
  EXPECT_EQ(frame_type(frame), "hello");
  const HelloReply back = from_frame<HelloReply>(frame);
  EXPECT_EQ(back.device.name, hello.device.name);
  EXPECT_EQ(back.device.uuid, "GPU-1234");
  EXPECT_EQ(back.device.ordinal, 1);
  EXPECT_EQ(back.device.smem_per_block_optin, hello.device.smem_per_block_optin);
  EXPECT_EQ(back.device.regs_per_sm, hello.device.regs_per_sm);
  EXPECT_EQ(back.device.clock_khz, 1980000);
  EXPECT_EQ(back.pid, 4242);
  EXPECT_FALSE(back.simulated);
}

TEST(WorkerMessages, SetProblemAndEvaluateRoundTrip) {
  SetProblemRequest problem;
  problem.problem.a_trans = true;
  problem.problem.m = 4103;
  problem.problem.n = 17;
  problem.problem.k = 999;
  problem.problem.align_a = 1;
  problem.problem.align_c = 2;
  problem.seed = 7;
  problem.timing.budget_ms = 33.5;
  problem.timing.flush_l2 = false;
  const SetProblemRequest problem_back = from_frame<SetProblemRequest>(to_frame(problem));
  EXPECT_EQ(problem_back.problem, problem.problem);
  EXPECT_EQ(problem_back.seed, 7u);
  EXPECT_DOUBLE_EQ(problem_back.timing.budget_ms, 33.5);
  EXPECT_FALSE(problem_back.timing.flush_l2);

  EvaluateRequest evaluate;
  evaluate.template_name = "sgemm_simt";
  evaluate.template_hash = "0123456789abcdef";
  evaluate.config_key = "BM=128,BN=64";
  evaluate.error_bound = 2e-6;
  evaluate.cubin = {'\x7f', 'E', 'L', 'F', '\0', '\1'};
  const Frame frame = to_frame(evaluate);
  EXPECT_EQ(frame.payload, evaluate.cubin);  // the cubin travels raw, not inside the JSON
  const EvaluateRequest back = from_frame<EvaluateRequest>(frame);
  EXPECT_EQ(back.template_name, "sgemm_simt");
  EXPECT_EQ(back.template_hash, "0123456789abcdef");
  EXPECT_EQ(back.config_key, "BM=128,BN=64");
  EXPECT_DOUBLE_EQ(back.error_bound, 2e-6);
  EXPECT_EQ(back.cubin, evaluate.cubin);
}

TEST(WorkerMessages, MeasurementKeepsEveryFieldAndNonFiniteErrors) {
  EvaluateReply reply;
  reply.measurement.outcome = Outcome::kWrongResult;
  reply.measurement.reason = "beta = 0: relative error inf";
  reply.measurement.timing = Timing{1.5, 1.25, 2.0, 42};
  reply.measurement.rel_error = std::numeric_limits<double>::infinity();
  reply.measurement.registers = 168;
  reply.measurement.local_bytes = 16;
  reply.measurement.smem_bytes = 73728;
  reply.measurement.threads = 256;
  reply.measurement.occupancy_blocks = 1;
  reply.measurement.occupancy_pct = 12.5;
  reply.measurement.phases = MeasurementPhases{3.5, 40.25, 120.5};
  reply.fatal = true;
  const EvaluateReply back = from_frame<EvaluateReply>(to_frame(reply));
  EXPECT_EQ(back.measurement.outcome, Outcome::kWrongResult);
  EXPECT_EQ(back.measurement.reason, reply.measurement.reason);
  EXPECT_DOUBLE_EQ(back.measurement.timing.median_ms, 1.5);
  EXPECT_DOUBLE_EQ(back.measurement.timing.min_ms, 1.25);
  EXPECT_EQ(back.measurement.timing.repetitions, 42);
  EXPECT_TRUE(std::isnan(back.measurement.rel_error));  // JSON has no infinity: it comes back unknown
  EXPECT_EQ(back.measurement.registers, 168);
  EXPECT_EQ(back.measurement.local_bytes, 16);
  EXPECT_EQ(back.measurement.smem_bytes, 73728);
  EXPECT_EQ(back.measurement.occupancy_blocks, 1);
  EXPECT_DOUBLE_EQ(back.measurement.occupancy_pct, 12.5);
  EXPECT_DOUBLE_EQ(back.measurement.phases.load_ms, 3.5);
  EXPECT_DOUBLE_EQ(back.measurement.phases.verify_ms, 40.25);
  EXPECT_DOUBLE_EQ(back.measurement.phases.time_ms, 120.5);
  EXPECT_TRUE(back.fatal);
}

TEST(WorkerMessages, ErrorReplyKeepsTheKind) {
  const ErrorReply back = from_frame<ErrorReply>(to_frame(ErrorReply{ErrorKind::kNoDevice, "no GPU", true}));
  EXPECT_EQ(back.kind, ErrorKind::kNoDevice);
  EXPECT_EQ(back.message, "no GPU");
  EXPECT_TRUE(back.fatal);
}

TEST(WorkerMessages, MalformedHeadersAreProtocolErrorsNamingTheField) {
  EXPECT_THROW(frame_type(make("not json", "")), ProtocolError);
  EXPECT_THROW(frame_type(make("[1, 2]", "")), ProtocolError);
  EXPECT_THROW(frame_type(make(R"({"kind":"hello"})", "")), ProtocolError);
  // A reply of another type than expected.
  EXPECT_THROW(from_frame<HelloReply>(to_frame(ProblemReady{})), ProtocolError);
  // A missing field is named.
  try {
    from_frame<ProblemReady>(make(R"({"type":"problem_ready"})", ""));
    FAIL() << "a reply without its field was accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("cublas"), std::string::npos) << e.what();
  }
  // A field of the wrong kind is named.
  try {
    from_frame<ErrorReply>(make(R"({"type":"error","kind":"internal","message":3,"fatal":false})", ""));
    FAIL() << "a number was accepted as the message";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("message"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_outcome("exploded"), ProtocolError);
}

}  // namespace
}  // namespace gemmforge::tuner
