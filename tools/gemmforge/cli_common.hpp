// Helpers shared by the subcommands of the gemmforge tool.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"

namespace gemmforge::cli {

/// A subcommand: the CLI11 node holding its options, and what runs when it is chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

/// Adds a subcommand to the tool. Each cmd_*.cpp registers itself at start-up:
///   static const bool registered = cli::register_command(30, register_tune);
/// `order` sets the position in --help (devices 10, space 20, tune 30, ...).
using Registrar = Command (*)(CLI::App&);
bool register_command(int order, Registrar registrar);
/// Every registered subcommand, in order.
std::vector<Command> make_commands(CLI::App& app);

/// Parses "4096x4096x4096" (also "4096 4096 4096") into m, n, k; throws InvalidArgumentError.
void parse_shape(const std::string& text, int64_t& m, int64_t& n, int64_t& k);

/// One problem of a shape file: its sizes, and its layout and storage order where the line gives them.
struct ShapeEntry {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  std::string layout;  ///< "nn", "nt", "tn" or "tt"; empty: the command's --layout
  std::string order;   ///< "row" or "col"; empty: the command's --order
};

/// Reads a shape file: one "M N K [layout] [order]" per line (e.g. "4096 14336 4096 nt row"), '#' starts a
/// comment. Throws InvalidArgumentError naming the line.
std::vector<ShapeEntry> read_shapes(const std::string& path);

/// The entries of every --shape text (sizes only) followed by those of the shape file, if one is given.
std::vector<ShapeEntry> collect_shapes(const std::vector<std::string>& shapes, const std::string& file);

/// Canonical problem of a row- or column-major call with the given layout ("nn", "nt", ...) and aligned data;
/// `type` names the operand type and, after '>', C's type where it differs ("bf16", "bf16>f32").
KernelProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& layout,
                           const std::string& order, const std::string& type = "f32");

/// The device to work on: the GPU named by `spec` when one is present, else nominal limits of `arch`
/// (an empty arch then means the GPU is required, and a missing GPU is an error).
DeviceInfo resolve_device(const std::string& spec, const std::string& arch);

}  // namespace gemmforge::cli
