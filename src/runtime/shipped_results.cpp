// Reading the shipped results with the validation of `gemmforge import`.
#include "runtime/shipped_results.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/embedded.hpp"
#include "core/gzip.hpp"
#include "db/exchange.hpp"
#include "db/import_document.hpp"
#include "gemmforge/error.hpp"
#include "runtime/config_check.hpp"
#include "runtime/exchange_files.hpp"

namespace gemmforge {

namespace runtime {

ResultFiles builtin_result_files() {
  ResultFiles files;
  for (std::size_t i = 0; i < embedded::kTunedCount; ++i) {
    const embedded::File& file = embedded::kTuned[i];
    // An export is known by its name without ".gz", as in a folder; its bytes stay compressed.
    std::string name = file.path;
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    files[name] = std::string(reinterpret_cast<const char*>(file.data), file.size());
  }
  return files;
}

ResultFiles result_files_in(const std::string& folder) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(folder))
    throw NotFoundError(fmt::format("results folder '{}' does not exist", folder));
  ResultFiles files;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const fs::path& path = entry.path();
    const bool gzipped = path.extension() == ".gz" && path.stem().extension() == ".json";
    if (!entry.is_regular_file() ||
        (!gzipped && path.extension() != ".json" && path.extension() != ".cubins"))
      continue;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    // An export is known by its name without ".gz": a folder may not hold it both ways.
    const std::string name = gzipped ? path.stem().string() : path.filename().string();
    if (files.count(name) != 0) {
      throw InvalidArgumentError(
          fmt::format("results folder '{}' holds {} both compressed and not: keep one", folder, name));
    }
    files[name] = gzipped ? gunzip(text.str(), path.string()) : text.str();
  }
  return files;
}

namespace {

std::string trial_identity(size_t device, const db::TrialRecord& t) {
  return fmt::format("{}|{}|{}|{}", device, t.problem.to_string(), t.template_name, t.config_key);
}

}  // namespace

ShippedResults::ShippedResults(ResultFiles files, const std::string& origin, const TemplateLibrary& library)
    : library_(library) {
  for (auto& [name, bytes] : files) {
    const std::string where = origin + "/" + name;
    if (std::filesystem::path(name).extension() == ".cubins") {
      bundle_bytes_.push_back(std::make_unique<const std::string>(std::move(bytes)));
      bundles_.emplace_back(*bundle_bytes_.back(), where);
      continue;
    }
    exports_.push_back(Export{where, std::move(bytes)});
    const db::ImportDocument document = read(exports_.back(), db::DocumentParts::kDevicesAndResults);
    for (const DeviceInfo& device : document.devices) {
      if (device_index_.emplace(device.uuid, devices_.size()).second) devices_.push_back(device);
    }
    for (const db::ImportedTrial& r : document.results) {
      results_.push_back(Entry{device_index_.at(r.device_uuid), r.trial});
      results_.back().trial.device_uuid = devices_[results_.back().device].uuid;
    }
    vendor_known_ = vendor_known_ && document.has_vendor;
    for (const db::ImportedVendorTime& v : document.vendor)
      vendor_.push_back(VendorTime{device_index_.at(v.device_uuid), v.problem, v.cublas_ms});
  }
}

db::ImportDocument ShippedResults::read(const Export& file, db::DocumentParts parts) const {
  db::ImportDocument document;
  read_export_bytes(file.bytes, file.where, [&](std::istream& in) {
    document = db::read_import_document(in, file.where, import_checks(library_), parts);
  });
  return document;
}

const std::vector<ShippedResults::Entry>& ShippedResults::all_trials() const {
  std::call_once(trials_read_, [this] {
    // The exports are read side by side, and their trials kept in the order of the files.
    std::vector<std::future<db::ImportDocument>> documents;
    for (const Export& file : exports_) {
      documents.push_back(std::async(std::launch::async, [this, export_file = &file] {
        return read(*export_file, db::DocumentParts::kAll);
      }));
    }
    std::vector<Entry> trials;
    std::set<std::string> seen;  // trials already kept
    for (std::future<db::ImportDocument>& future : documents) {
      const db::ImportDocument document = future.get();
      for (const auto* list : {&document.results, &document.trials}) {
        for (const db::ImportedTrial& t : *list) {
          const size_t device = device_index_.at(t.device_uuid);
          if (!seen.insert(trial_identity(device, t.trial)).second) continue;
          trials.push_back(Entry{device, t.trial});
          trials.back().trial.device_uuid = devices_[device].uuid;
        }
      }
    }
    trials_ = std::move(trials);
  });
  return trials_;
}

std::vector<db::TrialRecord> ShippedResults::exact(const DeviceInfo& device, const KernelProblem& problem) {
  std::vector<std::pair<bool, db::TrialRecord>> found;  // (this card, result)
  for (const Entry& e : results_) {
    if (!e.trial.servable) continue;  // measured with another source of its template
    if (e.trial.problem == problem && same_gpu_model(devices_[e.device].name, device.name))
      found.emplace_back(devices_[e.device].uuid == device.uuid, e.trial);
  }
  return order_exact_results(std::move(found));
}

std::optional<double> ShippedResults::vendor_ms(const DeviceInfo& model, const KernelProblem& problem) {
  std::optional<double> fastest;
  for (const VendorTime& v : vendor_) {
    if (v.problem == problem && same_gpu_model(devices_[v.device].name, model.name) &&
        (!fastest || v.cublas_ms < *fastest))
      fastest = v.cublas_ms;
  }
  return fastest;
}

void ShippedResults::add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) {
  for (const Entry& e : all_trials()) {
    if (devices_[e.device].cc() == cc) add_trial(e.trial, devices_[e.device], library, data);
  }
}

std::vector<Config> ShippedResults::retired(const DeviceInfo& device, const KernelProblem& problem,
                                            const TemplateLibrary& library, size_t per_template) const {
  std::vector<const db::TrialRecord*> found;
  for (const Entry& e : all_trials()) {
    const db::TrialRecord& t = e.trial;
    if (!t.servable && t.status == db::TrialStatus::kOk && t.time_median_ms && t.problem == problem &&
        same_gpu_model(devices_[e.device].name, device.name))
      found.push_back(&t);
  }
  std::stable_sort(found.begin(), found.end(), [](const db::TrialRecord* a, const db::TrialRecord* b) {
    return *a->time_median_ms < *b->time_median_ms;
  });
  std::vector<Config> configs;
  std::map<std::string, size_t> taken;  // by template
  for (const db::TrialRecord* t : found) {
    const KernelTemplate* kernel_template = library.find(t->template_name);
    if (kernel_template == nullptr || taken[t->template_name] >= per_template) continue;
    try {
      Config config = kernel_template->manifest.normalize(Config::parse_key(t->template_name, t->config_key));
      if (std::find(configs.begin(), configs.end(), config) != configs.end()) continue;
      configs.push_back(std::move(config));
      ++taken[t->template_name];
    } catch (const InvalidArgumentError&) {
      // A config this manifest no longer reads.
    }
  }
  return configs;
}

std::vector<KernelProblem> ShippedResults::problems_of(const DeviceInfo& model,
                                                       const std::string& template_name) {
  std::vector<KernelProblem> problems;
  for (const Entry& e : all_trials()) {
    const db::TrialRecord& t = e.trial;
    if (t.template_name == template_name && t.status == db::TrialStatus::kOk &&
        same_gpu_model(devices_[e.device].name, model.name) &&
        std::find(problems.begin(), problems.end(), t.problem) == problems.end())
      problems.push_back(t.problem);
  }
  return problems;
}

std::vector<std::pair<DeviceInfo, db::TrialRecord>> ShippedResults::bests(int cc) const {
  std::vector<std::pair<DeviceInfo, db::TrialRecord>> found;
  for (const Entry& e : results_) {
    if (e.trial.servable && devices_[e.device].cc() == cc) found.emplace_back(devices_[e.device], e.trial);
  }
  return found;
}

std::vector<std::string> ShippedResults::cubin_nvrtc_versions() const {
  std::vector<std::string> versions;
  for (const rtc::CubinBundle& bundle : bundles_) versions.push_back(bundle.nvrtc_version());
  return versions;
}

std::vector<char> ShippedResults::cubin(const std::string& key) const {
  for (const rtc::CubinBundle& bundle : bundles_) {
    if (bundle.contains(key)) return bundle.find(key);
  }
  return {};
}

size_t ShippedResults::cubins() const {
  size_t count = 0;
  for (const rtc::CubinBundle& bundle : bundles_) count += bundle.size();
  return count;
}

ShippedFiles shipped_result_files() {
  if (const char* folder = std::getenv("GEMMFORGE_TUNED_DIR"); folder != nullptr && *folder != '\0') {
    return {result_files_in(folder), folder};
  }
  return {builtin_result_files(), "built-in results"};
}

ShippedResults& shipped_results() {
  static ShippedResults results = [] {
    ShippedFiles shipped = shipped_result_files();
    return ShippedResults(std::move(shipped.files), shipped.origin, TemplateLibrary::instance());
  }();
  return results;
}

ResultSource& shipped_source() {
  class Deferred : public ResultSource {
   public:
    const std::string& label() const override { return label_; }
    std::vector<db::TrialRecord> exact(const DeviceInfo& device, const KernelProblem& problem) override {
      return shipped_results().exact(device, problem);
    }
    void add_measurements(int cc, const TemplateLibrary& library, model::TrainingData& data) override {
      shipped_results().add_measurements(cc, library, data);
    }
    bool knows_vendor_times() override { return shipped_results().knows_vendor_times(); }
    std::optional<double> vendor_ms(const DeviceInfo& model, const KernelProblem& problem) override {
      return shipped_results().vendor_ms(model, problem);
    }
    std::vector<DeviceInfo> devices() override { return shipped_results().devices(); }
    std::vector<KernelProblem> problems_of(const DeviceInfo& model,
                                           const std::string& template_name) override {
      return shipped_results().problems_of(model, template_name);
    }

   private:
    std::string label_ = "shipped results";
  };
  static Deferred source;
  return source;
}

}  // namespace runtime
}  // namespace gemmforge
