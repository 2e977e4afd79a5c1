// Reading and writing result files, streamed so that neither memory nor a size cap limits them.
#include "runtime/exchange_files.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>

#include "core/gzip.hpp"
#include "gemmforge/error.hpp"
#include "runtime/config_check.hpp"

namespace gemmforge::runtime {

namespace fs = std::filesystem;

namespace {

// The input of an import: a file, or standard input for "-"; inflated as it is read where it is gzip.
struct Input {
  std::ifstream file;
  std::unique_ptr<GzipInputBuffer> inflater;
  std::unique_ptr<std::istream> inflated;
  std::istream* stream = nullptr;
  int64_t size = 0;  // of the text read, where known
  std::string name;
};

// Reads `input` into `importer`. Where gzip data is damaged or cut short, that is the error, not what the
// early end made of the JSON.
void read_input(db::Importer& importer, Input& input, const db::Progress& progress) {
  const auto throw_if_inflating_failed = [&input] {
    if (input.inflater && !input.inflater->error().empty())
      throw InvalidArgumentError(fmt::format("{}: {}", input.name, input.inflater->error()));
  };
  try {
    importer.read(*input.stream, input.name, progress, input.size);
  } catch (const InvalidArgumentError&) {
    throw_if_inflating_failed();
    throw;
  }
  throw_if_inflating_failed();
  if (input.stream->bad())
    throw InvalidArgumentError(fmt::format("{}: a read error stopped the import", input.name));
}

void open_input(Input& input, const std::string& path) {
  if (path == "-") {
    input.stream = &std::cin;
    input.name = "standard input";
    return;
  }
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status))
    throw InvalidArgumentError(fmt::format("cannot read '{}': there is no such file", path));
  if (fs::is_directory(status)) {
    throw InvalidArgumentError(fmt::format("cannot read '{}': it is a folder; name an export file", path));
  }
  input.file.open(path, std::ios::binary);
  if (!input.file) throw InvalidArgumentError(fmt::format("cannot read '{}': permission denied", path));
  if (fs::is_regular_file(status)) input.size = static_cast<int64_t>(fs::file_size(path, error));
  input.stream = &input.file;
  input.name = path;
}

// An export compressed with gzip (as db/tuned/ keeps them) is inflated as it is read.
void inflate_if_gzip(Input& input) {
  if (!starts_as_gzip(input.stream->peek())) return;
  input.inflater = std::make_unique<GzipInputBuffer>(*input.stream);
  input.inflated = std::make_unique<std::istream>(input.inflater.get());
  input.stream = input.inflated.get();
  input.size = 0;  // the text's size is not the file's
}

// A name beside `path` that no other process picks: the export is written there, then renamed.
std::string temporary_beside(const std::string& path) {
  std::random_device random;
  return fmt::format("{}.tmp-{}-{:08x}", path, ::getpid(), random());
}

}  // namespace

std::string database_path_or_default(const std::string& option) {
  return option.empty() ? db::Database::default_path() : option;
}

std::optional<db::Database> open_existing(const std::string& path, const db::OpenOptions& options) {
  db::OpenOptions reading = options;
  reading.create = false;
  try {
    return db::Database::open(path, reading);
  } catch (const NotFoundError&) {
    return std::nullopt;
  }
}

FileKind file_kind(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char bytes[16] = {};
  in.read(bytes, sizeof(bytes));
  const std::streamsize got = in.gcount();
  if (got == 16 && std::string(bytes, 16) == std::string("SQLite format 3\0", 16)) return FileKind::kDatabase;
  if (has_gzip_magic(bytes, static_cast<size_t>(got))) return FileKind::kGzip;
  for (std::streamsize i = 0; i < got; ++i) {
    if (std::isspace(static_cast<unsigned char>(bytes[i]))) continue;
    return bytes[i] == '{' ? FileKind::kJson : FileKind::kOther;
  }
  return FileKind::kOther;
}

std::optional<db::Database> open_results(const std::string& path, const TemplateLibrary& library) {
  const FileKind kind = path != ":memory:" && fs::is_regular_file(path) ? file_kind(path) : FileKind::kOther;
  if (kind == FileKind::kJson || kind == FileKind::kGzip) {
    db::Database database = db::Database::open(":memory:");
    import_file(database, path, db::ImportPolicy::kFaster, library);
    return database;
  }
  return open_existing(path);
}

ResultSources open_result_sources(const std::string& path, const TemplateLibrary& library) {
  ResultSources sources;
  const std::string primary = database_path_or_default(path);
  std::optional<db::Database> opened = open_results(primary, library);
  if (!opened && !path.empty()) throw NotFoundError(fmt::format("there is no database at '{}'", primary));
  std::string label;
  if (opened) {
    label = fmt::format("database {}", primary);
    sources.databases.push_back(std::make_unique<SharedDatabase>(std::move(*opened)));
  }
  if (const char* site = std::getenv("GEMMFORGE_SITE_DB"); site != nullptr && *site != '\0') {
    try {
      std::optional<db::Database> site_database = open_results(site, library);
      if (!site_database) throw NotFoundError("there is no such file");
      label += fmt::format("{}site database {}", label.empty() ? "" : ", then ", site);
      sources.databases.push_back(std::make_unique<SharedDatabase>(std::move(*site_database)));
    } catch (const Error& e) {
      spdlog::warn("the site database {} is not consulted: {}", site, e.what());
    }
  }
  if (!sources.databases.empty()) {
    std::vector<SharedDatabase*> layers;
    for (const auto& database : sources.databases) layers.push_back(database.get());
    sources.source = std::make_unique<TunedSource>(std::move(layers), label);
  }
  return sources;
}

ExportFormat parse_export_format(const std::string& text) {
  if (text == "json") return ExportFormat::kJson;
  if (text == "csv") return ExportFormat::kCsv;
  throw InvalidArgumentError(fmt::format("export format '{}' is not json or csv", text));
}

db::ExportSummary export_file(const db::Database& database, const std::string& path, ExportFormat format,
                              const db::ExportOptions& options, const db::Progress& progress) {
  auto write = [&](std::ostream& out) {
    return format == ExportFormat::kJson ? db::write_export_json(database, out, options, progress)
                                         : db::write_export_csv(database, out, options, progress);
  };
  if (path == "-") {
    std::ios::sync_with_stdio(false);
    return write(std::cout);
  }
  if (fs::is_directory(path)) {
    throw InvalidArgumentError(fmt::format("cannot write the export to '{}': it is a folder", path));
  }
  const std::string temporary = temporary_beside(path);
  try {
    db::ExportSummary summary;
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      if (!out) {
        throw InvalidArgumentError(
            fmt::format("cannot write the export to '{}': its folder does not exist or "
                        "is not writable",
                        path));
      }
      if (path.ends_with(".gz")) {  // compressed as it is written; a failure shows on `out` below
        GzipOutputBuffer packer(out);
        std::ostream packed(&packer);
        summary = write(packed);
        if (!packed || !packer.finish()) out.setstate(std::ios::badbit);
      } else {
        summary = write(out);
      }
      out.close();
      if (!out) throw InvalidArgumentError(fmt::format("cannot write the export to '{}' (disk full?)", path));
    }
    std::error_code error;
    fs::rename(temporary, path, error);
    if (error) {
      throw InvalidArgumentError(fmt::format("cannot write the export to '{}': {}", path, error.message()));
    }
    return summary;
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

db::ImportChecks import_checks(const TemplateLibrary& library, double error_bound) {
  db::ImportChecks checks;
  checks.validate = manifest_validator(library);
  checks.known_source = [&library](const std::string& name, const std::string& hash) {
    return current_source(library, name, hash);
  };
  checks.error_bound = error_bound;
  return checks;
}

void read_exports(db::Importer& importer, const std::vector<std::string>& paths,
                  const std::function<db::Progress(const std::string& path)>& progress) {
  size_t from_stdin = 0;
  for (const std::string& path : paths) from_stdin += path == "-" ? 1 : 0;
  if (from_stdin > 1) throw InvalidArgumentError("standard input (-) can be read only once per import");
  for (const std::string& path : paths) {
    Input input;
    open_input(input, path);
    inflate_if_gzip(input);
    read_input(importer, input, progress ? progress(input.name) : db::Progress());
  }
}

db::ImportReport import_files(db::Database& database, const std::vector<std::string>& paths,
                              db::ImportPolicy policy, const db::ImportChecks& checks,
                              const std::function<db::Progress(const std::string& path)>& progress) {
  if (paths.empty())
    throw InvalidArgumentError("no file to import; name one or more exports, or - for standard input");
  db::Importer importer(database, policy, checks);
  read_exports(importer, paths, progress);
  return importer.finish();
}

db::ImportReport import_file(db::Database& database, const std::string& path, db::ImportPolicy policy,
                             const TemplateLibrary& library) {
  const db::ImportReport report = import_files(database, {path}, policy, import_checks(library));
  if (!report.committed) {
    throw InvalidArgumentError(fmt::format(
        "{}{}; nothing was imported", report.rejections.front(),
        report.rejected > 1 ? fmt::format(" (and {} more faults)", report.rejected - 1) : std::string()));
  }
  return report;
}

db::ImportReport merge_files(db::Database& database, const std::vector<std::string>& inputs,
                             const db::ImportChecks& checks,
                             const std::function<db::Progress(const std::string& path)>& progress) {
  if (inputs.empty()) throw InvalidArgumentError("nothing to merge; name databases or exports to merge");
  db::Importer importer(database, db::ImportPolicy::kMerge, checks);
  for (const std::string& input : inputs) {
    if (input != "-" && fs::is_regular_file(input) && file_kind(input) == FileKind::kDatabase) {
      const db::Database source = db::Database::open(input, {db::Access::kReadOnly, false, {}});
      importer.read(source, progress ? progress(input) : db::Progress());
    } else {
      read_exports(importer, {input}, progress);
    }
  }
  return importer.finish();
}

namespace {

// A stream over bytes held elsewhere, without a copy; only ever read.
class ViewBuffer : public std::streambuf {
 public:
  explicit ViewBuffer(const std::string& bytes) {
    char* begin = const_cast<char*>(bytes.data());
    setg(begin, begin, begin + bytes.size());
  }
};

}  // namespace

void read_export_bytes(const std::string& bytes, const std::string& origin,
                       const std::function<void(std::istream& stream)>& read) {
  ViewBuffer view(bytes);
  std::istream raw(&view);
  if (!has_gzip_magic(bytes.data(), bytes.size())) {
    read(raw);
    return;
  }
  GzipInputBuffer inflater(raw);
  std::istream in(&inflater);
  const auto damaged = [&] { return InvalidArgumentError(fmt::format("{}: {}", origin, inflater.error())); };
  try {
    read(in);
  } catch (const InvalidArgumentError&) {
    if (!inflater.error().empty()) throw damaged();
    throw;
  }
  if (!inflater.error().empty()) throw damaged();
}

}  // namespace gemmforge::runtime
