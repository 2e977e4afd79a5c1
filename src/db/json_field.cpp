// Path-aware accessors for untrusted JSON.
#include "db/json_field.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

const char* type_name(const nlohmann::json& value) {
  if (value.is_number()) return "a number";
  if (value.is_string()) return "a string";
  if (value.is_boolean()) return "a boolean";
  if (value.is_null()) return "null";
  if (value.is_array()) return "an array";
  return "an object";
}

}  // namespace

void JsonField::fail(const std::string& what) const {
  throw InvalidArgumentError(fmt::format("{}: {}", path_.empty() ? "the document" : path_, what));
}

std::string JsonField::shown() const {
  constexpr size_t kShown = 60;
  std::string text = value_.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
  if (text.size() > kShown) text = text.substr(0, kShown) + "...";
  return text;
}

const nlohmann::json& JsonField::object() const {
  if (!value_.is_object()) fail(fmt::format("expected an object, found {}", type_name(value_)));
  return value_;
}

const nlohmann::json& JsonField::array() const {
  if (!value_.is_array()) fail(fmt::format("expected an array, found {}", type_name(value_)));
  return value_;
}

JsonField JsonField::at(const char* key) const {
  const nlohmann::json& members = object();
  const auto found = members.find(key);
  const std::string path = path_.empty() ? key : path_ + "." + key;
  if (found == members.end()) throw InvalidArgumentError(fmt::format("{}: missing", path));
  return JsonField(*found, path);
}

std::optional<JsonField> JsonField::find(const char* key) const {
  const nlohmann::json& members = object();
  const auto found = members.find(key);
  if (found == members.end() || found->is_null()) return std::nullopt;
  return JsonField(*found, path_.empty() ? key : path_ + "." + key);
}

void JsonField::only(std::initializer_list<const char*> known) const {
  for (const auto& [key, value] : object().items()) {
    bool listed = false;
    for (const char* name : known) listed = listed || key == name;
    if (!listed) {
      std::string names;
      for (const char* name : known) names += fmt::format("{}{}", names.empty() ? "" : ", ", name);
      fail(fmt::format("unknown member \"{}\"; expected only {}", key, names));
    }
  }
}

JsonField JsonField::element(size_t index) const {
  return JsonField(array().at(index), fmt::format("{}[{}]", path_, index));
}

std::string JsonField::text(size_t max_bytes, bool allow_empty) const {
  if (!value_.is_string()) fail(fmt::format("{} is not a string", shown()));
  const std::string& text = value_.get_ref<const std::string&>();
  if (text.empty() && !allow_empty) fail("is empty");
  if (text.size() > max_bytes)
    fail(fmt::format("is {} bytes long; at most {} are allowed", text.size(), max_bytes));
  return text;
}

int64_t JsonField::integer(int64_t lo, int64_t hi, const char* meaning) const {
  // Unsigned values above INT64_MAX and floats with a fraction are not integers we can store.
  const bool fits = value_.is_number_integer() &&
                    (!value_.is_number_unsigned() ||
                     value_.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  if (!fits) fail(fmt::format("{} is not an integer", shown()));
  const int64_t number = value_.get<int64_t>();
  if (number < lo || number > hi) fail(fmt::format("{} is not {} in {}..{}", number, meaning, lo, hi));
  return number;
}

double JsonField::number(double lo, double hi, const char* meaning) const {
  if (!value_.is_number()) fail(fmt::format("{} is not a number", shown()));
  const double number = value_.get<double>();
  if (!std::isfinite(number) || number < lo || number > hi) {
    fail(std::isinf(hi) ? fmt::format("{} is not {} >= {}", shown(), meaning, lo)
                        : fmt::format("{} is not {} in {}..{}", shown(), meaning, lo, hi));
  }
  return number;
}

}  // namespace gemmforge::db
