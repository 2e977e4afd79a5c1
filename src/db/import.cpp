// Importing exports and merging databases: each entry checked as it streams in and applied at once, in
// one transaction that commits only when no entry was rejected.
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <istream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "db/exchange.hpp"
#include "db/export_reader.hpp"
#include "db/import_document.hpp"
#include "db/record_checks.hpp"
#include "db/sql.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::db {

ImportPolicy parse_import_policy(const std::string& text) {
  if (text == "faster") return ImportPolicy::kFaster;
  if (text == "keep") return ImportPolicy::kKeep;
  if (text == "replace") return ImportPolicy::kReplace;
  throw InvalidArgumentError(fmt::format("import policy '{}' is not one of faster, keep, replace", text));
}

const char* to_string(ImportPolicy policy) noexcept {
  switch (policy) {
    case ImportPolicy::kFaster:
      return "faster";
    case ImportPolicy::kKeep:
      return "keep";
    case ImportPolicy::kReplace:
      return "replace";
    case ImportPolicy::kMerge:
      return "merge";
  }
  return "unknown";
}

namespace {

BestUpdate best_update(ImportPolicy policy) {
  switch (policy) {
    case ImportPolicy::kKeep:
      return BestUpdate::kIfNone;
    case ImportPolicy::kReplace:
      return BestUpdate::kAlways;
    case ImportPolicy::kMerge:
      return BestUpdate::kNever;
    case ImportPolicy::kFaster:
      break;
  }
  return BestUpdate::kIfFaster;
}

// Whether the policy lets an imported result in, given the median time of its problem's local best.
bool admits(ImportPolicy policy, const TrialRecord& incoming, const std::optional<double>& local_best_ms) {
  if (!local_best_ms) return true;
  switch (policy) {
    case ImportPolicy::kKeep:
      return false;
    case ImportPolicy::kReplace:
    case ImportPolicy::kMerge:
      return true;
    case ImportPolicy::kFaster:
      break;
  }
  return *incoming.time_median_ms < *local_best_ms;
}

// The order merge keeps the better of two measurements of one config by: ok before any failure, then the
// faster, then the smaller error, then fixed tie-breaks, so that the survivor never depends on which input
// came first.
auto merge_rank(const TrialRecord& t) {
  const bool ok = t.status == TrialStatus::kOk;
  return std::make_tuple(!ok, ok ? t.time_median_ms.value_or(fields::kUnbounded) : 0.0,
                         t.rel_error.value_or(fields::kUnbounded), t.created_at,
                         std::string(to_string(t.status)), t.reason, t.gemmforge_version);
}

// A device description as comparable text, the last tie-break of merged devices.
std::string description(const DeviceInfo& d) {
  std::string text = fmt::format("{}|{}|{}|{}", d.name, d.pci_bus_id, d.total_memory, d.nvrtc_version);
  for (const fields::DeviceInt& spec : fields::kDeviceInts) text += fmt::format("|{}", d.*spec.member);
  return text;
}

// Row ids seen, as a bitmap: ids are small and dense, so a million rows cost 128 KiB.
class IdSet {
 public:
  /// Whether `id` was not in the set before.
  bool insert(int64_t id) {
    const auto index = static_cast<size_t>(id);
    if (index / 64 >= words_.size()) words_.resize(index / 64 + 1 + words_.size() / 2);
    uint64_t& word = words_[index / 64];
    const uint64_t bit = uint64_t{1} << (index % 64);
    const bool fresh = (word & bit) == 0;
    word |= bit;
    return fresh;
  }

 private:
  std::vector<uint64_t> words_;
};

// Reads from another stream buffer in large blocks, counting the bytes that went by, for progress.
class CountingBuffer : public std::streambuf {
 public:
  CountingBuffer(std::streambuf& source, const Progress& progress, int64_t total)
      : source_(source), progress_(progress), total_(total) {}

 protected:
  int_type underflow() override {
    const std::streamsize got = source_.sgetn(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    if (got <= 0) return traits_type::eof();
    consumed_ += got;
    if (progress_) progress_(consumed_, total_);
    setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
    return traits_type::to_int_type(buffer_[0]);
  }

 private:
  std::streambuf& source_;
  const Progress& progress_;
  int64_t total_;
  int64_t consumed_ = 0;
  std::array<char, 1 << 20> buffer_{};
};

}  // namespace

class Importer::State : public ExportVisitor {
 public:
  State(Database& database, ImportPolicy policy, ImportChecks checks)
      : database_(database), policy_(policy), checks_(std::move(checks)) {
    transaction_ = std::make_unique<Database::WriteTransaction>(database_);
  }

  void begin_document(const std::string& origin) {
    origin_ = origin;
    document_devices_.clear();
    members_ = DocumentMembers(origin);
    results_seen_.clear();
    trials_seen_ = {};
    vendor_ = {};
  }

  // The cuBLAS times of "vendor" are checked against the document's results and trials, and not stored:
  // a database derives them from its trials. Where entries were rejected the import is already refused,
  // and the times would disagree with what is left of them.
  void end_document() {
    members_.require_complete();
    if (!members_.has("vendor") || report_.rejected > 0) return;
    try {
      vendor_.check(members_.has("trials"));
    } catch (const InvalidArgumentError& e) {
      reject(fmt::format("{}: {}", origin_, e.what()));
    }
  }

  // ExportVisitor ----------------------------------------------------------------------------------

  void header(const std::string& key, const nlohmann::json& value) override { members_.header(key, value); }

  bool section(Section section) override {
    members_.section(to_string(section));
    return true;
  }

  void entry(Section section, size_t index, const nlohmann::json& value) override {
    const std::string path = fmt::format("{}[{}]", to_string(section), index);
    const JsonField field(value, path);
    try {
      if (section == Section::kDevices) {
        field.object();
        DeviceRecord device;
        device.info = parse_device_entry(field);
        if (auto seen = field.find("first_seen")) device.first_seen = seen->value().get<std::string>();
        if (auto seen = field.find("last_seen")) device.last_seen = seen->value().get<std::string>();
        if (document_devices_.count(device.info.uuid) != 0) {
          field.at("uuid").fail(fmt::format("\"{}\" is listed twice", device.info.uuid));
        }
        add_device(device);
        vendor_.device(device.info);
      } else if (section == Section::kVendor) {
        field.object();
        const ImportedVendorTime time = parse_vendor_entry(field);
        if (document_devices_.count(time.device_uuid) == 0) fail_unknown_device(field, time.device_uuid);
        vendor_.listed(time, field);
      } else {
        field.object();
        ImportedTrial imported = parse_trial_entry(field, section == Section::kResults, checks_);
        const auto device = document_devices_.find(imported.device_uuid);
        if (device == document_devices_.end()) fail_unknown_device(field, imported.device_uuid);
        imported.trial.device_id = device->second;
        imported.trial.device_uuid = imported.device_uuid;
        vendor_.measured(imported.device_uuid, imported.trial, section == Section::kResults);
        add_trial(imported.trial, section == Section::kResults, path);
      }
    } catch (const InvalidArgumentError& e) {
      reject(fmt::format("{}: {}", origin_, e.what()));
    }
  }

  // Entries from a database ------------------------------------------------------------------------

  void read_database(const Database& source, const Progress& progress) {
    begin_document(source.path());
    std::map<int64_t, int64_t> device_ids;  // source id -> id here
    int64_t total = 0;
    for (const DeviceRecord& device : source.devices()) total += source.count_trials(device.id, false);
    int64_t done = 0;
    for (const DeviceRecord& device : source.devices()) {
      add_device(device);
      const int64_t id = document_devices_.at(device.info.uuid);
      source.for_each_trial(device.id, false, [&](const TrialRecord& stored) {
        TrialRecord trial = stored;
        trial.device_id = id;
        trial.run_id.reset();  // runs are not carried over: their ids mean nothing here
        const std::string where =
            fmt::format("{}: trial {} ({} {} on {})", source.path(), stored.id, stored.template_name,
                        stored.config_key, stored.problem.to_string());
        try {
          if (const Fault fault = trial_fault(trial, checks_.error_bound)) {
            throw InvalidArgumentError(fmt::format("{}: {}", fault.field, fault.message));
          }
          trial.servable = checks_.servable(trial.template_name, trial.template_hash);
          if (checks_.validate && trial.status != TrialStatus::kInvalid) {
            checks_.validate(trial.template_name, trial.template_hash, trial.config_key, trial.problem);
          }
          add_trial(trial, false, where);
        } catch (const InvalidArgumentError& e) {
          reject(fmt::format("{}: {}", where, e.what()));
        } catch (const NotFoundError& e) {
          reject(fmt::format("{}: {}", where, e.what()));
        }
        if (progress && ++done % 4096 == 0) progress(done, total);
      });
    }
    if (progress) progress(done, total);
  }

  ImportReport finish(bool apply) {
    if (report_.rejected > 0 || !apply) {
      transaction_.reset();  // rolls back
      return report_;
    }
    if (policy_ == ImportPolicy::kMerge) database_.elect_verified_bests(checks_.error_bound);
    transaction_->commit();
    transaction_.reset();
    report_.committed = true;
    return report_;
  }

  const ImportReport& report() const { return report_; }

 private:
  void reject(const std::string& message) {
    ++report_.rejected;
    if (report_.rejections.size() < kMaxListedRejections) report_.rejections.push_back(message);
  }

  void add_device(const DeviceRecord& device) {
    const std::string& uuid = device.info.uuid;
    if (report_.rejected > 0) {
      document_devices_[uuid] = 0;  // nothing will be stored; entries are only checked from now on
      return;
    }
    const std::optional<DeviceRecord> known = database_.device_by_uuid(uuid);
    if (policy_ == ImportPolicy::kMerge) {
      // The later description wins, whichever input came first.
      const bool newer =
          !known || device.last_seen > known->last_seen ||
          (device.last_seen == known->last_seen && description(device.info) > description(known->info));
      DeviceRecord stored = device;
      if (stored.first_seen.empty() || stored.last_seen.empty())
        stored.first_seen = stored.last_seen = sql::utc_now();
      if (!newer) stored = *known;
      document_devices_[uuid] = database_.store_device_record(stored);
      ++(known ? report_.devices_known : report_.devices_added);
      return;
    }
    // A device the database knows keeps its local description: it was read from the GPU itself.
    if (known) {
      document_devices_[uuid] = known->id;
      ++report_.devices_known;
    } else {
      document_devices_[uuid] = database_.upsert_device(device.info);
      ++report_.devices_added;
    }
  }

  // Applies an entry as the policy says. A second entry for one problem in "results", or for one config in
  // "trials", is a fault of the document (the two would silently overwrite each other); the rows an
  // entry wrote or matched are remembered by id to find them.
  void add_trial(TrialRecord trial, bool is_result, const std::string& path) {
    if (!trial.servable) ++report_.unservable;
    if (report_.rejected > 0) return;  // nothing will be committed: only check what follows
    int64_t& imported = is_result ? report_.results_imported : report_.trials_imported;
    int64_t& skipped = is_result ? report_.results_skipped : report_.trials_skipped;
    if (is_result) {
      const std::optional<int64_t> problem_id = database_.find_problem(trial.problem);
      if (problem_id && !results_seen_[trial.device_id].insert(*problem_id)) {
        throw InvalidArgumentError(
            fmt::format("{}: a second result for {} on {}; a document holds one per problem", path,
                        trial.problem.to_string(), trial.device_uuid));
      }
      if (policy_ == ImportPolicy::kMerge) {
        merge(trial, imported, skipped);
      } else if (admits(policy_, trial, database_.best_time_ms(trial.device_id, trial.problem))) {
        database_.record_trial(trial, best_update(policy_));
        ++imported;
      } else {
        ++skipped;
      }
      if (!problem_id) results_seen_[trial.device_id].insert(*database_.find_problem(trial.problem));
      return;
    }
    const std::optional<int64_t> stored = database_.trial_id(
        trial.device_id, trial.problem, trial.template_name, trial.template_hash, trial.config_key);
    if (stored && !trials_seen_.insert(*stored)) {
      throw InvalidArgumentError(
          fmt::format("{}: repeats an earlier entry ({} {} on {}); a document holds each trial once", path,
                      trial.template_name, trial.config_key, trial.problem.to_string()));
    }
    if (policy_ == ImportPolicy::kMerge) {
      trials_seen_.insert(merge(trial, imported, skipped));
    } else if (stored) {
      ++skipped;  // trials the database has keep their local measurement
    } else {
      trials_seen_.insert(database_.record_trial(trial, BestUpdate::kIfNone));
      ++imported;
    }
  }

  // Keeps the better of the stored and the incoming measurement of a config; returns the trial's id.
  int64_t merge(const TrialRecord& trial, int64_t& imported, int64_t& skipped) {
    const std::optional<TrialRecord> stored = database_.find_trial(
        trial.device_id, trial.problem, trial.template_name, trial.template_hash, trial.config_key);
    if (stored && !(merge_rank(trial) < merge_rank(*stored))) {
      ++skipped;
      return stored->id;
    }
    ++imported;
    return database_.record_trial(trial, BestUpdate::kNever);
  }

  Database& database_;
  ImportPolicy policy_;
  ImportChecks checks_;
  std::unique_ptr<Database::WriteTransaction> transaction_;
  ImportReport report_;
  std::string origin_;
  std::map<std::string, int64_t> document_devices_;  // uuid -> id in the database
  DocumentMembers members_;
  VendorTimesCheck vendor_;                // of the document being read
  std::map<int64_t, IdSet> results_seen_;  // device id -> problems with a result in this document
  IdSet trials_seen_;  // trial rows an entry of "trials" of this document wrote or matched
};

SQLite::Database& Importer::connection(Database& database) {
  return database.connection();
}

SQLite::Statement& Importer::cached(Database& database, const char* sql) {
  return database.cached(sql);
}

Importer::Importer(Database& database, ImportPolicy policy, ImportChecks checks)
    : state_(std::make_unique<State>(database, policy, std::move(checks))) {}

Importer::~Importer() = default;

void Importer::read(std::istream& in, const std::string& origin, const Progress& progress, int64_t size) {
  if (!state_) throw InternalError("Importer::read after finish()");
  state_->begin_document(origin);
  std::streambuf* source = in.rdbuf();
  if (source == nullptr) throw InvalidArgumentError(fmt::format("{}: cannot be read", origin));
  CountingBuffer counting(*source, progress, size);
  std::istream counted(&counting);
  read_export(counted, origin, *state_);
  state_->end_document();
}

void Importer::read(const Database& source, const Progress& progress) {
  if (!state_) throw InternalError("Importer::read after finish()");
  state_->read_database(source, progress);
}

ImportReport Importer::finish(bool apply) {
  if (!state_) throw InternalError("Importer::finish called twice");
  ImportReport report = state_->finish(apply);
  state_.reset();
  return report;
}

ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ConfigValidator& validate) {
  ImportChecks checks;
  checks.validate = validate;
  return import_json(database, document, policy, checks);
}

ImportReport import_json(Database& database, const nlohmann::json& document, ImportPolicy policy,
                         const ImportChecks& checks) {
  // Messages name "the document"; the caller names it better, so that prefix goes.
  constexpr std::string_view kOrigin = "the document";
  auto unprefixed = [&](std::string message) {
    if (message.rfind(kOrigin, 0) == 0 && message.size() > kOrigin.size() + 2)
      message = message.substr(kOrigin.size() + 2);
    return message;
  };
  std::istringstream text(document.dump());
  Importer importer(database, policy, checks);
  try {
    importer.read(text, std::string(kOrigin));
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(unprefixed(e.what()));
  }
  ImportReport report = importer.finish();
  if (!report.committed) throw InvalidArgumentError(unprefixed(report.rejections.front()));
  return report;
}

}  // namespace gemmforge::db
