// Parsing of shapes, layouts and devices for the gemmforge tool.
#include "cli_common.hpp"

#include "core/dtype.hpp"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/device.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::cli {
namespace {

std::vector<std::pair<int, Registrar>>& registrars() {
  static std::vector<std::pair<int, Registrar>> list;
  return list;
}

}  // namespace

bool register_command(int order, Registrar registrar) {
  registrars().emplace_back(order, registrar);
  return true;
}

std::vector<Command> make_commands(CLI::App& app) {
  auto list = registrars();
  std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Command> commands;
  for (const auto& [order, registrar] : list) commands.push_back(registrar(app));
  return commands;
}

CLI::Validator one_of(const std::vector<std::string>& allowed) {
  return CLI::Validator(
      [allowed](std::string& value) -> std::string {
        if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return {};
        return fmt::format("'{}' is not one of {}", value, fmt::join(allowed, ", "));
      },
      fmt::format("{{{}}}", fmt::join(allowed, ",")));
}

namespace {

void add_choice_option(CLI::App* cmd, const std::string& name, std::string& value, const std::string& help,
                       const std::vector<std::string>& allowed) {
  CLI::Option* option = cmd->add_option(name, value, help)->check(one_of(allowed));
  if (!value.empty()) option->capture_default_str();
}

}  // namespace

void add_layout_option(CLI::App* cmd, std::string& layout, const std::string& help) {
  add_choice_option(cmd, "--layout", layout, help, {"nn", "nt", "tn", "tt"});
}

void add_order_option(CLI::App* cmd, std::string& order, const std::string& help) {
  add_choice_option(cmd, "--order", order, help, {"row", "col"});
}

int exit_status(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::kInvalidArgument:
    case ErrorKind::kNotFound:
    case ErrorKind::kNotSupported:
      return kExitInvalid;
    case ErrorKind::kNoDevice:
      return kExitNoDevice;
    case ErrorKind::kDatabase:
      return kExitDatabase;
    case ErrorKind::kCuda:
    case ErrorKind::kNvrtc:
    case ErrorKind::kCublas:
      return kExitGpu;
    case ErrorKind::kInternal:
      break;
  }
  return kExitInternal;
}

std::string exit_status_help() {
  return fmt::format(
      "Exit status:\n"
      "  {}   success\n"
      "  {}   invalid command line or input: an unknown command or option, a bad value, a file or document\n"
      "      that is rejected, a name that matches nothing, or a combination of types not supported\n"
      "  {}   the command needs a GPU and none is usable\n"
      "  {}   a database cannot be opened, read or written (damaged, newer, locked, read-only)\n"
      "  {}   a CUDA, NVRTC or cuBLAS call failed\n"
      "  {}  an internal error of gemmforge (please report it)",
      kExitOk, kExitInvalid, kExitNoDevice, kExitDatabase, kExitGpu, kExitInternal);
}

db::Progress terminal_progress(const std::string& label, const std::string& unit) {
  if (::isatty(STDERR_FILENO) == 0) return {};
  struct State {
    std::chrono::steady_clock::time_point last{};
    bool drawn = false;
  };
  auto state = std::make_shared<State>();
  return [label, unit, state](int64_t done, int64_t total) {
    const auto now = std::chrono::steady_clock::now();
    const bool end = total > 0 && done >= total;
    if (!end && now - state->last < std::chrono::milliseconds(200)) return;
    state->last = now;
    const bool bytes = unit == "bytes";
    auto amount = [&](int64_t value) {
      return bytes ? fmt::format("{:.0f}", static_cast<double>(value) / (1 << 20)) : fmt::format("{}", value);
    };
    const std::string of = bytes ? " MB" : fmt::format(" {}", unit);
    if (total > 0) {
      fmt::print(stderr, "\r{}: {:3.0f}% ({} of {}{})\x1b[K", label,
                 100.0 * static_cast<double>(done) / total, amount(done), amount(total), of);
    } else {
      fmt::print(stderr, "\r{}: {}{}\x1b[K", label, amount(done), of);
    }
    state->drawn = true;
    if (end) fmt::print(stderr, "\n");
  };
}

NewFileGuard::NewFileGuard(const std::string& path) : path_(path) {
  std::error_code error;
  existed_ = path == ":memory:" || std::filesystem::exists(path, error);
}

NewFileGuard::~NewFileGuard() {
  if (existed_ || keep_) return;
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    std::filesystem::remove(path_ + suffix, ignored);
}

void parse_shape(const std::string& text, int64_t& m, int64_t& n, int64_t& k) {
  std::string spaced = text;
  for (char& c : spaced) {
    if (c == 'x' || c == 'X' || c == ',') c = ' ';
  }
  std::istringstream in(spaced);
  std::string rest;
  if (!(in >> m >> n >> k) || (in >> rest)) {
    throw InvalidArgumentError(
        fmt::format("shape '{}' must be MxNxK with integers, e.g. 4096x4096x4096", text));
  }
  try {
    check_dimension("m", m, 1);
    check_dimension("n", n, 1);
    check_dimension("k", k, 1);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(
        fmt::format("shape '{}': {}{}", text, e.what(),
                    m == 0 || n == 0 || k == 0 ? " (a GEMM with a zero size launches no kernel)" : ""));
  }
}

std::vector<ShapeEntry> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InvalidArgumentError(fmt::format("cannot read shape file '{}'", path));
  std::vector<ShapeEntry> shapes;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string word; words >> word;) fields.push_back(word);
    if (fields.empty()) continue;
    ShapeEntry entry;
    try {
      if (fields.size() < 3 || fields.size() > 5) {
        throw InvalidArgumentError("a line holds \"M N K\", optionally followed by a layout and an order");
      }
      parse_shape(fields[0] + " " + fields[1] + " " + fields[2], entry.m, entry.n, entry.k);
      if (fields.size() > 3) {
        bool ta = false, tb = false;
        parse_layout(fields[3], ta, tb);
        entry.layout = fields[3];
      }
      if (fields.size() > 4) {
        parse_order(fields[4]);
        entry.order = fields[4];
      }
    } catch (const InvalidArgumentError& e) {
      throw InvalidArgumentError(fmt::format("{}:{}: {}", path, number, e.what()));
    }
    shapes.push_back(entry);
  }
  if (shapes.empty()) throw InvalidArgumentError(fmt::format("shape file '{}' lists no shapes", path));
  return shapes;
}

std::vector<ShapeEntry> collect_shapes(const std::vector<std::string>& shapes, const std::string& file) {
  std::vector<ShapeEntry> entries;
  for (const std::string& text : shapes) {
    ShapeEntry entry;
    parse_shape(text, entry.m, entry.n, entry.k);
    entries.push_back(entry);
  }
  if (!file.empty()) {
    const std::vector<ShapeEntry> listed = read_shapes(file);
    entries.insert(entries.end(), listed.begin(), listed.end());
  }
  return entries;
}

KernelProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& layout,
                           const std::string& order, const std::string& type) {
  bool ta = false;
  bool tb = false;
  parse_layout(layout, ta, tb);
  KernelProblem p;
  parse_type_name(type, p.dtype, p.c_dtype);
  if (parse_order(order) == Order::kRowMajor) {
    p.m = m, p.n = n, p.a_trans = ta, p.b_trans = tb;
  } else {
    p.m = n, p.n = m, p.a_trans = tb, p.b_trans = ta;
  }
  p.k = k;
  // Leading dimensions equal to the matrix extents: aligned as far as the contiguous extent allows (16 bytes
  // at most), as vector_alignment() finds for such a matrix at an aligned address.
  auto align = [](int64_t contiguous, Dtype dtype) {
    int width = 16 / element_bytes(dtype);
    while (width > 1 && contiguous % width != 0) width /= 2;
    return width;
  };
  p.align_a = align(p.a_row_length(), p.dtype);
  p.align_b = align(p.b_row_length(), p.dtype);
  p.align_c = align(p.n, p.c_dtype);
  return p;
}

DeviceInfo resolve_device(const std::string& spec, const std::string& arch) {
  if (!arch.empty()) {
    DeviceInfo device = DeviceInfo::nominal(arch);
    device.nvrtc_version = rtc::nvrtc_version();
    return device;
  }
  DeviceInfo device = cuda::query_device(cuda::find_device(spec));
  device.nvrtc_version = rtc::nvrtc_version();
  return device;
}

}  // namespace gemmforge::cli
