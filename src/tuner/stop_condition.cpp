// The stop conditions of a search: an evaluation budget, a time budget, a plateau, and any of several.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gemmforge/error.hpp"
#include "tuner/search.hpp"

namespace gemmforge::tuner {

size_t StopCondition::evaluations_left(const History&) const {
  return std::numeric_limits<size_t>::max();
}

namespace {

class AfterEvaluations : public StopCondition {
 public:
  explicit AfterEvaluations(size_t count) : count_(count) {}
  bool done(const History& history, double) const override { return history.size() >= count_; }
  std::string describe() const override { return fmt::format("after {} evaluations", count_); }
  size_t evaluations_left(const History& history) const override {
    return count_ > history.size() ? count_ - history.size() : 0;
  }

 private:
  size_t count_;
};

class AfterSeconds : public StopCondition {
 public:
  explicit AfterSeconds(double seconds) : seconds_(seconds) {}
  bool done(const History&, double elapsed_s) const override { return elapsed_s >= seconds_; }
  std::string describe() const override { return fmt::format("after {:g} s", seconds_); }

 private:
  double seconds_;
};

class WithoutImprovement : public StopCondition {
 public:
  WithoutImprovement(size_t window, double tolerance) : window_(window), tolerance_(tolerance) {}
  bool done(const History& history, double) const override {
    return history.since_improvement(tolerance_) >= window_;
  }
  std::string describe() const override {
    return fmt::format("after {} evaluations without a gain over {:g}%", window_, 100 * tolerance_);
  }

 private:
  size_t window_;
  double tolerance_;
};

class WhenAny : public StopCondition {
 public:
  explicit WhenAny(std::vector<std::unique_ptr<StopCondition>> conditions)
      : conditions_(std::move(conditions)) {}
  bool done(const History& history, double elapsed_s) const override {
    return std::any_of(conditions_.begin(), conditions_.end(),
                       [&](const auto& c) { return c->done(history, elapsed_s); });
  }
  std::string describe() const override {
    if (conditions_.empty()) return "when the strategy runs out of candidates";
    std::string text;
    for (const auto& c : conditions_) text += (text.empty() ? "" : " or ") + c->describe();
    return text;
  }
  size_t evaluations_left(const History& history) const override {
    size_t left = std::numeric_limits<size_t>::max();
    for (const auto& c : conditions_) left = std::min(left, c->evaluations_left(history));
    return left;
  }

 private:
  std::vector<std::unique_ptr<StopCondition>> conditions_;
};

}  // namespace

std::unique_ptr<StopCondition> stop_after_evaluations(size_t count) {
  return std::make_unique<AfterEvaluations>(count);
}

std::unique_ptr<StopCondition> stop_after_seconds(double seconds) {
  if (!(seconds >= 0) || std::isinf(seconds)) {
    throw InvalidArgumentError(
        fmt::format("a time budget must be a finite number of seconds >= 0, not {}", seconds));
  }
  return std::make_unique<AfterSeconds>(seconds);
}

std::unique_ptr<StopCondition> stop_without_improvement(size_t window, double tolerance) {
  if (window == 0) throw InvalidArgumentError("a window without improvement must hold at least 1 evaluation");
  if (!(tolerance >= 0 && tolerance < 1)) {
    throw InvalidArgumentError(
        fmt::format("an improvement tolerance is a fraction in [0, 1), not {}", tolerance));
  }
  return std::make_unique<WithoutImprovement>(window, tolerance);
}

std::unique_ptr<StopCondition> stop_when_any(std::vector<std::unique_ptr<StopCondition>> conditions) {
  for (const auto& c : conditions) {
    if (c == nullptr) throw InvalidArgumentError("stop_when_any was given a null condition");
  }
  return std::make_unique<WhenAny>(std::move(conditions));
}

}  // namespace gemmforge::tuner
