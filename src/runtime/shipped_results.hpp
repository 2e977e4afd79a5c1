// Tuning results shipped inside gemmforge: db/tuned/*.json.gz, exported from tuning runs on real GPUs, and
// the cubins of their kernels, db/tuned/*.cubins, all embedded at build time as they are kept (the exports
// compressed). They serve GPU models the user's database knows nothing of, without waiting for NVRTC, and
// with every trial they carry they train the performance model. Read straight from the documents, validated
// as an import is, without a database, in two steps: the results at once (an export lists them before its
// trials, so its results come at the cost of a small file's), the trials when first asked for, which the
// performance model is, as it is fitted in the background.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <memory>
#include <mutex>

#include "core/config.hpp"
#include "core/template_library.hpp"
#include "db/import_document.hpp"
#include "db/records.hpp"
#include "rtc/cubin_bundle.hpp"
#include "runtime/result_source.hpp"

namespace gemmforge::runtime {

/// JSON exports (*.json: their JSON text, or gzip data inflated as they are read) and cubin bundles
/// (*.cubins) by file name.
using ResultFiles = std::map<std::string, std::string>;

/// The files embedded at build time, the exports compressed (none when db/tuned/ held none).
ResultFiles builtin_result_files();
/// Every *.json, *.json.gz (unpacked, under its name without .gz) and *.cubins file of a folder. Throws
/// NotFoundError when it is not a folder, InvalidArgumentError for damaged gzip data or an export there
/// both compressed and not.
ResultFiles result_files_in(const std::string& folder);

class ShippedResults : public ResultSource {
 public:
  /// Reads every export's header, devices and results, validated as `gemmforge import` validates them, and
  /// the index of every bundle; keeps the exports to read their trials, validated alike, when they are
  /// first needed (add_measurements, retired, problems_of, trials). Throws InvalidArgumentError naming the
  /// file and the fault for a file that is not a valid export or bundle (for a fault among the trials, at
  /// their first use). Results measured with another source of their template are kept (their cuBLAS times
  /// still count) but never served, nor fitted, nor listed by bests().
  ShippedResults(ResultFiles files, const std::string& origin, const TemplateLibrary& library);
  ShippedResults(const ShippedResults&) = delete;
  ShippedResults& operator=(const ShippedResults&) = delete;

  const std::string& label() const override { return label_; }
  std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) override;
  void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override;
  /// Whether every export lists its cuBLAS times ("vendor", format_version 2 on).
  bool knows_vendor_times() override { return vendor_known_; }
  std::optional<double> vendor_ms(const DeviceInfo& model, const KernelProblem& problem) override;
  std::vector<DeviceInfo> devices() override { return devices_; }
  /// In the order the exports list the trials.
  std::vector<KernelProblem> problems_of(const DeviceInfo& model, const std::string& template_name) override;

  /// Results (each problem's best on a device) and every trial, deduplicated.
  size_t results() const { return results_.size(); }
  size_t trials() const { return all_trials().size(); }

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
  struct Export {
    std::string where;  // the origin and the file's name, for messages
    std::string bytes;  // JSON text or gzip data
  };

  // Every trial (the results among them) of every export, read on the first call, by one thread.
  const std::vector<Entry>& all_trials() const;
  // The entries of an export's document as an import checks them.
  db::ImportDocument read(const Export& file, db::DocumentParts parts) const;

  std::string label_ = "shipped results";
  const TemplateLibrary& library_;
  std::vector<DeviceInfo> devices_;
  std::map<std::string, size_t> device_index_;  // by uuid
  std::vector<Entry> results_;
  struct VendorTime {
    size_t device;  // index into devices_
    KernelProblem problem;
    double cublas_ms;
  };
  std::vector<VendorTime> vendor_;  // every export's "vendor"
  bool vendor_known_ = true;        // every export has one
  std::vector<Export> exports_;
  mutable std::once_flag trials_read_;
  mutable std::vector<Entry> trials_;                             // results included
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
