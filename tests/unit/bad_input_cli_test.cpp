// Bad input, as users and broken files produce it, given to the gemmforge tool: command lines, database
// files and import documents. Every case must exit with the documented status, print a message that says
// what is wrong, and leave every file of its folder exactly as it was (no database changed or created).
#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gzip.hpp"
#include "db/database.hpp"
#include "runtime_test_support.hpp"
#include "support/folder_snapshot.hpp"
#include "support/unprivileged.hpp"

namespace gemmforge::testing {
namespace {

using nlohmann::json;
using test_support::snapshot;
using test_support::snapshot_difference;

constexpr int kInvalid = 2;
constexpr int kDatabase = 4;

// The folder a case runs in: a user database with results (user.db) and a valid export (good.json).
class CaseFolder {
 public:
  CaseFolder() {
    db::Database database = db::Database::open(db());
    const int64_t h200 = database.upsert_device(model("NVIDIA H200", "sm_90", "GPU-0a0b0c0d-user"));
    record(database, h200, problem(4096, 4096, 4096), seed(0), 2.25, 2.5);
    record(database, h200, problem(4096, 4096, 4096), seed(1), 2.75);
    record(database, h200, problem(512, 512, 512, "tn"), seed(2), 0.02, 0.025);
  }

  std::string db() const { return folder_.file("user.db"); }
  std::string file(const std::string& name) const { return folder_.file(name); }
  const std::filesystem::path& path() const { return folder_.path(); }

  /// The shipped H200 results with every result also listed as a trial: a valid export.
  static json good_document() {
    const std::string path = std::string(GEMMFORGE_SOURCE_DIR) + "/db/tuned/nvidia-h200.json.gz";
    std::ifstream in(path, std::ios::binary);
    json doc = json::parse(gunzip(std::string(std::istreambuf_iterator<char>(in), {}), path));
    doc["trials"] = json::array();
    for (json trial : doc["results"]) {
      trial["status"] = "ok";
      trial["reason"] = "";
      doc["trials"].push_back(trial);
    }
    return doc;
  }

  /// Writes `text` into the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
    return file(name);
  }

  /// Runs SQL on a copy of the user database named `name`, to damage it in a chosen way.
  std::string damaged_copy(const std::string& name, const std::string& sql) const {
    std::filesystem::copy_file(db(), file(name));
    SQLite::Database raw(file(name), SQLite::OPEN_READWRITE);
    raw.exec(sql);
    return file(name);
  }

 private:
  TempFolder folder_;
};

struct BadInput {
  std::string name;
  /// Prepares the folder and returns the arguments of the tool.
  std::function<std::string(CaseFolder&)> arguments;
  int status;
  std::string message;        ///< expected in what the tool prints
  bool unprivileged = false;  ///< run as a user without privileges (read-only files)
};

// `item` `count` times, separated by commas.
std::string repeated(const std::string& item, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += (i == 0 ? "" : ",") + item;
  return out;
}

std::string quoted(const std::string& path) {
  return "'" + path + "'";
}

// An import of the good document changed by `edit`.
BadInput document(const std::string& name, std::function<void(json&)> edit, const std::string& message) {
  return {name,
          [edit](CaseFolder& f) {
            json doc = CaseFolder::good_document();
            edit(doc);
            return "import " + quoted(f.write("bad.json", doc.dump())) + " --db " + quoted(f.db());
          },
          kInvalid, message};
}

// An import of a file holding `text`.
BadInput text(const std::string& name, std::string content, const std::string& message) {
  return {name,
          [content](CaseFolder& f) {
            return "import " + quoted(f.write("bad.json", content)) + " --db " + quoted(f.db());
          },
          kInvalid, message};
}

auto set(const std::string& pointer, json value) {
  return [pointer, value](json& doc) { doc[json::json_pointer(pointer)] = value; };
}

// Sets a measurement of results[0] and of its copy in trials, so that either is faulty.
auto measure(const std::string& field, json value) {
  return [field, value](json& doc) { doc["results"][0]["measurement"][field] = value; };
}

std::vector<BadInput> cases() {
  const std::string query = "query --device-name 'NVIDIA H200' ";
  // Entries appended to the good document are named by their index, past those it holds.
  const json good = CaseFolder::good_document();
  const size_t devices = good["devices"].size();
  const size_t results = good["results"].size();
  const size_t trials = good["trials"].size();
  const std::string first_uuid = good["devices"][0]["uuid"].get<std::string>();
  std::vector<BadInput> c = {
      // Command lines --------------------------------------------------------------------------------
      {"UnknownCommand", [](CaseFolder&) { return std::string("frobnicate"); }, kInvalid,
       "'frobnicate' is not a gemmforge command; the commands are devices, space"},
      {"NoCommand", [](CaseFolder&) { return std::string("--log-level info"); }, kInvalid,
       "a command is required"},
      {"UnknownOption", [](CaseFolder& f) { return "report --bogus --db " + quoted(f.db()); }, kInvalid,
       "--bogus"},
      {"LogLevelNotALevel", [](CaseFolder&) { return std::string("--log-level loud devices"); }, kInvalid,
       "'loud' is not one of trace, debug, info, warn, error, off"},
      {"ShapeBeyond32Bits", [query](CaseFolder&) { return query + "--shape 99999999999x1x1"; }, kInvalid,
       "m = 99999999999 is not a size in 1..2147483647"},
      {"ShapeWithZero", [query](CaseFolder&) { return query + "--shape 64x0x64"; }, kInvalid,
       "n = 0 is not a size in 1..2147483647 (a GEMM with a zero size launches no kernel)"},
      {"ShapeNegative", [query](CaseFolder&) { return query + "--shape 64x64x-8"; }, kInvalid,
       "k = -8 is not a size"},
      {"ShapeNotThreeNumbers", [query](CaseFolder&) { return query + "--shape 64x64"; }, kInvalid,
       "shape '64x64' must be MxNxK"},
      {"SpaceShapeWithZero", [](CaseFolder&) { return std::string("space --arch sm_90 --shape 0x5x5"); },
       kInvalid, "m = 0 is not a size in 1..2147483647"},
      {"SpaceLayoutNotALayout",
       [](CaseFolder&) { return std::string("space --arch sm_90 --shape 64x64x64 --layout xx"); }, kInvalid,
       "'xx' is not one of nn, nt, tn, tt"},
      {"QueryLayoutNotALayout", [query](CaseFolder&) { return query + "--shape 64x64x64 --layout xx"; },
       kInvalid, "--layout: 'xx' is not one of nn, nt, tn, tt"},
      {"TuneOrderNotAnOrder",
       [](CaseFolder&) { return std::string("tune --shape 64x64x64 --order rows --print-problems"); },
       kInvalid, "--order: 'rows' is not one of row, col"},
      {"QueryDtypeUnknown", [query](CaseFolder&) { return query + "--shape 64x64x64 --dtype f64"; }, kInvalid,
       "f64"},
      {"QueryUnknownGpuModel",
       [](CaseFolder&) { return std::string("query --device-name 'Voodoo 5' --shape 64x64x64"); }, kInvalid,
       "GPU model 'Voodoo 5' is neither recorded"},
      {"ImportPolicyUnknown",
       [](CaseFolder& f) {
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) +
                " --policy newest --db " + quoted(f.db());
       },
       kInvalid, "'newest' is not one of faster, keep, replace"},
      {"ImportWithoutFiles", [](CaseFolder& f) { return "import --db " + quoted(f.db()); }, kInvalid,
       "files is required"},
      {"ImportErrorBoundNotARelativeError",
       [](CaseFolder& f) {
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) +
                " --error-bound 5 --db " + quoted(f.db());
       },
       kInvalid, "--error-bound 5 is not a relative error in (0, 1)"},
      {"ImportStandardInputTwice", [](CaseFolder& f) { return "import - - --db " + quoted(f.db()); },
       kInvalid, "standard input (-) can be read only once"},
      {"ImportMissingFile",
       [](CaseFolder& f) { return "import " + quoted(f.file("absent.json")) + " --db " + quoted(f.db()); },
       kInvalid, "absent.json': there is no such file"},
      {"ImportFolderAsFile",
       [](CaseFolder& f) {
         std::filesystem::create_directory(f.file("exports"));
         return "import " + quoted(f.file("exports")) + " --db " + quoted(f.db());
       },
       kInvalid, "it is a folder; name an export file"},
      {"ExportFormatUnknown", [](CaseFolder& f) { return "export --format xml --db " + quoted(f.db()); },
       kInvalid, "'xml' is not one of json, csv"},
      {"ExportJsonSummaryToStandardOutput",
       [](CaseFolder& f) { return "export --json --db " + quoted(f.db()); }, kInvalid,
       "--json prints a summary of an export written to a file: add -o FILE"},
      {"ExportUnknownDevice",
       [](CaseFolder& f) {
         return "export --device Voodoo -o " + quoted(f.file("out.json")) + " --db " + quoted(f.db());
       },
       kInvalid, "no device in"},
      {"ExportIntoMissingFolder",
       [](CaseFolder& f) {
         return "export -o " + quoted(f.file("nowhere/out.json")) + " --db " + quoted(f.db());
       },
       kInvalid, "its folder does not exist or is not writable"},
      {"ReportTopZero", [](CaseFolder& f) { return "report --top 0 --db " + quoted(f.db()); }, kInvalid,
       "--top 0 must be at least 1"},
      {"ReportShippedAndDb", [](CaseFolder& f) { return "report --shipped --db " + quoted(f.db()); },
       kInvalid, "give --db or --shipped, not both"},
      {"MergeWithoutOutput", [](CaseFolder& f) { return "merge " + quoted(f.db()); }, kInvalid,
       "--output is required"},
      {"MergeInputIsTheOutput",
       [](CaseFolder& f) { return "merge " + quoted(f.db()) + " -o " + quoted(f.db()); }, kInvalid,
       "is both an input and the output"},
      {"MergeIntoJson",
       [](CaseFolder& f) { return "merge " + quoted(f.db()) + " -o " + quoted(f.file("merged.json")); },
       kInvalid, "merge writes a database"},
      {"CompileUnknownArchitecture", [](CaseFolder&) { return std::string("compile --seed 0 --arch sm_99"); },
       kInvalid, "sm_99"},
      {"TuneUnknownStrategy",
       [](CaseFolder& f) { return "tune --strategy annealing --shape 64x64x64 --db " + quoted(f.db()); },
       kInvalid, "annealing"},
      {"TuneFirstWithoutTemplate",
       [](CaseFolder& f) { return "tune --first BM=64,BN=64 --shape 64x64x64 --db " + quoted(f.db()); },
       kInvalid, "--first 'BM=64,BN=64': expected TEMPLATE:CONFIG"},
      {"TuneFirstUnknownParameter",
       [](CaseFolder& f) {
         return "tune --first sgemm_simt:BM=64,WARP=7 --shape 64x64x64 --db " + quoted(f.db());
       },
       kInvalid, "--first 'sgemm_simt:BM=64,WARP=7'"},
      {"TuneFirstUnknownTemplate",
       [](CaseFolder& f) { return "tune --first nosuch:BM=64 --shape 64x64x64 --db " + quoted(f.db()); },
       kInvalid, "--first 'nosuch:BM=64': unknown template 'nosuch'"},
      {"TuneModelStartsNegative",
       [](CaseFolder& f) { return "tune --model-starts -1 --shape 64x64x64 --db " + quoted(f.db()); },
       kInvalid, "--model-starts"},

      // Database files ---------------------------------------------------------------------------------
      {"DatabaseIsAFolder",
       [](CaseFolder& f) {
         std::filesystem::create_directory(f.file("results"));
         return "report --db " + quoted(f.file("results"));
       },
       kDatabase, "is a folder, not a database file; pass --db with a file path"},
      {"ImportIntoAFolder",
       [](CaseFolder& f) {
         std::filesystem::create_directory(f.file("results"));
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) + " --db " +
                quoted(f.file("results"));
       },
       kDatabase, "is a folder, not a database file"},
      {"DatabaseInAMissingFolder",
       [](CaseFolder& f) {
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) + " --db " +
                quoted(f.file("missing/dir/x.db"));
       },
       kDatabase, "does not exist; create it (mkdir -p"},
      {"MergeIntoAMissingFolder",
       [](CaseFolder& f) { return "merge " + quoted(f.db()) + " -o " + quoted(f.file("missing/x.db")); },
       kDatabase, "does not exist; create it"},
      {"ReportOfAMissingDatabase", [](CaseFolder& f) { return "report --db " + quoted(f.file("absent.db")); },
       kInvalid, "there is no tuning database at"},
      {"QueryOfAMissingDatabase",
       [query](CaseFolder& f) { return query + "--shape 64x64x64 --db " + quoted(f.file("absent.db")); },
       kInvalid, "there is no database at"},
      {"DatabaseIsText",
       [](CaseFolder& f) {
         return "report --db " + quoted(f.write("notes.db", "shopping list: milk, eggs\n"));
       },
       kDatabase, "is not a gemmforge database (not an SQLite file)"},
      {"ImportIntoText",
       [](CaseFolder& f) {
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) + " --db " +
                quoted(f.write("notes.db", "shopping list: milk, eggs\n"));
       },
       kDatabase, "is not a gemmforge database"},
      {"ImportIntoAnExport",
       [](CaseFolder& f) {
         const std::string good = f.write("good.json", CaseFolder::good_document().dump());
         return "import " + quoted(good) + " --db " + quoted(good);
       },
       kDatabase, "it holds JSON, perhaps an export, which `gemmforge import` reads"},
      {"DatabaseTruncatedInItsHeader",
       [](CaseFolder& f) {
         std::filesystem::copy_file(f.db(), f.file("cut.db"));
         std::filesystem::resize_file(f.file("cut.db"), 50);
         return "report --db " + quoted(f.file("cut.db"));
       },
       kDatabase, "is a truncated database (50 bytes, less than its own header)"},
      {"DatabaseTruncatedInItsPages",
       [](CaseFolder& f) {
         std::filesystem::copy_file(f.db(), f.file("cut.db"));
         std::filesystem::resize_file(f.file("cut.db"), std::filesystem::file_size(f.db()) / 2);
         return "report --db " + quoted(f.file("cut.db"));
       },
       kDatabase, "is a truncated database: its header counts"},
      {"DatabaseWithACorruptedPage",
       [](CaseFolder& f) {
         std::filesystem::copy_file(f.db(), f.file("bad.db"));
         std::fstream file(f.file("bad.db"), std::ios::in | std::ios::out | std::ios::binary);
         file.seekp(4096 + 8);  // inside the second page, past its header
         const std::string garbage(3000, '\xA5');
         file.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
         return "report --db " + quoted(f.file("bad.db"));
       },
       kDatabase, "bad.db"},
      {"StoredOccupancyNegative",
       [](CaseFolder& f) {
         return "report --db " + quoted(f.damaged_copy("bad.db", "UPDATE trials SET occupancy_blocks = -66"));
       },
       kDatabase, "occupancy_blocks: -66 is not a count of blocks per SM in 0..256"},
      {"StoredTimeAbsurd",
       [](CaseFolder& f) {
         return "report --db " + quoted(f.damaged_copy("bad.db", "UPDATE trials SET time_median_ms = 1e308"));
       },
       kDatabase, "time_median_ms: 1e+308 is not a time in ms"},
      {"StoredComputeCapabilityAbsurd",
       [query](CaseFolder& f) {
         return query + "--shape 64x64x64 --db " +
                quoted(f.damaged_copy("bad.db", "UPDATE devices SET cc_major = 99"));
       },
       kDatabase, "cc_major: 99 is not a compute capability major version in 1..15"},
      {"StoredStatusUnknown",
       [](CaseFolder& f) {
         return "report --db " + quoted(f.damaged_copy("bad.db", "UPDATE trials SET status = 'exploded'"));
       },
       kDatabase, "column status holds 'exploded'"},
      {"DatabaseFromTheFuture",
       [](CaseFolder& f) {
         return "report --db " +
                quoted(f.damaged_copy("future.db",
                                      "INSERT INTO schema_version VALUES (99, 'future', '2030-01-01')"));
       },
       kDatabase, "was written by a newer gemmforge (schema version 99"},
      {"ImportIntoADatabaseFromTheFuture",
       [](CaseFolder& f) {
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) + " --db " +
                quoted(f.damaged_copy("future.db",
                                      "INSERT INTO schema_version VALUES (99, 'future', '2030-01-01')"));
       },
       kDatabase, "was written by a newer gemmforge"},
      {"ForeignSqliteDatabase",
       [](CaseFolder& f) {
         SQLite::Database raw(f.file("photos.db"), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
         raw.exec("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)");
         return "report --db " + quoted(f.file("photos.db"));
       },
       kDatabase, "is not a gemmforge database (it is a SQLite database without a schema_version table)"},
      {"DatabaseMissingATable",
       [](CaseFolder& f) { return "report --db " + quoted(f.damaged_copy("bad.db", "DROP TABLE best")); },
       kDatabase, "is a damaged gemmforge database (table 'best' is missing)"},

      // Import documents -------------------------------------------------------------------------------
      text("EmptyFile", "", "the file is empty; it is not a gemmforge export"),
      text("OnlyWhitespace", "  \n\t\n", "not valid JSON at byte"),
      text("NotJson", "hello, world", "not valid JSON at byte 1"),
      text("TruncatedJson", CaseFolder::good_document().dump().substr(0, 700), "not valid JSON at byte"),
      text("TopLevelArray", "[1, 2, 3]", "the document is not a JSON object; a gemmforge export is one"),
      text(
          "RepeatedMemberInAnEntry",
          R"({"format": "gemmforge-tuning", "format_version": 1, "devices": [{"uuid": "GPU-1", "uuid": "GPU-2"}],
              "results": []})",
          "devices[0]: member \"uuid\" is listed twice"),
      text(
          "RepeatedSection",
          R"({"format": "gemmforge-tuning", "format_version": 1, "devices": [], "results": [], "results": []})",
          "member \"results\" is listed twice"),
      text("NestedTooDeep",
           "{\"format\": \"gemmforge-tuning\", \"devices\": " + std::string(2000, '[') +
               std::string(2000, ']') + "}",
           "nested deeper than 16 levels"),
      text("EntryTooLarge",
           "{\"format\": \"gemmforge-tuning\", \"format_version\": 1, \"devices\": [{\"uuid\": [" +
               repeated("1", 10000) + "]}], \"results\": []}",
           "devices[0] holds more than 4096 values"),
      document("WrongFormat", set("/format", "clblast-tuning"),
               "format: \"clblast-tuning\" is not a gemmforge tuning export"),
      document("FutureFormatVersion", set("/format_version", 3),
               "format_version: version 3 is not supported"),
      document(
          "NoFormat", [](json& d) { d.erase("format"); }, "format: missing; this is not a gemmforge export"),
      document(
          "NoResults", [](json& d) { d.erase("results"); }, "results: missing"),
      document("ExportedAtNotATime", set("/exported_at", "yesterday"),
               "exported_at: \"yesterday\" is not a UTC time"),
      document("UnknownTopLevelMember", set("/comment", "hand edited"),
               "the document has an unknown member \"comment\""),
      document("UnknownDeviceMember", set("/devices/0/fan_speed", 3000),
               "devices[0]: unknown member \"fan_speed\""),
      document("UnknownResultMember", set("/results/0/note", "fast"), "results[0]: unknown member \"note\""),
      document("UnknownProblemMember", set("/results/0/problem/batch", 2),
               "results[0].problem: unknown member \"batch\""),
      document("UnknownMeasurement", set("/results/0/measurement/power_w", 700.0),
               "results[0].measurement: unknown member \"power_w\""),
      document("MedianTimeAbsurd", measure("time_median_ms", 1e308),
               "results[0].measurement.time_median_ms: 1e+308 is not a time in ms in (0, 3.6e+06]"),
      document("MedianTimeZero", measure("time_median_ms", 0.0),
               "results[0].measurement.time_median_ms: 0 is not a time in ms"),
      document("MedianTimeNegative", measure("time_median_ms", -2.5),
               "results[0].measurement.time_median_ms: -2.5 is not a time in ms"),
      document("MedianTimeAsText", measure("time_median_ms", "fast"),
               "results[0].measurement.time_median_ms: \"fast\" is not a number"),
      document(
          "MedianTimeMissing", [](json& d) { d["results"][0]["measurement"].erase("time_median_ms"); },
          "results[0].measurement.time_median_ms: is missing; an ok trial needs a median time > 0"),
      document("MinimumAboveMedian", measure("time_min_ms", 1.0),
               "results[0].measurement.time_min_ms: 1 is above time_median_ms"),
      document("MaximumBelowMedian", measure("time_max_ms", 1e-6),
               "results[0].measurement.time_max_ms: 1e-06 is below time_median_ms"),
      document("RateInconsistentWithTime", measure("tflops", 500.0),
               "results[0].measurement.tflops: 500 disagrees with the median time"),
      document("RatioInconsistentWithTimes", measure("ratio_vs_cublas", 10.0),
               "results[0].measurement.ratio_vs_cublas: 10 disagrees with the times"),
      document("ErrorBeyondTheBoundOfAnOkResult", measure("rel_error", 5.0),
               "results[0].measurement.rel_error: 5 exceeds the error bound 1e-05 of a verified f32 result"),
      document(
          "ErrorMissingOnAnOkResult", [](json& d) { d["results"][0]["measurement"].erase("rel_error"); },
          "results[0].measurement.rel_error: is missing; an ok result must show its error"),
      document("OccupancyNegative", measure("occupancy_blocks", -66),
               "results[0].measurement.occupancy_blocks: -66 is not a count of blocks per SM"),
      document("RegistersBeyondTheHardware", measure("registers", 1000),
               "results[0].measurement.registers: 1000 is not a per-thread register count in 0..255"),
      document("OccupancyAboveAHundredPercent", measure("occupancy_pct", 150.0),
               "results[0].measurement.occupancy_pct: 150 is not a percentage in [0, 100]"),
      document("SizeZero", set("/results/0/problem/m", 0),
               "results[0].problem.m: 0 is not a size in 1..2147483647"),
      document("SizeBeyond32Bits", set("/results/0/problem/n", 99999999999LL),
               "results[0].problem.n: 99999999999 is not a size in 1..2147483647"),
      document("AlignmentThree", set("/results/0/problem/align_a", 3),
               "results[0].problem.align_a: 3 is not an alignment"),
      document("CreatedAtNotADate", set("/results/0/created_at", "not a date"),
               "results[0].created_at: 'not a date' is not a UTC time like 2025-01-31T12:00:00.000Z"),
      document("ComputeCapabilityAbsurd", set("/devices/0/cc_major", 99),
               "devices[0].cc_major: 99 is not a compute capability major version in 1..15"),
      document("WarpSizeNot32", set("/devices/0/warp_size", 64),
               "devices[0].warp_size: 64 is not the warp size"),
      document("SmCountAbsurd", set("/devices/0/sm_count", 100000),
               "devices[0].sm_count: 100000 is not an SM count"),
      document("MemoryAbsurd", set("/devices/0/memory_bytes", int64_t{1} << 60),
               "devices[0].memory_bytes: 1152921504606846976 is not a memory size"),
      document("DeviceFirstSeenNotATime", set("/devices/0/first_seen", "last tuesday"),
               "devices[0].first_seen: \"last tuesday\" is not a UTC time"),
      document("DeviceKeyNotAUuid", set("/devices/0/uuid", "my-gpu"),
               "devices[0].uuid: 'my-gpu' is neither a GPU UUID"),
      document(
          "DeviceListedTwice", [](json& d) { d["devices"].push_back(d["devices"][0]); },
          fmt::format("devices[{}].uuid: \"{}\" is listed twice", devices, first_uuid)),
      document("ResultOfAnUnlistedDevice", set("/results/0/device", "GPU-00000000-elsewhere"),
               "results[0].device: \"GPU-00000000-elsewhere\" is not the uuid of an entry of \"devices\""),
      document(
          "TwoResultsForOneProblem", [](json& d) { d["results"].push_back(d["results"][3]); },
          fmt::format("results[{}]: a second result for ", results)),
      document(
          "OneTrialTwice", [](json& d) { d["trials"].push_back(d["trials"][5]); },
          fmt::format("trials[{}]: repeats an earlier entry", trials)),
      document("UnknownTemplate", set("/results/0/template", "hgemm_wmma"), "unknown template 'hgemm_wmma'"),
      document("ConfigBreakingItsManifest", set("/results/2/config", "BM=3"), "results[2]"),
      document("TrialStatusUnknown", set("/trials/0/status", "exploded"),
               "trials[0].status: unknown trial status 'exploded'"),
      document("TemplateNameHuge", set("/results/0/template", std::string(1000000, 't')),
               "results[0].template: is 1000000 bytes long; at most 256"),
      document("ReasonHuge", set("/trials/0/reason", std::string(70000, 'r')),
               "trials[0].reason: is 70000 bytes long"),
      {"HugeFileThatStopsBeingAnExport",
       [](CaseFolder& f) {
         const std::string path =
             f.write("huge.json", R"({"format": "gemmforge-tuning", "format_version": 1, "devices": [)");
         std::filesystem::resize_file(path, std::uintmax_t{2} << 30);  // 2 GiB, sparse
         return "import " + quoted(path) + " --db " + quoted(f.db());
       },
       kInvalid, "huge.json: "},
      {"GoodFileWithABadOne",
       [](CaseFolder& f) {
         json bad = CaseFolder::good_document();
         bad["results"][1]["measurement"]["rel_error"] = 0.5;
         return "import " + quoted(f.write("good.json", CaseFolder::good_document().dump())) + " " +
                quoted(f.write("bad.json", bad.dump())) + " --db " + quoted(f.db());
       },
       kInvalid, "bad.json: results[1].measurement.rel_error: 0.5 exceeds the error bound"},
      {"EveryRejectedEntryIsListed",
       [](CaseFolder& f) {
         json bad = CaseFolder::good_document();
         bad["results"][1]["measurement"]["rel_error"] = 0.5;
         bad["results"][4]["created_at"] = "soon";
         bad["trials"][7]["measurement"]["tflops"] = 0.001;
         return "import " + quoted(f.write("bad.json", bad.dump())) + " --db " + quoted(f.db());
       },
       kInvalid, "3 of the entries of"},
      {"StandardInputNotJson",
       [](CaseFolder& f) {
         return "import - --db " + quoted(f.db()) + " < " + quoted(f.write("in.txt", "not json"));
       },
       kInvalid, "standard input: not valid JSON at byte"},
      {"MergeOfABadExport",
       [](CaseFolder& f) {
         json bad = CaseFolder::good_document();
         bad["devices"][0]["cc_major"] = 99;
         return "merge " + quoted(f.write("bad.json", bad.dump())) + " -o " + quoted(f.db());
       },
       kInvalid, "devices[0].cc_major: 99 is not a compute capability"},
      {"MergeOfADamagedDatabase",
       [](CaseFolder& f) {
         return "merge " + quoted(f.damaged_copy("bad.db", "UPDATE trials SET occupancy_blocks = -66")) +
                " -o " + quoted(f.file("merged.db"));
       },
       kDatabase, "occupancy_blocks: -66"},

      // Read-only files ------------------------------------------------------------------------------
      {"ImportIntoAReadOnlyFile",
       [](CaseFolder& f) {
         const std::string good = f.write("good.json", CaseFolder::good_document().dump());
         std::filesystem::permissions(f.db(), std::filesystem::perms::owner_read |
                                                  std::filesystem::perms::group_read |
                                                  std::filesystem::perms::others_read);
         return "import " + quoted(good) + " --db " + quoted(f.db());
       },
       kDatabase, "cannot be written: the file", true},
      {"ImportIntoADatabaseInAReadOnlyFolder",
       [](CaseFolder& f) {
         const std::string good = f.write("good.json", CaseFolder::good_document().dump());
         std::filesystem::create_directory(f.file("site"));
         std::filesystem::copy_file(f.db(), f.file("site/shared.db"));
         // The file itself may be written by anyone: only the folder stands in the way.
         std::filesystem::permissions(f.file("site/shared.db"),
                                      std::filesystem::perms::all & ~(std::filesystem::perms::owner_exec |
                                                                      std::filesystem::perms::group_exec |
                                                                      std::filesystem::perms::others_exec));
         std::filesystem::permissions(
             f.file("site"), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                                 std::filesystem::perms::group_read | std::filesystem::perms::group_exec |
                                 std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
         return "import " + quoted(good) + " --db " + quoted(f.file("site/shared.db"));
       },
       kDatabase, "cannot be written: its folder", true},
      {"MergeIntoAReadOnlyFile",
       [](CaseFolder& f) {
         const std::string good = f.write("good.json", CaseFolder::good_document().dump());
         std::filesystem::permissions(f.db(), std::filesystem::perms::owner_read |
                                                  std::filesystem::perms::group_read |
                                                  std::filesystem::perms::others_read);
         return "merge " + quoted(good) + " -o " + quoted(f.db());
       },
       kDatabase, "cannot be written", true},
  };
  return c;
}

class BadInputCli : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputCli, ExitsWithItsStatusSaysWhyAndChangesNoFile) {
  const BadInput& bad = GetParam();
  CaseFolder folder;
  std::string prefix;
  if (bad.unprivileged) {
    const std::optional<std::string> unprivileged = test_support::unprivileged_prefix();
    if (!unprivileged) GTEST_SKIP() << test_support::kNoUnprivilegedUser;
    prefix = *unprivileged;
    // The unprivileged user must reach the folder and read its files.
    std::filesystem::permissions(folder.path(),
                                 std::filesystem::perms::others_read | std::filesystem::perms::others_exec,
                                 std::filesystem::perm_options::add);
  }
  const std::string arguments = bad.arguments(folder);
  if (bad.unprivileged) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder.path())) {
      if (entry.is_regular_file()) {
        std::filesystem::permissions(entry.path(), std::filesystem::perms::others_read,
                                     std::filesystem::perm_options::add);
      }
    }
  }
  const auto before = snapshot(folder.path());
  // GEMMFORGE_DB points into the folder so that a command falling back to the default changes nothing
  // outside it; HOME too, for the per-user cache.
  const CommandResult r = run_command("cd " + quoted(folder.path().string()) +
                                      " && GEMMFORGE_DB=" + quoted(folder.file("default.db")) +
                                      " HOME=" + quoted(folder.path().string()) +
                                      " XDG_CACHE_HOME= " + prefix + gemmforge_tool() + " " + arguments);
  EXPECT_EQ(r.status, bad.status) << r.output;
  EXPECT_NE(r.output.find(bad.message), std::string::npos)
      << "expected: " << bad.message << "\nprinted: " << r.output;
  const auto after = snapshot(folder.path());
  EXPECT_TRUE(before == after) << "files changed or left behind:\n" << snapshot_difference(before, after);
  std::filesystem::permissions(folder.path(), std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add);
  if (std::filesystem::exists(folder.file("site"))) {
    std::filesystem::permissions(folder.file("site"), std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
  }
}

INSTANTIATE_TEST_SUITE_P(All, BadInputCli, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<BadInput>& info) { return info.param.name; });

TEST(BadInputSuite, CoversAtLeastSixtyCases) {
  EXPECT_GE(cases().size(), 60u);
}

}  // namespace
}  // namespace gemmforge::testing
