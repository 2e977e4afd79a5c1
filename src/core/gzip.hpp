// gzip-compressed exports: the shipped ones are kept as NAME.json.gz (db/tuned/), a folder of results
// (GEMMFORGE_TUNED_DIR, `gemmforge bundle --results`) may hold them so, `import`, `merge`, `query` and
// `report` read an export compressed or not, and `export -o NAME.gz` writes one compressed.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <istream>
#include <ostream>
#include <streambuf>
#include <string>
#include <vector>

namespace gemmforge {

/// True for data that starts as gzip does (its first byte, 0x1f, starts neither JSON nor SQLite).
inline bool starts_as_gzip(int first_byte) {
  return first_byte == 0x1f;
}
/// True for data that carries gzip's two magic bytes.
inline bool has_gzip_magic(const char* bytes, size_t size) {
  return size >= 2 && starts_as_gzip(static_cast<unsigned char>(bytes[0])) &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

/// The contents of the gzip data `bytes`, its members one after another as `gzip -d` gives them. Throws
/// InvalidArgumentError naming `origin` for data that is not gzip, is damaged or ends early.
std::string gunzip(const std::string& bytes, const std::string& origin);

/// A stream buffer that inflates the gzip data read from `source` a chunk at a time, so that a stream over
/// it reads a compressed file of any size in bounded memory. Damaged or cut data ends the stream early:
/// error() then says why (empty while the data is sound), for the reader to report instead of what the
/// early end made of the text.
class GzipInputBuffer : public std::streambuf {
 public:
  explicit GzipInputBuffer(std::istream& source);
  ~GzipInputBuffer() override;
  GzipInputBuffer(const GzipInputBuffer&) = delete;
  GzipInputBuffer& operator=(const GzipInputBuffer&) = delete;

  const std::string& error() const { return error_; }

 protected:
  int_type underflow() override;

 private:
  bool fill_input();

  std::istream& source_;
  z_stream stream_{};
  std::vector<char> in_;
  std::vector<char> out_;
  std::string error_;
  bool ended_ = false;  // the last member's trailer was read and no byte follows
};

/// A stream buffer that deflates what is written to it into gzip data on `sink` (level 9, no name and no
/// time in the header, so the same text gives the same bytes), a chunk at a time. finish() writes the
/// rest and the trailer; nothing written after it counts.
class GzipOutputBuffer : public std::streambuf {
 public:
  explicit GzipOutputBuffer(std::ostream& sink);
  ~GzipOutputBuffer() override;
  GzipOutputBuffer(const GzipOutputBuffer&) = delete;
  GzipOutputBuffer& operator=(const GzipOutputBuffer&) = delete;

  /// Compresses what is pending and ends the gzip data; false where the sink failed.
  bool finish();

 protected:
  int_type overflow(int_type ch) override;

 private:
  bool deflate_pending(int flush);

  std::ostream& sink_;
  z_stream stream_{};
  std::vector<char> in_;
  std::vector<char> out_;
  bool finished_ = false;
};

}  // namespace gemmforge
