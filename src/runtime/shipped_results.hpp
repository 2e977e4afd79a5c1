// Tuning results shipped inside gemmforge: db/tuned/*.json.gz, exported from tuning runs on real GPUs (kept
// compressed; the build unpacks them), and the cubins of their kernels, db/tuned/*.cubins, all embedded at
// build time. They serve GPU models the user's
// database knows nothing of, without waiting for NVRTC, and with every trial they carry they train the
// performance model. Read straight from the documents, validated as an import is, without a database: a few
// tens of milliseconds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <memory>

#include "core/config.hpp"
#include "core/template_library.hpp"
#include "db/records.hpp"
#include "rtc/cubin_bundle.hpp"
#include "runtime/result_source.hpp"

namespace gemmforge::runtime {

/// JSON exports (*.json) and cubin bundles (*.cubins) by file name.
using ResultFiles = std::map<std::string, std::string>;

/// The files embedded at build time (none when db/tuned/ held none).
ResultFiles builtin_result_files();
/// Every *.json, *.json.gz (unpacked, under its name without .gz) and *.cubins file of a folder. Throws
/// NotFoundError when it is not a folder, InvalidArgumentError for damaged gzip data or an export there
/// both compressed and not.
ResultFiles result_files_in(const std::string& folder);

class ShippedResults : public ResultSource {
 public:
  /// Validates every export as `gemmforge import` does and reads the index of every bundle. Throws
  /// InvalidArgumentError naming the file and the fault for a file that is not a valid export or bundle.
  /// Results measured with another source of their template are kept (their cuBLAS times still count) but
  /// never served, nor fitted, nor listed by bests().
  ShippedResults(const ResultFiles& files, const std::string& origin, const TemplateLibrary& library);

  const std::string& label() const override { return label_; }
  std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) override;
  void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override;
  std::vector<DeviceInfo> devices() override { return devices_; }
  /// In the order the exports list the trials.
  std::vector<KernelProblem> problems_of(const DeviceInfo& model, const std::string& template_name) override;

  /// Results (each problem's best on a device) and every trial, deduplicated.
  size_t results() const { return results_.size(); }
  size_t trials() const { return trials_.size(); }

  /// The configs that ran `problem` fastest on devices of `device`'s model with an earlier source of their
  /// template (trials kept but never served): at most `per_template` of each template, fastest first. A
  /// retune after a template changes starts from them.
  std::vector<Config> retired(const DeviceInfo& device, const KernelProblem& problem,
                              const TemplateLibrary& library, size_t per_template) const;

  /// Every servable result (a problem's best on a device) of devices of compute capability `cc`, with its
  /// device.
  std::vector<std::pair<DeviceInfo, db::TrialRecord>> bests(int cc) const;

  /// The shipped cubin stored under a cache key (rtc::KernelSpec::cubin_key), or empty.
  std::vector<char> cubin(const std::string& key) const;
  size_t cubins() const;
  /// The NVRTC versions of the shipped bundles.
  std::vector<std::string> cubin_nvrtc_versions() const;

 private:
  struct Entry {
    size_t device;  // index into devices_
    db::TrialRecord trial;
  };

  std::string label_ = "shipped results";
  std::vector<DeviceInfo> devices_;
  std::vector<Entry> results_;
  std::vector<Entry> trials_;                                     // results included
  std::vector<std::unique_ptr<const std::string>> bundle_bytes_;  // what the bundles' views point into
  std::vector<rtc::CubinBundle> bundles_;
};

/// The files shipped_results() reads: those of the folder named by GEMMFORGE_TUNED_DIR when it is set, else
/// the built-in ones; `origin` names them in messages.
struct ShippedFiles {
  ResultFiles files;
  std::string origin;
};
ShippedFiles shipped_result_files();

/// The shipped results of this process, loaded on first use: from the folder named by GEMMFORGE_TUNED_DIR
/// when it is set (for developing and testing them), else the built-in files.
ShippedResults& shipped_results();

/// shipped_results() as a source that loads them only when first asked something, so holding it is free.
ResultSource& shipped_source();

}  // namespace gemmforge::runtime
