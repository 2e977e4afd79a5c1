// `gemmforge report --left-out`: how the performance model serves problems nobody tuned, measured on the
// tuned ones. Each tuned problem of a GPU model is left out in turn, the models are fitted on the rest as
// serving fits them, and the config they choose among those measured on it is compared with the best.
#pragma once

#include <functional>
#include <string>

#include "core/problem.hpp"

namespace gemmforge::cli {

struct LeftOutRequest {
  std::string db;        ///< the user's database or export, as serving reads it (empty: the default)
  bool shipped = false;  ///< the shipped results alone
  std::string device;    ///< (part of) a GPU model's name; empty: every model with results
  std::function<bool(const KernelProblem&)> problem;  ///< problems to leave out; empty: all
  size_t ranked = 0;  ///< configs listed per problem: those the model ranks first, the fastest measured
  bool json = false;
};

int run_left_out(const LeftOutRequest& request);

}  // namespace gemmforge::cli
