// Ridge regression by Cholesky factorization of the penalized normal equations.
#include "model/ridge.hpp"

#include <algorithm>
#include <cmath>

namespace gemmforge::model {
namespace {

// Solves A x = b in place for symmetric positive definite A (n x n, row-major); b becomes x. Row i of A is
// zero left of column first[i] (its profile), and so is row i of the Cholesky factor L: the loops start
// there and skip the rows whose profile begins past a column. The features of the models' blocks never
// meet in an observation, so A is block-diagonal and the factorization costs the blocks' sizes cubed, not
// the whole system's; the sums are the dense ones without their zero terms, in the same order.
void solve_cholesky(std::vector<double>& a, std::vector<double>& b, size_t n) {
  std::vector<size_t> first(n);
  for (size_t i = 0; i < n; ++i) {
    first[i] = i;
    for (size_t k = 0; k < i; ++k) {
      if (a[i * n + k] != 0.0) {
        first[i] = k;
        break;
      }
    }
  }
  for (size_t j = 0; j < n; ++j) {
    double diagonal = a[j * n + j];
    for (size_t k = first[j]; k < j; ++k) diagonal -= a[j * n + k] * a[j * n + k];
    const double root = std::sqrt(std::max(diagonal, 1e-12));
    a[j * n + j] = root;
    for (size_t i = j + 1; i < n; ++i) {
      if (first[i] > j) continue;  // L[i][j] is zero
      double sum = a[i * n + j];
      for (size_t k = std::max(first[i], first[j]); k < j; ++k) sum -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = sum / root;
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = b
    double sum = b[i];
    for (size_t k = first[i]; k < i; ++k) sum -= a[i * n + k] * b[k];
    b[i] = sum / a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    double sum = b[i];
    for (size_t k = i + 1; k < n; ++k) {
      if (first[k] <= i) sum -= a[k * n + i] * b[k];
    }
    b[i] = sum / a[i * n + i];
  }
}

}  // namespace

RidgeRegression::RidgeRegression(std::vector<double> penalties)
    : penalties_(std::move(penalties)),
      normal_(penalties_.size() * penalties_.size(), 0.0),
      rhs_(penalties_.size(), 0.0) {}

void RidgeRegression::add(const SparseFeatures& features, double target, double weight) {
  const size_t n = size();
  for (const auto& [f, x] : features) {
    rhs_[f] += weight * x * target;
    for (const auto& [g, y] : features) normal_[f * n + g] += weight * x * y;
  }
}

std::vector<double> RidgeRegression::solve() const {
  const size_t n = size();
  std::vector<double> a = normal_;
  std::vector<double> b = rhs_;
  for (size_t f = 0; f < n; ++f) a[f * n + f] += penalties_[f];
  solve_cholesky(a, b, n);
  return b;
}

double dot(const std::vector<double>& weights, const SparseFeatures& features) {
  double sum = 0;
  for (const auto& [f, x] : features) sum += weights[f] * x;
  return sum;
}

}  // namespace gemmforge::model
