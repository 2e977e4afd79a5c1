// JSON encoding of the worker messages. Reading is strict: a field of the wrong kind is a protocol
// error naming the field, never a silently defaulted value.
#include "tuner/worker_messages.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace gemmforge::tuner {
namespace {

using json = nlohmann::json;

// Reads fields of one JSON object, naming the message and field in every error.
class Reader {
 public:
  Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) throw ProtocolError(fmt::format("{}: expected a JSON object", where_));
  }

  const json& at(const char* key) const {
    auto it = object_.find(key);
    if (it == object_.end()) throw ProtocolError(fmt::format("{}: field '{}' is missing", where_, key));
    return *it;
  }
  Reader object(const char* key) const { return Reader(at(key), where_ + "." + key); }

  template <class T>
  T get(const char* key) const {
    const json& value = at(key);
    try {
      return value.get<T>();
    } catch (const json::exception&) {
      throw ProtocolError(fmt::format("{}: field '{}' has the wrong type ({})", where_, key, value.dump()));
    }
  }
  // JSON has no infinity or NaN: they travel as null.
  double number(const char* key) const {
    const json& value = at(key);
    if (value.is_null()) return std::numeric_limits<double>::quiet_NaN();
    if (!value.is_number()) {
      throw ProtocolError(fmt::format("{}: field '{}' is not a number ({})", where_, key, value.dump()));
    }
    return value.get<double>();
  }

 private:
  const json& object_;
  std::string where_;
};

json number(double value) {
  return std::isfinite(value) ? json(value) : json(nullptr);
}

json device_json(const DeviceInfo& d) {
  return {{"ordinal", d.ordinal},
          {"name", d.name},
          {"uuid", d.uuid},
          {"pci_bus_id", d.pci_bus_id},
          {"cc_major", d.cc_major},
          {"cc_minor", d.cc_minor},
          {"sm_count", d.sm_count},
          {"total_memory", d.total_memory},
          {"smem_per_block", d.smem_per_block},
          {"smem_per_block_optin", d.smem_per_block_optin},
          {"smem_per_sm", d.smem_per_sm},
          {"regs_per_block", d.regs_per_block},
          {"regs_per_sm", d.regs_per_sm},
          {"max_threads_per_block", d.max_threads_per_block},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"warp_size", d.warp_size},
          {"l2_bytes", d.l2_bytes},
          {"clock_khz", d.clock_khz},
          {"memory_clock_khz", d.memory_clock_khz},
          {"memory_bus_width", d.memory_bus_width},
          {"driver_version", d.driver_version},
          {"runtime_version", d.runtime_version},
          {"nvrtc_version", d.nvrtc_version}};
}

DeviceInfo read_device(const Reader& r) {
  DeviceInfo d;
  d.ordinal = r.get<int>("ordinal");
  d.name = r.get<std::string>("name");
  d.uuid = r.get<std::string>("uuid");
  d.pci_bus_id = r.get<std::string>("pci_bus_id");
  d.cc_major = r.get<int>("cc_major");
  d.cc_minor = r.get<int>("cc_minor");
  d.sm_count = r.get<int>("sm_count");
  d.total_memory = r.get<int64_t>("total_memory");
  d.smem_per_block = r.get<int>("smem_per_block");
  d.smem_per_block_optin = r.get<int>("smem_per_block_optin");
  d.smem_per_sm = r.get<int>("smem_per_sm");
  d.regs_per_block = r.get<int>("regs_per_block");
  d.regs_per_sm = r.get<int>("regs_per_sm");
  d.max_threads_per_block = r.get<int>("max_threads_per_block");
  d.max_threads_per_sm = r.get<int>("max_threads_per_sm");
  d.max_blocks_per_sm = r.get<int>("max_blocks_per_sm");
  d.warp_size = r.get<int>("warp_size");
  d.l2_bytes = r.get<int>("l2_bytes");
  d.clock_khz = r.get<int>("clock_khz");
  d.memory_clock_khz = r.get<int>("memory_clock_khz");
  d.memory_bus_width = r.get<int>("memory_bus_width");
  d.driver_version = r.get<int>("driver_version");
  d.runtime_version = r.get<int>("runtime_version");
  d.nvrtc_version = r.get<std::string>("nvrtc_version");
  return d;
}

json problem_json(const KernelProblem& p) {
  return {{"dtype", to_string(p.dtype)},
          {"c_dtype", to_string(p.c_dtype)},
          {"a_trans", p.a_trans},
          {"b_trans", p.b_trans},
          {"m", p.m},
          {"n", p.n},
          {"k", p.k},
          {"align_a", p.align_a},
          {"align_b", p.align_b},
          {"align_c", p.align_c}};
}

KernelProblem read_problem(const Reader& r) {
  KernelProblem p;
  try {
    p.dtype = parse_dtype(r.get<std::string>("dtype"));
    p.c_dtype = parse_dtype(r.get<std::string>("c_dtype"));
  } catch (const InvalidArgumentError& e) {
    throw ProtocolError(fmt::format("problem: {}", e.what()));
  }
  p.a_trans = r.get<bool>("a_trans");
  p.b_trans = r.get<bool>("b_trans");
  p.m = r.get<int64_t>("m");
  p.n = r.get<int64_t>("n");
  p.k = r.get<int64_t>("k");
  p.align_a = r.get<int>("align_a");
  p.align_b = r.get<int>("align_b");
  p.align_c = r.get<int>("align_c");
  return p;
}

json timing_options_json(const TimingOptions& o) {
  return {{"warmup", o.warmup},
          {"warmup_ms", o.warmup_ms},
          {"min_repetitions", o.min_repetitions},
          {"max_repetitions", o.max_repetitions},
          {"budget_ms", o.budget_ms},
          {"flush_l2", o.flush_l2},
          {"beaten_above_ms", o.beaten_above_ms},
          {"beaten_repetitions", o.beaten_repetitions},
          {"min_repetitions_long", o.min_repetitions_long},
          {"precision", o.precision}};
}

TimingOptions read_timing_options(const Reader& r) {
  TimingOptions o;
  o.warmup = r.get<int>("warmup");
  o.warmup_ms = r.number("warmup_ms");
  o.min_repetitions = r.get<int>("min_repetitions");
  o.max_repetitions = r.get<int>("max_repetitions");
  o.budget_ms = r.number("budget_ms");
  o.flush_l2 = r.get<bool>("flush_l2");
  o.beaten_above_ms = r.number("beaten_above_ms");
  o.beaten_repetitions = r.get<int>("beaten_repetitions");
  o.min_repetitions_long = r.get<int>("min_repetitions_long");
  o.precision = r.number("precision");
  return o;
}

json timing_json(const Timing& t) {
  return {{"median_ms", number(t.median_ms)},
          {"min_ms", number(t.min_ms)},
          {"max_ms", number(t.max_ms)},
          {"repetitions", t.repetitions}};
}

Timing read_timing(const Reader& r) {
  Timing t;
  t.median_ms = r.number("median_ms");
  t.min_ms = r.number("min_ms");
  t.max_ms = r.number("max_ms");
  t.repetitions = r.get<int>("repetitions");
  return t;
}

json measurement_json(const Measurement& m) {
  return {{"outcome", to_string(m.outcome)},
          {"reason", m.reason},
          {"timing", timing_json(m.timing)},
          {"rel_error", number(m.rel_error)},
          {"registers", m.registers},
          {"local_bytes", m.local_bytes},
          {"smem_bytes", m.smem_bytes},
          {"threads", m.threads},
          {"occupancy_blocks", m.occupancy_blocks},
          {"occupancy_pct", number(m.occupancy_pct)},
          {"phases",
           {{"load_ms", number(m.phases.load_ms)},
            {"verify_ms", number(m.phases.verify_ms)},
            {"time_ms", number(m.phases.time_ms)}}}};
}

Measurement read_measurement(const Reader& r) {
  Measurement m;
  m.outcome = parse_outcome(r.get<std::string>("outcome"));
  m.reason = r.get<std::string>("reason");
  m.timing = read_timing(r.object("timing"));
  m.rel_error = r.number("rel_error");
  m.registers = r.get<int>("registers");
  m.local_bytes = r.get<int>("local_bytes");
  m.smem_bytes = r.get<int64_t>("smem_bytes");
  m.threads = r.get<int64_t>("threads");
  m.occupancy_blocks = r.get<int>("occupancy_blocks");
  m.occupancy_pct = r.number("occupancy_pct");
  const Reader phases = r.object("phases");
  m.phases.load_ms = phases.number("load_ms");
  m.phases.verify_ms = phases.number("verify_ms");
  m.phases.time_ms = phases.number("time_ms");
  return m;
}

ErrorKind parse_error_kind(const std::string& text) {
  for (ErrorKind kind : {ErrorKind::kInvalidArgument, ErrorKind::kNoDevice, ErrorKind::kCuda,
                         ErrorKind::kNvrtc, ErrorKind::kCublas, ErrorKind::kDatabase, ErrorKind::kNotFound,
                         ErrorKind::kNotSupported, ErrorKind::kInternal}) {
    if (text == to_string(kind)) return kind;
  }
  return ErrorKind::kInternal;  // a newer worker's kind: still an error, reported with its message
}

Frame make_frame(const char* type, json body, std::vector<char> payload = {}) {
  body["type"] = type;
  return Frame{body.dump(), std::move(payload)};
}

json parse_header(const Frame& frame) {
  json header = json::parse(frame.header, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    throw ProtocolError(
        fmt::format("worker channel: a frame header is not a JSON object: {:.200}", frame.header));
  }
  return header;
}

// The header of a frame that must be of type `type`, ready to read.
json expect(const Frame& frame, const char* type) {
  json header = parse_header(frame);
  const std::string found = header.value("type", "");
  if (found != type) {
    throw ProtocolError(fmt::format("worker channel: expected a '{}' message, got '{}'", type, found));
  }
  return header;
}

}  // namespace

std::string frame_type(const Frame& frame) {
  const json header = parse_header(frame);
  auto it = header.find("type");
  if (it == header.end() || !it->is_string()) {
    throw ProtocolError(fmt::format("worker channel: a frame header has no \"type\": {:.200}", frame.header));
  }
  return it->get<std::string>();
}

Outcome parse_outcome(const std::string& text) {
  for (Outcome o : {Outcome::kOk, Outcome::kWrongResult, Outcome::kCompileError, Outcome::kLaunchError,
                    Outcome::kCrashed, Outcome::kTimeout, Outcome::kSpills, Outcome::kInvalid}) {
    if (text == to_string(o)) return o;
  }
  throw ProtocolError(fmt::format("worker channel: unknown outcome '{}'", text));
}

Frame to_frame(const HelloRequest& m) {
  return make_frame(HelloRequest::kType, {{"protocol", m.protocol}});
}

Frame to_frame(const HelloReply& m) {
  return make_frame(HelloReply::kType, {{"protocol", m.protocol},
                                        {"device", device_json(m.device)},
                                        {"worker_version", m.worker_version},
                                        {"nvrtc_version", m.nvrtc_version},
                                        {"templates", m.templates},
                                        {"pid", m.pid},
                                        {"simulated", m.simulated}});
}

Frame to_frame(const SetProblemRequest& m) {
  return make_frame(
      SetProblemRequest::kType,
      {{"problem", problem_json(m.problem)}, {"seed", m.seed}, {"timing", timing_options_json(m.timing)}});
}

Frame to_frame(const ProblemReady& m) {
  return make_frame(ProblemReady::kType, {{"cublas", timing_json(m.cublas)}});
}

Frame to_frame(const EvaluateRequest& m) {
  return make_frame(EvaluateRequest::kType,
                    {{"template", m.template_name},
                     {"template_hash", m.template_hash},
                     {"config", m.config_key},
                     {"timing", timing_options_json(m.timing)},
                     {"error_bound", m.error_bound}},
                    m.cubin);
}

Frame to_frame(const EvaluateReply& m) {
  return make_frame(EvaluateReply::kType,
                    {{"measurement", measurement_json(m.measurement)}, {"fatal", m.fatal}});
}

Frame to_frame(const ShutdownRequest&) {
  return make_frame(ShutdownRequest::kType, json::object());
}

Frame to_frame(const ShutdownReply&) {
  return make_frame(ShutdownReply::kType, json::object());
}

Frame to_frame(const ErrorReply& m) {
  return make_frame(ErrorReply::kType,
                    {{"kind", to_string(m.kind)}, {"message", m.message}, {"fatal", m.fatal}});
}

template <>
HelloRequest from_frame<HelloRequest>(const Frame& frame) {
  const json header = expect(frame, HelloRequest::kType);
  const Reader r(header, "hello request");
  return HelloRequest{r.get<int>("protocol")};
}

template <>
HelloReply from_frame<HelloReply>(const Frame& frame) {
  const json header = expect(frame, HelloReply::kType);
  const Reader r(header, "hello reply");
  HelloReply m;
  m.protocol = r.get<int>("protocol");
  m.device = read_device(r.object("device"));
  m.worker_version = r.get<std::string>("worker_version");
  m.nvrtc_version = r.get<std::string>("nvrtc_version");
  m.templates = r.get<std::string>("templates");
  m.pid = r.get<int64_t>("pid");
  m.simulated = r.get<bool>("simulated");
  return m;
}

template <>
SetProblemRequest from_frame<SetProblemRequest>(const Frame& frame) {
  const json header = expect(frame, SetProblemRequest::kType);
  const Reader r(header, "set_problem request");
  SetProblemRequest m;
  m.problem = read_problem(r.object("problem"));
  m.seed = r.get<uint64_t>("seed");
  m.timing = read_timing_options(r.object("timing"));
  return m;
}

template <>
ProblemReady from_frame<ProblemReady>(const Frame& frame) {
  const json header = expect(frame, ProblemReady::kType);
  return ProblemReady{read_timing(Reader(header, "problem_ready reply").object("cublas"))};
}

template <>
EvaluateRequest from_frame<EvaluateRequest>(const Frame& frame) {
  const json header = expect(frame, EvaluateRequest::kType);
  const Reader r(header, "evaluate request");
  EvaluateRequest m;
  m.template_name = r.get<std::string>("template");
  m.template_hash = r.get<std::string>("template_hash");
  m.config_key = r.get<std::string>("config");
  m.timing = read_timing_options(r.object("timing"));
  m.error_bound = r.number("error_bound");
  m.cubin = frame.payload;
  return m;
}

template <>
EvaluateReply from_frame<EvaluateReply>(const Frame& frame) {
  const json header = expect(frame, EvaluateReply::kType);
  const Reader r(header, "measurement reply");
  return EvaluateReply{read_measurement(r.object("measurement")), r.get<bool>("fatal")};
}

template <>
ShutdownRequest from_frame<ShutdownRequest>(const Frame& frame) {
  expect(frame, ShutdownRequest::kType);
  return ShutdownRequest{};
}

template <>
ShutdownReply from_frame<ShutdownReply>(const Frame& frame) {
  expect(frame, ShutdownReply::kType);
  return ShutdownReply{};
}

template <>
ErrorReply from_frame<ErrorReply>(const Frame& frame) {
  const json header = expect(frame, ErrorReply::kType);
  const Reader r(header, "error reply");
  return ErrorReply{parse_error_kind(r.get<std::string>("kind")), r.get<std::string>("message"),
                    r.get<bool>("fatal")};
}

}  // namespace gemmforge::tuner
