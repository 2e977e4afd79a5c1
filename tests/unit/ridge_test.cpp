// The performance model's ridge regression: weights that fit what the observations say, and a solve that
// follows the normal equations' profile (the model's blocks of features never meet in an observation)
// with the dense solution's result.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "model/ridge.hpp"

namespace gemmforge::model {
namespace {

// The penalized normal equations of `observations`, solved densely by Gaussian elimination with partial
// pivoting: the reference.
std::vector<double> dense_solution(const std::vector<std::pair<SparseFeatures, double>>& observations,
                                   const std::vector<double>& penalties) {
  const size_t n = penalties.size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n + 1, 0.0));
  for (const auto& [features, target] : observations) {
    for (const auto& [f, x] : features) {
      a[f][n] += x * target;
      for (const auto& [g, y] : features) a[f][g] += x * y;
    }
  }
  for (size_t f = 0; f < n; ++f) a[f][f] += penalties[f];
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t row = col + 1; row < n; ++row) {
      if (std::abs(a[row][col]) > std::abs(a[pivot][col])) pivot = row;
    }
    std::swap(a[col], a[pivot]);
    for (size_t row = 0; row < n; ++row) {
      if (row == col) continue;
      const double factor = a[row][col] / a[col][col];
      for (size_t k = col; k <= n; ++k) a[row][k] -= factor * a[col][k];
    }
  }
  std::vector<double> x(n);
  for (size_t f = 0; f < n; ++f) x[f] = a[f][n] / a[f][f];
  return x;
}

TEST(RidgeRegression, FitsTheWeightsTheObservationsSay) {
  RidgeRegression regression(std::vector<double>(4, 1e-9));
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  const std::vector<double> truth = {2.0, -3.0, 0.0, 0.5};
  for (int i = 0; i < 50; ++i) {
    const SparseFeatures features = {{0, value(rng)}, {1, value(rng)}, {3, value(rng)}};
    regression.add(features, dot(truth, features), 1.0);
  }
  const std::vector<double> weights = regression.solve();
  for (size_t f = 0; f < truth.size(); ++f) EXPECT_NEAR(weights[f], truth[f], 1e-6) << f;
}

// Blocks of features that never meet, one of them banded (each observation two neighbours), and a block
// whose features all meet: the profile the solve follows starts at each row's first coupled feature.
TEST(RidgeRegression, SolvesAsTheDenseNormalEquationsWhateverTheirProfile) {
  const size_t n = 40;
  std::vector<double> penalties(n);
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  for (double& p : penalties) p = 0.05 + 0.5 * (value(rng) + 1.0);
  RidgeRegression regression(penalties);
  std::vector<std::pair<SparseFeatures, double>> observations;
  const auto observe = [&](SparseFeatures features) {
    const double target = value(rng);
    const double weight = 0.5 + value(rng) * 0.25;
    regression.add(features, target, weight);
    for (auto& [f, x] : features) x *= std::sqrt(weight);  // the reference weighs by scaling
    observations.emplace_back(std::move(features), target * std::sqrt(weight));
  };
  for (int i = 0; i < 200; ++i) {
    const size_t band = static_cast<size_t>(rng() % 14);  // features 0 to 14, neighbours coupled
    observe({{band, value(rng)}, {band + 1, value(rng)}});
    SparseFeatures dense;  // features 15 to 29, all coupled
    for (size_t f = 15; f < 30; f += 1 + rng() % 3) dense.emplace_back(f, value(rng));
    observe(dense);
    observe({{30 + rng() % 5, value(rng)}, {35 + rng() % 4, value(rng)}});  // 30 to 38; 39 never seen
  }
  const std::vector<double> weights = regression.solve();
  const std::vector<double> expected = dense_solution(observations, penalties);
  ASSERT_EQ(weights.size(), n);
  for (size_t f = 0; f < n; ++f)
    EXPECT_NEAR(weights[f], expected[f], 1e-9 * (1.0 + std::abs(expected[f]))) << f;
  EXPECT_EQ(weights[n - 1], 0.0) << "a feature no observation has keeps its weight at zero";
}

}  // namespace
}  // namespace gemmforge::model
