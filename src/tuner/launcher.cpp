// Rank and world size from the launcher's environment, and each rank's share of the problems.
#include "tuner/launcher.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "gemmforge/error.hpp"

namespace gemmforge::tuner {
namespace {

int parse_count(const std::string& name, const std::string& text) {
  size_t used = 0;
  int value = -1;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 0) {
    throw InvalidArgumentError(fmt::format("{}='{}' is not a rank or a process count", name, text));
  }
  return value;
}

RankInfo checked(RankInfo info) {
  if (info.size < 1 || info.rank < 0 || info.rank >= info.size) {
    throw InvalidArgumentError(
        fmt::format("rank {} of {} processes ({}): a rank runs from 0 to the process count less one",
                    info.rank, info.size, info.source));
  }
  return info;
}

}  // namespace

RankInfo rank_from_environment(const std::function<const char*(const char*)>& getenv) {
  const auto get = [&](const char* name) -> const char* { return getenv ? getenv(name) : std::getenv(name); };
  struct Launcher {
    const char* rank;
    const char* size;
    const char* name;
  };
  for (const Launcher& l : {Launcher{"SLURM_PROCID", "SLURM_NTASKS", "SLURM"},
                            Launcher{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
                            Launcher{"PMI_RANK", "PMI_SIZE", "PMI"}}) {
    const char* rank = get(l.rank);
    const char* size = get(l.size);
    if (rank == nullptr || size == nullptr) continue;
    RankInfo info;
    info.rank = parse_count(l.rank, rank);
    info.size = parse_count(l.size, size);
    info.source = l.name;
    return checked(info);
  }
  return RankInfo{};
}

RankInfo parse_rank(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) {
    throw InvalidArgumentError(fmt::format("--rank '{}' must be RANK/SIZE, e.g. 0/4", text));
  }
  RankInfo info;
  info.rank = parse_count("--rank", text.substr(0, slash));
  info.size = parse_count("--rank", text.substr(slash + 1));
  info.source = "--rank";
  return checked(info);
}

std::vector<KernelProblem> shard_problems(const std::vector<KernelProblem>& problems, int rank, int size) {
  checked(RankInfo{rank, size, "shard"});
  std::vector<KernelProblem> distinct;
  for (const KernelProblem& p : problems) {
    if (std::find(distinct.begin(), distinct.end(), p) == distinct.end()) distinct.push_back(p);
  }
  // An order that depends on the problems only, not on the list they came in.
  std::vector<size_t> order(distinct.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::vector<std::string> text;
  for (const KernelProblem& p : distinct) text.push_back(p.to_string());
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (distinct[a].flops() != distinct[b].flops()) return distinct[a].flops() > distinct[b].flops();
    return text[a] < text[b];
  });
  std::vector<double> load(static_cast<size_t>(size), 0.0);
  std::vector<uint8_t> mine(distinct.size(), 0);
  for (size_t i : order) {
    const size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    // Every problem weighs at least a little: tuning costs time however small the GEMM.
    load[least] += std::max(distinct[i].flops(), 1e9);
    if (static_cast<int>(least) == rank) mine[i] = 1;
  }
  std::vector<KernelProblem> out;
  for (size_t i = 0; i < distinct.size(); ++i) {
    if (mine[i] != 0) out.push_back(distinct[i]);
  }
  return out;
}

std::string rank_database_path(const std::string& path, const RankInfo& rank) {
  if (rank.size <= 1 || path == ":memory:") return path;
  std::string out = path;
  bool replaced = false;
  for (const auto& [key, value] : {std::pair<std::string, int>{"{rank}", rank.rank}, {"{size}", rank.size}}) {
    for (size_t at = out.find(key); at != std::string::npos; at = out.find(key)) {
      out.replace(at, key.size(), std::to_string(value));
      replaced = true;
    }
  }
  if (replaced) return out;
  const std::filesystem::path p(path);
  const std::string suffix = fmt::format(".rank{}-of-{}", rank.rank, rank.size);
  return (p.parent_path() / (p.stem().string() + suffix + p.extension().string())).string();
}

}  // namespace gemmforge::tuner
