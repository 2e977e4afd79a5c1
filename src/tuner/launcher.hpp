// Tuning on many hosts under the cluster's own launcher (srun, mpirun): each process finds its rank and
// the world size in the environment the launcher set, takes a deterministic share of the problems and
// writes a database of its own; `gemmforge merge` pools the databases afterwards.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/problem.hpp"

namespace gemmforge::tuner {

/// This process's place among the processes of one launch.
struct RankInfo {
  int rank = 0;
  int size = 1;
  std::string source;  ///< "SLURM", "Open MPI", "PMI", "--rank", or empty when alone
};

/// Reads SLURM_PROCID/SLURM_NTASKS, else OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, else PMI_RANK/PMI_SIZE
/// (MPICH, Intel MPI); a process none of them names is alone (rank 0 of 1). `getenv` is injectable for
/// tests. Throws InvalidArgumentError for a rank or size that is not a number, or a rank outside the size.
RankInfo rank_from_environment(const std::function<const char*(const char*)>& getenv = {});

/// "R/N" (e.g. "3/8") as given on the command line.
RankInfo parse_rank(const std::string& text);

/// The problems of rank `rank` of `size`: every distinct problem goes to exactly one rank, whatever the
/// order of `problems`, the costliest first to the least loaded rank (cost: the problem's FLOPs; ties by
/// the problem's text), so each rank gets about the same work. Returned in the order of `problems`.
std::vector<KernelProblem> shard_problems(const std::vector<KernelProblem>& problems, int rank, int size);

/// The database a rank writes: `path` itself for a process alone; else {rank} and {size} in it are
/// replaced, or, without them, ".rank<R>-of-<N>" goes before the extension ("tune.db" ->
/// "tune.rank3-of-8.db").
std::string rank_database_path(const std::string& path, const RankInfo& rank);

}  // namespace gemmforge::tuner
