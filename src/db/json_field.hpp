// Reading untrusted JSON with the path of every value at hand, so each rejection names where it is
// ("results[3].problem.m: 0 is not a size in 1..2147483647"). Internal to src/db.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gemmforge::db {

/// Longest text accepted for names, hashes, keys and timestamps.
inline constexpr size_t kMaxText = 4096;

/// A JSON value and the path that leads to it. Every accessor throws InvalidArgumentError naming the path.
class JsonField {
 public:
  JsonField(const nlohmann::json& value, std::string path) : value_(value), path_(std::move(path)) {}

  const nlohmann::json& value() const { return value_; }
  const std::string& path() const { return path_; }

  /// A required member of an object.
  JsonField at(const char* key) const;
  /// A member that may be absent or null.
  std::optional<JsonField> find(const char* key) const;
  /// Throws unless the object has no member but these: an unknown member is a typo or a field from a
  /// newer format, and silently dropping either would import something else than the file says.
  void only(std::initializer_list<const char*> known) const;
  /// The object, or the array, itself; throws unless the value is one.
  const nlohmann::json& object() const;
  const nlohmann::json& array() const;
  JsonField element(size_t index) const;

  /// A string of 1..max_bytes bytes (0..max_bytes when allow_empty).
  std::string text(size_t max_bytes = kMaxText, bool allow_empty = false) const;
  /// An integer (no fraction, no string) in lo..hi.
  int64_t integer(int64_t lo, int64_t hi, const char* meaning = "a value") const;
  /// A finite number in lo..hi (hi may be infinity).
  double number(double lo, double hi, const char* meaning = "a value") const;

  /// Throws InvalidArgumentError("<path>: <what>").
  [[noreturn]] void fail(const std::string& what) const;
  /// The value as JSON text, shortened for messages.
  std::string shown() const;

 private:
  const nlohmann::json& value_;
  std::string path_;
};

}  // namespace gemmforge::db
