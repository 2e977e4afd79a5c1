// Encoding and decoding of worker frames, and blocking frame I/O for the worker's side.
#include "tuner/worker_protocol.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gemmforge::tuner {
namespace {

void put_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t get_le(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return value;
}

struct Prefix {
  uint32_t header_bytes = 0;
  uint64_t payload_bytes = 0;
};

// Validates the 16-byte prefix; a wrong magic usually means something printed onto the channel.
Prefix parse_prefix(const char* bytes) {
  if (std::memcmp(bytes, kFrameMagic, sizeof(kFrameMagic)) != 0) {
    std::string shown;
    for (size_t i = 0; i < kFramePrefixBytes; ++i) {
      const unsigned char c = static_cast<unsigned char>(bytes[i]);
      shown += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
    }
    throw ProtocolError(fmt::format(
        "worker channel: expected a frame starting with \"GFW1\", got \"{}\" (something other than the "
        "protocol wrote to the channel)",
        shown));
  }
  Prefix prefix;
  prefix.header_bytes = static_cast<uint32_t>(get_le(bytes + 4, 4));
  prefix.payload_bytes = get_le(bytes + 8, 8);
  if (prefix.header_bytes > kMaxHeaderBytes) {
    throw ProtocolError(fmt::format("worker channel: a frame announces a {}-byte header (limit {})",
                                    prefix.header_bytes, kMaxHeaderBytes));
  }
  if (prefix.payload_bytes > kMaxPayloadBytes) {
    throw ProtocolError(fmt::format("worker channel: a frame announces a {}-byte payload (limit {})",
                                    prefix.payload_bytes, kMaxPayloadBytes));
  }
  return prefix;
}

// Reads exactly `size` bytes; returns how many arrived before end of file.
size_t read_exactly(int fd, char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t got = ::read(fd, out + done, size - done);
    if (got == 0) break;
    if (got < 0) {
      if (errno == EINTR) continue;
      throw ProtocolError(fmt::format("worker channel: read failed: {}", std::strerror(errno)));
    }
    done += static_cast<size_t>(got);
  }
  return done;
}

}  // namespace

std::string encode_frame(const Frame& frame) {
  if (frame.header.size() > kMaxHeaderBytes) {
    throw ProtocolError(fmt::format("worker channel: a {}-byte header exceeds the limit of {} bytes",
                                    frame.header.size(), kMaxHeaderBytes));
  }
  if (frame.payload.size() > kMaxPayloadBytes) {
    throw ProtocolError(fmt::format("worker channel: a {}-byte payload exceeds the limit of {} bytes",
                                    frame.payload.size(), kMaxPayloadBytes));
  }
  std::string out(kFrameMagic, sizeof(kFrameMagic));
  out.reserve(kFramePrefixBytes + frame.header.size() + frame.payload.size());
  put_le(out, frame.header.size(), 4);
  put_le(out, frame.payload.size(), 8);
  out += frame.header;
  out.append(frame.payload.data(), frame.payload.size());
  return out;
}

void FrameDecoder::feed(const char* data, size_t size) {
  // Compact only when the consumed part dominates, so a stream of small frames costs linear time.
  if (start_ > 0 && start_ >= buffer_.size() / 2) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(start_));
    start_ = 0;
  }
  buffer_.insert(buffer_.end(), data, data + size);
}

std::optional<Frame> FrameDecoder::next() {
  if (pending() < kFramePrefixBytes) return std::nullopt;
  const char* base = buffer_.data() + start_;
  const Prefix prefix = parse_prefix(base);
  const size_t total = kFramePrefixBytes + prefix.header_bytes + prefix.payload_bytes;
  if (pending() < total) return std::nullopt;
  Frame frame;
  frame.header.assign(base + kFramePrefixBytes, prefix.header_bytes);
  const char* payload = base + kFramePrefixBytes + prefix.header_bytes;
  frame.payload.assign(payload, payload + prefix.payload_bytes);
  start_ += total;
  return frame;
}

std::optional<Frame> read_frame(int fd) {
  char prefix_bytes[kFramePrefixBytes];
  const size_t got = read_exactly(fd, prefix_bytes, kFramePrefixBytes);
  if (got == 0) return std::nullopt;
  if (got < kFramePrefixBytes) {
    throw ProtocolError(fmt::format("worker channel: end of input after {} bytes of a frame prefix", got));
  }
  const Prefix prefix = parse_prefix(prefix_bytes);
  Frame frame;
  frame.header.resize(prefix.header_bytes);
  frame.payload.resize(prefix.payload_bytes);
  if (read_exactly(fd, frame.header.data(), frame.header.size()) < frame.header.size() ||
      read_exactly(fd, frame.payload.data(), frame.payload.size()) < frame.payload.size()) {
    throw ProtocolError("worker channel: end of input inside a frame");
  }
  return frame;
}

Drained drain_socket(int fd, FrameDecoder& decoder) {
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (got > 0) {
      decoder.feed(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got == 0) return Drained{true, 0};
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Drained{};
    return Drained{false, errno};
  }
}

int write_all(int fd, const char* bytes, size_t size) {
  bool socket = true;
  while (size > 0) {
    // send() with MSG_NOSIGNAL reports a vanished reader as EPIPE instead of killing the process.
    ssize_t wrote = socket ? ::send(fd, bytes, size, MSG_NOSIGNAL) : ::write(fd, bytes, size);
    if (wrote < 0 && socket && errno == ENOTSOCK) {
      socket = false;
      continue;
    }
    if (wrote < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    bytes += wrote;
    size -= static_cast<size_t>(wrote);
  }
  return 0;
}

void write_frame(int fd, const Frame& frame) {
  const std::string bytes = encode_frame(frame);
  if (const int error = write_all(fd, bytes.data(), bytes.size()); error != 0) {
    throw ProtocolError(fmt::format("worker channel: write failed: {}", std::strerror(error)));
  }
}

}  // namespace gemmforge::tuner
