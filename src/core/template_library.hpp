// The kernel templates gemmforge knows: sources and manifests built into the binary, or read from a
// folder named by GEMMFORGE_TEMPLATE_DIR while developing templates.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/manifest.hpp"

namespace gemmforge {

/// The support source of the passes some templates run over the operands before their main kernel
/// (Manifest::prepares_operands; rtc/operand_passes.hpp).
inline constexpr const char* kOperandPassesSource = "operand_passes.cu";

struct KernelTemplate {
  Manifest manifest;
  std::string source;  ///< the .cu text
  /// Hash of the source, the headers it includes and the manifest, and of the operand passes' source and
  /// headers where it runs them (their speed is part of its measured times): changes when any does.
  std::string hash;
};

class TemplateLibrary {
 public:
  /// Headers every template may include, by name ("gemm_args.cuh").
  using Headers = std::map<std::string, std::string>;

  /// The library of this process: the folder in GEMMFORGE_TEMPLATE_DIR if set, else the built-in one.
  static const TemplateLibrary& instance();
  /// Templates built into the binary.
  static TemplateLibrary builtin();
  /// Every *.json manifest in `folder` with its .cu source, and every *.cuh header there.
  static TemplateLibrary from_directory(const std::string& folder);
  /// From explicit files (path -> content), as embedded or read from disk.
  static TemplateLibrary from_files(const std::map<std::string, std::string>& files,
                                    const std::string& origin);

  /// Throws NotFoundError listing the known templates.
  const KernelTemplate& get(const std::string& name) const;
  const KernelTemplate* find(const std::string& name) const;
  /// Templates in name order; only those whose dtype matches when one is given.
  std::vector<const KernelTemplate*> all() const;
  const Headers& headers() const { return headers_; }
  /// Source of a support file that has no manifest (e.g. "util.cu"); throws NotFoundError.
  const std::string& support_source(const std::string& file) const;
  /// Hash of a support source and the headers it includes; throws NotFoundError.
  std::string support_hash(const std::string& file) const;
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::map<std::string, std::shared_ptr<const KernelTemplate>> templates_;
  std::map<std::string, std::string> sources_;  // every .cu file by name
  Headers headers_;
};

}  // namespace gemmforge
