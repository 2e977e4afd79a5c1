// A point in a template's parameter space: named integer values, in the manifest's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gemmforge {

class Config {
 public:
  using Values = std::vector<std::pair<std::string, int64_t>>;

  Config() = default;
  Config(std::string template_name, Values values)
      : template_name_(std::move(template_name)), values_(std::move(values)) {}

  const std::string& template_name() const { return template_name_; }
  const Values& values() const { return values_; }

  std::optional<int64_t> find(const std::string& name) const;
  /// Throws InvalidArgumentError when the parameter is absent.
  int64_t at(const std::string& name) const;
  /// Replaces a value, or appends the parameter when absent.
  void set(const std::string& name, int64_t value);

  /// "BM=128,BN=128,BK=8,..." in stored order: the identity of a config inside its template.
  std::string key() const;
  /// Inverse of key(); throws InvalidArgumentError on malformed text.
  static Config parse_key(const std::string& template_name, const std::string& key);

  bool operator==(const Config& other) const = default;

 private:
  std::string template_name_;
  Values values_;
};

}  // namespace gemmforge
