// Inflating gzip data with zlib.
#include "core/gzip.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <climits>

#include "gemmforge/error.hpp"

namespace gemmforge {

namespace {

// Releases the inflate state however the reading ends.
struct Inflater {
  z_stream stream{};
  Inflater() {
    // 16 + MAX_WBITS: a gzip header and trailer around the deflate data, the trailer's CRC checked.
    if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) throw InternalError("zlib could not start inflating");
  }
  ~Inflater() { inflateEnd(&stream); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
};

}  // namespace

std::string gunzip(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < 2 || static_cast<unsigned char>(bytes[0]) != 0x1f ||
      static_cast<unsigned char>(bytes[1]) != 0x8b) {
    throw InvalidArgumentError(fmt::format("{}: not gzip data", origin));
  }
  if (bytes.size() > UINT_MAX) throw InvalidArgumentError(fmt::format("{}: larger than 4 GiB", origin));
  Inflater inflater;
  z_stream& s = inflater.stream;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  s.avail_in = static_cast<uInt>(bytes.size());
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    s.next_out = reinterpret_cast<Bytef*>(chunk);
    s.avail_out = sizeof(chunk);
    const int status = inflate(&s, Z_NO_FLUSH);
    text.append(chunk, sizeof(chunk) - s.avail_out);
    if (status == Z_STREAM_END) {
      if (s.avail_in == 0) return text;
      if (inflateReset(&s) != Z_OK) throw InternalError("zlib could not restart inflating");
      continue;  // another member follows
    }
    if (status == Z_BUF_ERROR && s.avail_in == 0) {
      throw InvalidArgumentError(fmt::format("{}: the gzip data ends early (truncated?)", origin));
    }
    if (status != Z_OK && status != Z_BUF_ERROR) {
      throw InvalidArgumentError(
          fmt::format("{}: damaged gzip data ({})", origin, s.msg != nullptr ? s.msg : "zlib error"));
    }
  }
}

}  // namespace gemmforge
