// Writing and reading cubin bundles, each cubin compressed with zlib.
#include "rtc/cubin_bundle.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <sstream>

#include "gemmforge/error.hpp"

namespace gemmforge::rtc {
namespace {

constexpr std::string_view kMagic = "gemmforge-cubins 1 ";

// Names and keys hold no spaces; a config key ("BM=128,...") neither.
void check_word(const std::string& word, const char* what) {
  if (word.empty() || word.find_first_of(" \n") != std::string::npos) {
    throw InvalidArgumentError(
        fmt::format("a bundled cubin's {} '{}' is empty or holds a space", what, word));
  }
}

}  // namespace

std::string write_cubin_bundle(const std::vector<BundledCubin>& cubins, const std::string& nvrtc_version) {
  check_word(nvrtc_version, "NVRTC version");
  std::string out = std::string(kMagic) + nvrtc_version + "\n";
  for (const BundledCubin& c : cubins) {
    check_word(c.key, "key");
    check_word(c.template_name, "template");
    check_word(c.config_key, "config");
    uLongf stored = compressBound(static_cast<uLong>(c.cubin.size()));
    std::string compressed(stored, '\0');
    if (compress2(reinterpret_cast<Bytef*>(compressed.data()), &stored,
                  reinterpret_cast<const Bytef*>(c.cubin.data()), static_cast<uLong>(c.cubin.size()),
                  Z_BEST_COMPRESSION) != Z_OK) {
      throw InternalError(fmt::format("zlib could not compress the cubin {}", c.key));
    }
    compressed.resize(stored);
    out += fmt::format("{} {} {} {} {}\n", c.key, c.template_name, c.config_key, c.cubin.size(), stored);
    out += compressed;
  }
  return out;
}

CubinBundle::CubinBundle(std::string_view bytes, std::string origin) : origin_(std::move(origin)) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    throw InvalidArgumentError(fmt::format("{} is not a gemmforge cubin bundle", origin_));
  }
  const size_t first_line = bytes.find('\n');
  if (first_line == std::string_view::npos) throw InvalidArgumentError(fmt::format("{}: no header", origin_));
  nvrtc_version_ = std::string(bytes.substr(kMagic.size(), first_line - kMagic.size()));
  size_t at = first_line + 1;
  while (at < bytes.size()) {
    const size_t end = bytes.find('\n', at);
    if (end == std::string_view::npos)
      throw InvalidArgumentError(fmt::format("{}: a header is cut off", origin_));
    std::istringstream header{std::string(bytes.substr(at, end - at))};
    std::string key, template_name, config;
    size_t raw = 0, stored = 0;
    if (!(header >> key >> template_name >> config >> raw >> stored) || end + 1 + stored > bytes.size()) {
      throw InvalidArgumentError(fmt::format("{}: malformed entry at byte {}", origin_, at));
    }
    entries_[key] = Entry{raw, bytes.substr(end + 1, stored)};
    at = end + 1 + stored;
  }
}

std::vector<char> CubinBundle::find(const std::string& key) const {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return {};
  std::vector<char> cubin(it->second.raw_bytes);
  uLongf size = static_cast<uLongf>(cubin.size());
  if (uncompress(reinterpret_cast<Bytef*>(cubin.data()), &size,
                 reinterpret_cast<const Bytef*>(it->second.stored.data()),
                 static_cast<uLong>(it->second.stored.size())) != Z_OK ||
      size != cubin.size()) {
    throw InvalidArgumentError(fmt::format("{}: the cubin {} is damaged", origin_, key));
  }
  return cubin;
}

std::vector<std::string> CubinBundle::keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, entry] : entries_) keys.push_back(key);
  return keys;
}

}  // namespace gemmforge::rtc
