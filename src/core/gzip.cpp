// Inflating gzip data with zlib, whole or as a stream, and deflating a stream into it.
#include "core/gzip.hpp"

#include <fmt/format.h>

#include <iterator>
#include <sstream>

#include "gemmforge/error.hpp"

namespace gemmforge {

namespace {

constexpr size_t kChunk = 1 << 16;
// 16 + MAX_WBITS: a gzip header and trailer around the deflate data, the trailer's CRC checked.
constexpr int kGzipWindow = 16 + MAX_WBITS;

std::string damaged(const z_stream& s) {
  return fmt::format("damaged gzip data ({})", s.msg != nullptr ? s.msg : "zlib error");
}

}  // namespace

std::string gunzip(const std::string& bytes, const std::string& origin) {
  if (!has_gzip_magic(bytes.data(), bytes.size()))
    throw InvalidArgumentError(fmt::format("{}: not gzip data", origin));
  std::istringstream source(bytes);
  GzipInputBuffer inflater(source);
  std::string text((std::istreambuf_iterator<char>(&inflater)), std::istreambuf_iterator<char>());
  if (!inflater.error().empty()) throw InvalidArgumentError(fmt::format("{}: {}", origin, inflater.error()));
  return text;
}

GzipInputBuffer::GzipInputBuffer(std::istream& source) : source_(source), in_(kChunk), out_(kChunk) {
  if (inflateInit2(&stream_, kGzipWindow) != Z_OK) throw InternalError("zlib could not start inflating");
  setg(out_.data(), out_.data(), out_.data());
}

GzipInputBuffer::~GzipInputBuffer() {
  inflateEnd(&stream_);
}

bool GzipInputBuffer::fill_input() {
  source_.read(in_.data(), static_cast<std::streamsize>(in_.size()));
  const std::streamsize got = source_.gcount();
  if (got <= 0) return false;
  stream_.next_in = reinterpret_cast<Bytef*>(in_.data());
  stream_.avail_in = static_cast<uInt>(got);
  return true;
}

GzipInputBuffer::int_type GzipInputBuffer::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  while (!ended_ && error_.empty()) {
    if (stream_.avail_in == 0 && !fill_input()) {
      error_ = "the gzip data ends early (truncated?)";
      break;
    }
    stream_.next_out = reinterpret_cast<Bytef*>(out_.data());
    stream_.avail_out = static_cast<uInt>(out_.size());
    const int status = inflate(&stream_, Z_NO_FLUSH);
    const size_t produced = out_.size() - stream_.avail_out;
    if (status == Z_STREAM_END) {
      // Another member may follow, as `cat a.gz b.gz` makes; the data ends where no byte does.
      if (stream_.avail_in == 0 && !fill_input()) {
        ended_ = true;
      } else if (inflateReset(&stream_) != Z_OK) {
        error_ = "zlib could not restart inflating";
      }
    } else if (status != Z_OK && status != Z_BUF_ERROR) {
      error_ = damaged(stream_);
    }
    if (produced > 0) {
      setg(out_.data(), out_.data(), out_.data() + produced);
      return traits_type::to_int_type(*gptr());
    }
  }
  return traits_type::eof();
}

GzipOutputBuffer::GzipOutputBuffer(std::ostream& sink) : sink_(sink), in_(kChunk), out_(kChunk) {
  if (deflateInit2(&stream_, 9, Z_DEFLATED, kGzipWindow, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw InternalError("zlib could not start deflating");
  setp(in_.data(), in_.data() + in_.size());
}

GzipOutputBuffer::~GzipOutputBuffer() {
  deflateEnd(&stream_);
}

bool GzipOutputBuffer::deflate_pending(int flush) {
  stream_.next_in = reinterpret_cast<Bytef*>(pbase());
  stream_.avail_in = static_cast<uInt>(pptr() - pbase());
  for (;;) {
    stream_.next_out = reinterpret_cast<Bytef*>(out_.data());
    stream_.avail_out = static_cast<uInt>(out_.size());
    const int status = deflate(&stream_, flush);
    if (status == Z_STREAM_ERROR) throw InternalError("zlib could not deflate");
    sink_.write(out_.data(), static_cast<std::streamsize>(out_.size() - stream_.avail_out));
    if (!sink_) return false;
    const bool done = flush == Z_FINISH ? status == Z_STREAM_END : stream_.avail_out != 0;
    if (done) break;
  }
  setp(in_.data(), in_.data() + in_.size());
  return true;
}

GzipOutputBuffer::int_type GzipOutputBuffer::overflow(int_type ch) {
  if (finished_ || !deflate_pending(Z_NO_FLUSH)) return traits_type::eof();
  if (!traits_type::eq_int_type(ch, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(ch);
    pbump(1);
  }
  return traits_type::not_eof(ch);
}

bool GzipOutputBuffer::finish() {
  if (finished_) return static_cast<bool>(sink_);
  finished_ = true;
  return deflate_pending(Z_FINISH) && sink_.flush();
}

}  // namespace gemmforge
