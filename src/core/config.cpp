// Config values and their canonical text key.
#include "core/config.hpp"

#include <fmt/format.h>

#include <charconv>

#include "gemmforge/error.hpp"

namespace gemmforge {

std::optional<int64_t> Config::find(const std::string& name) const {
  for (const auto& [key, value] : values_) {
    if (key == name) return value;
  }
  return std::nullopt;
}

int64_t Config::at(const std::string& name) const {
  if (auto value = find(name)) return *value;
  throw InvalidArgumentError(fmt::format("config of '{}' has no parameter '{}'", template_name_, name));
}

void Config::set(const std::string& name, int64_t value) {
  for (auto& [key, stored] : values_) {
    if (key == name) {
      stored = value;
      return;
    }
  }
  values_.emplace_back(name, value);
}

std::string Config::key() const {
  std::string out;
  for (const auto& [name, value] : values_) {
    if (!out.empty()) out += ',';
    out += fmt::format("{}={}", name, value);
  }
  return out;
}

Config Config::parse_key(const std::string& template_name, const std::string& key) {
  Values values;
  size_t start = 0;
  while (start < key.size()) {
    size_t end = key.find(',', start);
    if (end == std::string::npos) end = key.size();
    const std::string item = key.substr(start, end - start);
    const size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InvalidArgumentError(fmt::format("config '{}': item '{}' is not NAME=VALUE", key, item));
    }
    int64_t value = 0;
    const char* first = item.data() + equals + 1;
    const char* last = item.data() + item.size();
    auto [ptr, error] = std::from_chars(first, last, value);
    if (error != std::errc() || ptr != last || first == last) {
      throw InvalidArgumentError(fmt::format("config '{}': value of '{}' is not an integer", key, item));
    }
    values.emplace_back(item.substr(0, equals), value);
    start = end + 1;
  }
  return Config(template_name, std::move(values));
}

}  // namespace gemmforge
