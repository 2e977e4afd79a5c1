// Cubins shipped inside gemmforge (db/tuned/*.cubins): the kernels of the shipped results, compiled ahead
// for one architecture, so that a problem served from shipped results never waits for NVRTC. Each cubin is
// stored under its cache key (KernelSpec::cubin_key: template hash, defines, architecture, NVRTC version),
// so one built from other template code or by another NVRTC is simply never found.
//
// Format: "gemmforge-cubins 1 <NVRTC version>\n", then per cubin a header line "<key> <template> <config>
// <raw bytes> <stored bytes>\n" followed by its zlib-compressed bytes, each cubin compressed on its own so
// that loading one decompresses only it.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace gemmforge::rtc {

struct BundledCubin {
  std::string key;  ///< KernelSpec::cubin_key
  std::string template_name;
  std::string config_key;
  std::vector<char> cubin;
};

/// The bundle's bytes, recording the NVRTC version that compiled the cubins; the order of `cubins` is kept.
std::string write_cubin_bundle(const std::vector<BundledCubin>& cubins, const std::string& nvrtc_version);

class CubinBundle {
 public:
  CubinBundle() = default;
  /// Reads the index of a bundle (the bytes must outlive it). Throws InvalidArgumentError naming `origin`
  /// for a malformed bundle.
  CubinBundle(std::string_view bytes, std::string origin);

  /// The cubin stored under `key`, decompressed; empty when there is none.
  std::vector<char> find(const std::string& key) const;
  bool contains(const std::string& key) const { return entries_.count(key) != 0; }
  /// The NVRTC version that compiled the cubins, e.g. "13.0".
  const std::string& nvrtc_version() const { return nvrtc_version_; }
  size_t size() const { return entries_.size(); }
  /// Keys in the bundle, in key order.
  std::vector<std::string> keys() const;

 private:
  struct Entry {
    size_t raw_bytes;
    std::string_view stored;
  };
  std::string origin_;
  std::string nvrtc_version_;
  std::map<std::string, Entry> entries_;
};

}  // namespace gemmforge::rtc
