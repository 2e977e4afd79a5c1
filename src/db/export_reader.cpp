// A SAX handler that turns the event stream of an export into header members and whole entries.
#include "db/export_reader.hpp"

#include <fmt/format.h>

#include <array>
#include <set>
#include <vector>

#include "gemmforge/error.hpp"

namespace gemmforge::db {

namespace {

constexpr std::array<const char*, 4> kHeaderMembers = {"format", "format_version", "gemmforge_version",
                                                       "exported_at"};

class Handler : public nlohmann::json_sax<nlohmann::json> {
 public:
  Handler(const std::string& origin, ExportVisitor& visitor) : origin_(origin), visitor_(visitor) {}

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool string(string_t& v) override { return value(std::move(v)); }
  bool binary(binary_t&) override { fail("holds binary data, which JSON text cannot"); }

  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }

  bool key(string_t& key) override {
    if (depth_ == 1) {
      // A member of the document itself.
      if (!seen_.insert(key).second) fail(fmt::format("member \"{}\" is listed twice", key));
      member_ = key;
      return true;
    }
    if (!building_.empty() && building_.back()->contains(key)) {
      fail(fmt::format("{}{}: member \"{}\" is listed twice", section_name(), entry_path(), key));
    }
    pending_key_ = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& error) override {
    std::string what = error.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> from "parse error".
    if (const size_t at = what.find("parse error"); at != std::string::npos) what = what.substr(at);
    if (position <= 1 && what.find("unexpected end of input") != std::string::npos) {
      throw InvalidArgumentError(fmt::format("{}: the file is empty; it is not a gemmforge export", origin_));
    }
    throw InvalidArgumentError(fmt::format("{}: not valid JSON at byte {}: {}", origin_, position, what));
  }

  void finish() const {
    if (stopped_ || (root_seen_ && depth_ == 0)) return;
    fail("the document ends before it is complete");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgumentError(fmt::format("{}: {}", origin_, what));
  }

  std::string section_name() const { return to_string(section_); }
  std::string entry_path() const { return fmt::format("[{}]", index_); }

  bool open(nlohmann::json container) {
    ++depth_;
    if (depth_ > kMaxExportDepth) {
      fail(fmt::format("JSON nested deeper than {} levels is not a gemmforge export", kMaxExportDepth));
    }
    if (depth_ == 1) {
      root_seen_ = true;
      if (!container.is_object()) fail("the document is not a JSON object; a gemmforge export is one");
      return true;
    }
    if (depth_ == 2) {
      const std::optional<Section> section = section_of(member_);
      if (section && container.is_array()) {
        section_ = *section;
        in_section_ = true;
        index_ = 0;
        stopped_ = !visitor_.section(section_);
        return !stopped_;
      }
      if (!section && !is_header_member(member_)) unknown_member();
      // A header member or a section that is not an array: the visitor sees the whole value.
      header_value_ = std::move(container);
      building_.push_back(&header_value_);
      return true;
    }
    count_value();
    if (building_.empty()) {
      entry_ = std::move(container);
      building_.push_back(&entry_);
      return true;
    }
    building_.push_back(&insert(std::move(container)));
    return true;
  }

  bool close() {
    --depth_;
    if (depth_ == 0) return true;
    if (depth_ == 1) {
      if (!building_.empty()) {
        // A header member that is an object or array: handed over as it is (the visitor rejects it).
        building_.clear();
        visitor_.header(member_, header_value_);
      }
      in_section_ = false;
      return true;
    }
    building_.pop_back();
    if (building_.empty() && in_section_) {
      visitor_.entry(section_, index_++, entry_);
      entry_ = nullptr;
      values_ = 0;
    }
    return true;
  }

  template <class T>
  bool value(T&& v) {
    if (depth_ == 0) {
      root_seen_ = true;
      fail("the document is not a JSON object; a gemmforge export is one");
    }
    if (depth_ == 1) {
      if (!section_of(member_) && !is_header_member(member_)) unknown_member();
      visitor_.header(member_, nlohmann::json(std::forward<T>(v)));
      return true;
    }
    count_value();
    if (building_.empty()) {
      // A scalar element of an array: an entry the visitor will reject for not being an object.
      visitor_.entry(section_, index_++, nlohmann::json(std::forward<T>(v)));
      values_ = 0;
      return true;
    }
    insert(nlohmann::json(std::forward<T>(v)));
    return true;
  }

  nlohmann::json& insert(nlohmann::json v) {
    nlohmann::json& parent = *building_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return parent.back();
    }
    nlohmann::json& slot = parent[pending_key_];
    slot = std::move(v);
    return slot;
  }

  void count_value() {
    if (++values_ > kMaxEntryValues) {
      fail(fmt::format("{}{} holds more than {} values; an entry of a gemmforge export holds about 40",
                       section_name(), entry_path(), kMaxEntryValues));
    }
  }

  [[noreturn]] void unknown_member() const {
    fail(
        fmt::format("the document has an unknown member \"{}\"; a gemmforge export has format, "
                    "format_version, gemmforge_version, exported_at, devices, results, vendor and trials",
                    member_));
  }

  static std::optional<Section> section_of(const std::string& key) {
    if (key == "devices") return Section::kDevices;
    if (key == "results") return Section::kResults;
    if (key == "vendor") return Section::kVendor;
    if (key == "trials") return Section::kTrials;
    return std::nullopt;
  }

  const std::string& origin_;
  ExportVisitor& visitor_;
  int depth_ = 0;
  bool root_seen_ = false;
  bool stopped_ = false;  // the visitor stopped the reading at a section
  std::set<std::string> seen_;
  std::string member_;
  Section section_ = Section::kDevices;
  bool in_section_ = false;
  size_t index_ = 0;
  int values_ = 0;
  std::string pending_key_;
  nlohmann::json entry_;
  nlohmann::json header_value_;
  std::vector<nlohmann::json*> building_;
};

}  // namespace

const char* to_string(Section section) noexcept {
  switch (section) {
    case Section::kDevices:
      return "devices";
    case Section::kResults:
      return "results";
    case Section::kVendor:
      return "vendor";
    case Section::kTrials:
      return "trials";
  }
  return "unknown";
}

bool is_header_member(const std::string& key) {
  for (const char* name : kHeaderMembers) {
    if (key == name) return true;
  }
  return false;
}

void read_export(std::istream& in, const std::string& origin, ExportVisitor& visitor) {
  Handler handler(origin, visitor);
  nlohmann::json::sax_parse(in, &handler);
  handler.finish();
}

}  // namespace gemmforge::db
