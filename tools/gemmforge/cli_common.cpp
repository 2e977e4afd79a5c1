// Parsing of shapes, layouts and devices for the gemmforge tool.
#include "cli_common.hpp"

#include "core/dtype.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
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

void parse_shape(const std::string& text, int64_t& m, int64_t& n, int64_t& k) {
  std::string spaced = text;
  for (char& c : spaced) {
    if (c == 'x' || c == 'X' || c == ',') c = ' ';
  }
  std::istringstream in(spaced);
  std::string rest;
  if (!(in >> m >> n >> k) || (in >> rest) || m < 0 || n < 0 || k < 0) {
    throw InvalidArgumentError(
        fmt::format("shape '{}' must be MxNxK with non-negative integers, e.g. 4096x4096x4096", text));
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
  p.align_a = align(p.a_trans ? p.m : p.k, p.dtype);
  p.align_b = align(p.b_trans ? p.k : p.n, p.dtype);
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
