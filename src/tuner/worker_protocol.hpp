// The byte framing between the tuner and its worker process: a fixed prefix, a JSON header, then an
// optional binary payload (a cubin). Knows nothing of what the messages mean (see worker_messages.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {

/// One message: a JSON object as text and the bytes that travel with it.
///
/// On the wire: "GFW1", the header length (uint32, little-endian), the payload length (uint64,
/// little-endian), the header bytes, the payload bytes. Lengths come first so a reader always knows how
/// much to wait for, and a binary payload needs no escaping.
struct Frame {
  std::string header;
  std::vector<char> payload;
};

inline constexpr char kFrameMagic[4] = {'G', 'F', 'W', '1'};
inline constexpr size_t kFramePrefixBytes = 16;
/// Limits that tell a corrupt length (stray output on the channel) from a real message.
inline constexpr uint32_t kMaxHeaderBytes = 1u << 20;
inline constexpr uint64_t kMaxPayloadBytes = 256ull << 20;

/// The channel to the worker carried something that is not a frame, or ended inside one.
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& message) : Error(ErrorKind::kInternal, message) {}
};

/// The frame's bytes as they go on the wire; throws ProtocolError when a part exceeds its limit.
std::string encode_frame(const Frame& frame);

/// Cuts frames out of a byte stream that arrives in pieces of any size (reads polled with a deadline).
class FrameDecoder {
 public:
  void feed(const char* data, size_t size);
  /// The next complete frame, or nullopt until more bytes arrive. Throws ProtocolError for a bad
  /// prefix; the decoder is then unusable (the stream has lost its framing).
  std::optional<Frame> next();
  /// Bytes received but not yet returned as a frame: non-zero means the stream stopped inside a frame.
  size_t pending() const { return buffer_.size() - start_; }

 private:
  std::vector<char> buffer_;
  size_t start_ = 0;  // first byte not yet consumed
};

/// What a non-blocking read of everything a socket held found: `ended` where the other end closed it,
/// `error` an errno where recv() failed (0 otherwise).
struct Drained {
  bool ended = false;
  int error = 0;
};

/// Feeds `decoder` every byte the non-blocking read of socket `fd` finds now. The bytes before the end of
/// the stream are fed too: a writer that sends its last frame and exits at once leaves that frame whole
/// in the decoder, however the reader's wake-up falls against the exit.
Drained drain_socket(int fd, FrameDecoder& decoder);

/// Reads one frame from a blocking descriptor. Returns nullopt at end of file between frames; throws
/// ProtocolError at end of file inside a frame, for a malformed frame, or when read() fails.
std::optional<Frame> read_frame(int fd);

/// Writes a whole frame to a blocking descriptor (pipe or socket; sockets are written without raising
/// SIGPIPE). Throws ProtocolError when the other end is gone or write() fails.
void write_frame(int fd, const Frame& frame);

/// Writes all of `bytes`, retrying on EINTR; returns errno on failure and 0 on success.
int write_all(int fd, const char* bytes, size_t size);

}  // namespace gemmforge::tuner
