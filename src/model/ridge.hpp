// Weighted ridge regression over sparse features, solved by Cholesky on the normal equations within their
// profile: features that never meet in an observation cost nothing, so the performance model's thousands of
// features in blocks (one per template and type family) fit at the cost of the blocks alone.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace gemmforge::model {

/// Non-zero features of one observation: (index, value).
using SparseFeatures = std::vector<std::pair<size_t, double>>;

class RidgeRegression {
 public:
  /// One penalty per feature, in units of observation weight: a weight moves halfway to what the data
  /// alone say once observations of that much total weight back it.
  explicit RidgeRegression(std::vector<double> penalties);

  void add(const SparseFeatures& features, double target, double weight);
  /// The weights minimising the weighted squared error plus the penalties; all zero without observations.
  std::vector<double> solve() const;

  size_t size() const { return penalties_.size(); }

 private:
  std::vector<double> penalties_;
  std::vector<double> normal_;  // X^T W X, row-major
  std::vector<double> rhs_;     // X^T W y
};

/// The weights' dot product with sparse features.
double dot(const std::vector<double>& weights, const SparseFeatures& features);

}  // namespace gemmforge::model
