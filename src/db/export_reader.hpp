// Reading an export document as a stream: the header members are collected, and every entry of "devices",
// "results", "vendor" and "trials" is handed over, parsed, as soon as it is complete, so memory holds one
// entry at a time whatever the size of the file. Internal to src/db.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <nlohmann/json.hpp>
#include <string>

namespace gemmforge::db {

/// Deepest JSON nesting accepted; an export nests four levels.
inline constexpr int kMaxExportDepth = 16;
/// Most values one entry may hold; an entry of an export holds about 40.
inline constexpr int kMaxEntryValues = 4096;

enum class Section { kDevices, kResults, kVendor, kTrials };
/// "devices", "results", "vendor", "trials".
const char* to_string(Section section) noexcept;

class ExportVisitor {
 public:
  virtual ~ExportVisitor() = default;
  /// A member of the document other than the four arrays ("format", "format_version", ...), in the
  /// order it is met; the reader refuses members that are not one of the known ones.
  virtual void header(const std::string& key, const nlohmann::json& value) = 0;
  /// The start of one of the arrays: true reads it, false stops reading the document there (read_export
  /// then returns without reading the rest).
  virtual bool section(Section section) = 0;
  /// Entry `index` of an array, complete.
  virtual void entry(Section section, size_t index, const nlohmann::json& entry) = 0;
};

/// Parses the document in `in` and calls `visitor` as it goes, until its end or until the visitor stops
/// at a section. Throws InvalidArgumentError naming `origin` for text that is not JSON (with the byte where
/// it stops being JSON), for a document that is not an object, for unknown or repeated members, for nesting
/// deeper than kMaxExportDepth and for entries larger than kMaxEntryValues; exceptions thrown by the
/// visitor propagate.
void read_export(std::istream& in, const std::string& origin, ExportVisitor& visitor);

/// The members a document may have, other than the arrays.
bool is_header_member(const std::string& key);

}  // namespace gemmforge::db
