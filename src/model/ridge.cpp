// Ridge regression by Cholesky factorization of the penalized normal equations.
#include "model/ridge.hpp"

#include <algorithm>
#include <cmath>

namespace gemmforge::model {
namespace {

// Solves A x = b in place for symmetric positive definite A (n x n, row-major); b becomes x.
void solve_cholesky(std::vector<double>& a, std::vector<double>& b, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double diagonal = a[j * n + j];
    for (size_t k = 0; k < j; ++k) diagonal -= a[j * n + k] * a[j * n + k];
    const double root = std::sqrt(std::max(diagonal, 1e-12));
    a[j * n + j] = root;
    for (size_t i = j + 1; i < n; ++i) {
      double sum = a[i * n + j];
      for (size_t k = 0; k < j; ++k) sum -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = sum / root;
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = b
    double sum = b[i];
    for (size_t k = 0; k < i; ++k) sum -= a[i * n + k] * b[k];
    b[i] = sum / a[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // L^T x = y
    double sum = b[i];
    for (size_t k = i + 1; k < n; ++k) sum -= a[k * n + i] * b[k];
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
