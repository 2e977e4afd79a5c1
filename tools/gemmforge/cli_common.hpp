// Helpers shared by the subcommands of the gemmforge tool.
#pragma once

#include <CLI/CLI.hpp>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/problem.hpp"
#include "db/exchange.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge::cli {

/// Exit statuses of every command, listed by `gemmforge --help` and the README.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 2;    ///< the command line or an input is invalid, or names nothing
inline constexpr int kExitNoDevice = 3;   ///< the command needs a GPU and there is none
inline constexpr int kExitDatabase = 4;   ///< a database cannot be opened, read or written
inline constexpr int kExitGpu = 5;        ///< a CUDA, NVRTC or cuBLAS call failed
inline constexpr int kExitInternal = 70;  ///< a bug in gemmforge; please report it
/// The exit status of a failure of this kind.
int exit_status(ErrorKind kind) noexcept;
/// The table of exit statuses, for --help.
std::string exit_status_help();

/// The help text of every --dtype option, which a command may follow with what it does with the type.
inline constexpr const char* kDtypeHelp =
    "Operand type f32, tf32, f16, bf16 or ffma (FP32 by plain FFMA), with '>f32' for an FP32 C (bf16>f32)";

/// The help text of every --db option.
inline constexpr const char* kDbHelp =
    "Tuning database (default: $GEMMFORGE_DB, else ~/.cache/gemmforge/gemmforge.db)";

/// Progress on standard error while it is a terminal ("label: 42% (113 of 270 MB)"), redrawn at most
/// five times a second and ended with a line break; nothing when standard error is a file or a pipe.
/// `unit` is "bytes" or "entries".
db::Progress terminal_progress(const std::string& label, const std::string& unit);

/// Removes a database file that a command created and then failed in, so that a failed command leaves no
/// empty database behind. Declare it before the Database, so the connection closes first.
class NewFileGuard {
 public:
  explicit NewFileGuard(const std::string& path);
  NewFileGuard(const NewFileGuard&) = delete;
  NewFileGuard& operator=(const NewFileGuard&) = delete;
  ~NewFileGuard();
  /// The command succeeded: the file stays.
  void keep() { keep_ = true; }

 private:
  std::string path_;
  bool existed_ = true;
  bool keep_ = false;
};

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
/// The value of an option restricted to `allowed`, for CLI11's check(): rejects anything else with a
/// message listing the allowed values.
CLI::Validator one_of(const std::vector<std::string>& allowed);

/// The help texts of every --layout and --order option, which a command may replace with its own.
inline constexpr const char* kLayoutHelp = "op(A) op(B): nn, nt, tn or tt";
inline constexpr const char* kOrderHelp = "Storage order: row or col";
/// Adds --layout (nn, nt, tn or tt) and --order (row or col) to `cmd`, each rejecting any other value with a
/// message naming the option; a non-empty value already in `layout` or `order` is shown as its default.
void add_layout_option(CLI::App* cmd, std::string& layout, const std::string& help = kLayoutHelp);
void add_order_option(CLI::App* cmd, std::string& order, const std::string& help = kOrderHelp);

/// Parses "4096x4096x4096" (also "4096 4096 4096") into m, n, k, each a size in 1..2147483647
/// (check_dimension, as the APIs and imports check them); throws InvalidArgumentError.
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
