// Fitting and querying the performance model.
#include "model/performance_model.hpp"

#include <algorithm>
#include <cmath>

#include "core/dtype.hpp"

namespace gemmforge::model {
namespace {

// Features each template has beyond its parameter levels, in this order.
enum ProblemFeature : size_t {
  kTail,       // log of the waves' slot utilization
  kHiding,     // log of the latency-hiding share
  kLoads,      // log of a full wave's time over its compute time
  kSplit,      // log of 1 + split-K hand-over over main-loop time
  kDram,       // log of the device-memory floor over the main loop, where it binds
  kDramBound,  // 1 where it binds: streaming kernels reach only part of the device bandwidth
  kShortK,     // main-loop iterations of a block, inverted: pipeline fill and epilogue weigh on short K
  kStarts,     // log of 1 + the rounds of blocks' starts over the main loop (persistent blocks start once)
  kSumsAfterReads,  // log of how much longer the estimate is if split sums wait for the device-memory reads
  kStreamFanIn,     // log of the segments a stream-K tile's last segment gathers
  kLayoutNt,        // the layout, nn being the reference
  kLayoutTn,
  kLayoutTt,
  kUnalignedA,  // rows of A, B, C not 16-byte aligned
  kUnalignedB,
  kUnalignedC,
  kProblemFeatureCount
};

// Ridge penalties in units of a problem's total weight (each training problem weighs 1 in all).
constexpr double kInterceptPenalty = 0.05;
constexpr double kLevelPenalty = 0.5;
constexpr double kProblemFeaturePenalty = 0.3;
// Trials much slower than their problem's best say little about which config wins; they count less.
constexpr double kSlowTrial = 1.5;
constexpr double kSlowTrialWeight = 0.3;
// A measurement's error against the analytic estimate is clipped to this many e-folds.
constexpr double kMaxLogRatio = 3.0;
// Error of a prediction without a fit of its template (the analytic model alone), and of a measurement
// scaled from another GPU model of the architecture.
constexpr double kUnfittedLogError = 0.4;
constexpr double kScaledLogError = 0.03;
// The fit's error on its own trials understates its error on new problems by about this factor (leaving
// each training problem out in turn measures both).
constexpr double kOutOfSampleFactor = 1.5;

bool unaligned(int align_elements, const KernelProblem& problem) {
  return align_elements * element_bytes(problem.dtype) < 16;
}

double log_at_least(double value, double floor) {
  return std::log(std::max(value, floor));
}

}  // namespace

const char* to_string(Basis basis) noexcept {
  switch (basis) {
    case Basis::kMeasured:
      return "measured";
    case Basis::kMeasuredElsewhere:
      return "measured on another GPU model";
    case Basis::kFitted:
      return "fitted";
  }
  return "unknown";
}

PerformanceModel::PerformanceModel(const TemplateLibrary& library, const DeviceInfo& device,
                                   const TrainingData& data)
    : device_(device) {
  size_t next = 0;
  for (const KernelTemplate* t : library.all()) {
    // A block for each family of the operand types the template serves (with C of their type or FP32).
    for (Dtype dtype : {Dtype::kF32, Dtype::kTf32, Dtype::kF16, Dtype::kBf16}) {
      if (!t->manifest.serves(dtype, dtype) && !t->manifest.serves(dtype, Dtype::kF32)) continue;
      if (blocks_.count(block_key(*t, dtype)) != 0) continue;
      Block block;
      block.first = next++;
      penalties_.push_back(kInterceptPenalty);
      for (const Parameter& p : t->manifest.parameters()) {
        block.level_offset.push_back(next);
        next += p.values.size();
        penalties_.insert(penalties_.end(), p.values.size(), kLevelPenalty);
      }
      for (std::vector<size_t>* offsets : {&block.short_k_offset, &block.unaligned_c_offset}) {
        for (const Parameter& p : t->manifest.parameters()) {
          offsets->push_back(next);
          next += p.values.size();
          penalties_.insert(penalties_.end(), p.values.size(), kLevelPenalty);
        }
      }
      block.problem_features = next;
      next += kProblemFeatureCount;
      penalties_.insert(penalties_.end(), kProblemFeatureCount, kProblemFeaturePenalty);
      blocks_.emplace(block_key(*t, dtype), std::move(block));
    }
  }
  weights_.assign(next, 0.0);
  fit(data);
}

PerformanceModel::BlockKey PerformanceModel::block_key(const KernelTemplate& kernel_template, Dtype dtype) {
  const TypeFamily family = element_bytes(dtype) == 2 ? TypeFamily::kSixteenBit
                            : dtype == Dtype::kTf32   ? TypeFamily::kTf32
                                                      : TypeFamily::kFp32;
  return {&kernel_template, family};
}

const PerformanceModel::Block* PerformanceModel::find_block(const KernelTemplate& kernel_template,
                                                            Dtype dtype) const {
  const auto found = blocks_.find(block_key(kernel_template, dtype));
  return found == blocks_.end() ? nullptr : &found->second;
}

std::string PerformanceModel::measured_key(const KernelTemplate& kernel_template, const Config& normalized,
                                           const KernelProblem& problem) {
  return problem.to_string() + '|' + kernel_template.manifest.name() + '|' + normalized.key();
}

SparseFeatures PerformanceModel::features(const KernelTemplate& kernel_template, const Config& normalized,
                                          const KernelProblem& problem, const Footprint& f,
                                          const Estimate& e) const {
  SparseFeatures x;
  const Block* found = find_block(kernel_template, problem.dtype);
  if (found == nullptr) return x;
  const Block& block = *found;
  x.emplace_back(block.first, 1.0);
  const int64_t k_extent = f.stream_blocks > 0 ? std::min(f.k_per_split, f.stream_k) : f.k_per_split;
  const double short_k = static_cast<double>(std::max<int64_t>(f.k_granule, 1)) /
                         static_cast<double>(std::max<int64_t>(k_extent, 1));
  const bool unaligned_c = unaligned(problem.align_c, problem);
  const auto& parameters = kernel_template.manifest.parameters();
  for (size_t p = 0; p < parameters.size() && p < normalized.values().size(); ++p) {
    const auto& domain = parameters[p].values;
    const auto level = std::find(domain.begin(), domain.end(), normalized.values()[p].second);
    if (level == domain.end()) continue;
    const size_t index = static_cast<size_t>(level - domain.begin());
    x.emplace_back(block.level_offset[p] + index, 1.0);
    x.emplace_back(block.short_k_offset[p] + index, short_k);
    if (unaligned_c) x.emplace_back(block.unaligned_c_offset[p] + index, 1.0);
  }
  const size_t base = block.problem_features;
  const double loop_ms = e.main_loop_ms + e.split_k_ms;
  x.emplace_back(base + kTail, log_at_least(e.waves.utilization, 1e-6));
  x.emplace_back(base + kHiding, log_at_least(e.latency_hiding, 1e-6));
  x.emplace_back(base + kLoads, log_at_least(e.memory_bound, 1.0));
  x.emplace_back(base + kSplit, std::log1p(e.main_loop_ms > 0 ? e.split_k_ms / e.main_loop_ms : 0));
  x.emplace_back(base + kDram, loop_ms > 0 ? log_at_least(e.dram_ms / loop_ms, 1.0) : 0);
  if (e.dram_ms > loop_ms) x.emplace_back(base + kDramBound, 1.0);
  x.emplace_back(base + kShortK, short_k);
  x.emplace_back(base + kStarts, std::log1p(loop_ms > 0 ? e.block_start_ms / loop_ms : 0));
  const double overlapped = std::max(loop_ms, e.dram_ms);
  if (overlapped > 0) {
    x.emplace_back(base + kSumsAfterReads,
                   std::log((std::max(e.main_loop_ms, e.dram_ms) + e.split_k_ms) / overlapped));
  }
  if (e.segments_per_tile > 1) x.emplace_back(base + kStreamFanIn, std::log(e.segments_per_tile));
  if (!problem.a_trans && problem.b_trans) x.emplace_back(base + kLayoutNt, 1.0);
  if (problem.a_trans && !problem.b_trans) x.emplace_back(base + kLayoutTn, 1.0);
  if (problem.a_trans && problem.b_trans) x.emplace_back(base + kLayoutTt, 1.0);
  if (unaligned(problem.align_a, problem)) x.emplace_back(base + kUnalignedA, 1.0);
  if (unaligned(problem.align_b, problem)) x.emplace_back(base + kUnalignedB, 1.0);
  if (unaligned_c) x.emplace_back(base + kUnalignedC, 1.0);
  return x;
}

void PerformanceModel::fit(const TrainingData& data) {
  devices_ = data.devices;
  // Measurements by (device, problem), so each training problem weighs the same in the fit.
  std::map<std::pair<size_t, std::string>, std::vector<const KernelMeasurement*>> groups;
  for (const KernelMeasurement& m : data.kernels) {
    if (m.device >= devices_.size() || devices_[m.device].cc() != device_.cc()) continue;
    if (find_block(*m.kernel_template, m.problem.dtype) == nullptr || !(m.time_ms > 0)) continue;
    groups[{m.device, m.problem.to_string()}].push_back(&m);
    measured_[measured_key(*m.kernel_template, m.config, m.problem)].push_back(Measured{m.device, m.time_ms});
  }
  // One pass to fit, one to measure the fit's error per block.
  struct Sample {
    BlockKey block;
    SparseFeatures features;
    double target;
    double weight;
    double estimate_ms;  // the analytic estimate the target corrects
  };
  std::vector<Sample> samples;
  for (const auto& [key, group] : groups) {
    const DeviceInfo& device = devices_[key.first];
    const KernelProblem& problem = group.front()->problem;
    double best = group.front()->time_ms;
    for (const KernelMeasurement* m : group) best = std::min(best, m->time_ms);
    double total = 0;
    for (const KernelMeasurement* m : group)
      total += m->time_ms <= kSlowTrial * best ? 1.0 : kSlowTrialWeight;
    std::map<const KernelTemplate*, std::unique_ptr<FootprintReader>> readers;
    for (const KernelMeasurement* m : group) {
      auto& reader = readers[m->kernel_template];
      if (!reader) reader = std::make_unique<FootprintReader>(m->kernel_template->manifest, device, problem);
      const Footprint f = reader->read(m->config);
      const Estimate e = estimate(device, problem, f, f.est_regs);
      if (!std::isfinite(e.time_ms)) continue;
      const double target = std::clamp(std::log(m->time_ms / e.time_ms), -kMaxLogRatio, kMaxLogRatio);
      const double weight = (m->time_ms <= kSlowTrial * best ? 1.0 : kSlowTrialWeight) / total;
      samples.push_back(Sample{block_key(*m->kernel_template, problem.dtype),
                               features(*m->kernel_template, m->config, problem, f, e), target, weight,
                               e.time_ms});
    }
  }
  RidgeRegression regression(penalties_);
  for (const Sample& sample : samples) regression.add(sample.features, sample.target, sample.weight);
  weights_ = regression.solve();
  std::map<BlockKey, std::pair<double, double>> squared;  // weighted sum and weight
  for (const Sample& sample : samples) {
    const double error = sample.target - dot(weights_, sample.features);
    squared[sample.block].first += sample.weight * error * error;
    squared[sample.block].second += sample.weight;
    double& smallest = blocks_.at(sample.block).smallest_estimate_ms;
    smallest = std::min(smallest, sample.estimate_ms);
  }
  for (auto& [key, block] : blocks_) {
    const auto it = squared.find(key);
    block.log_error = it == squared.end() || it->second.second <= 0
                          ? kUnfittedLogError
                          : kOutOfSampleFactor * std::sqrt(it->second.first / it->second.second);
  }
  measurements_ = samples.size();
  problems_ = groups.size();
}

PerformanceModel::ProblemView::ProblemView(const PerformanceModel& model, const KernelProblem& problem)
    : model_(model), problem_(problem) {}

const FootprintReader& PerformanceModel::ProblemView::reader(const KernelTemplate& kernel_template) const {
  auto& reader = readers_[&kernel_template];
  if (!reader) reader = std::make_unique<FootprintReader>(kernel_template.manifest, model_.device_, problem_);
  return *reader;
}

Prediction PerformanceModel::ProblemView::predict(const KernelTemplate& kernel_template,
                                                  const Config& normalized) const {
  const Footprint f = reader(kernel_template).read(normalized);
  const Estimate e = estimate(model_.device_, problem_, f, f.est_regs);
  Prediction prediction;
  if (!std::isfinite(e.time_ms)) return prediction;

  // A measurement of this very config and problem: on this GPU model as it is, on another one scaled by
  // how the analytic model sees the two devices.
  const auto measured = model_.measured_.find(measured_key(kernel_template, normalized, problem_));
  if (measured != model_.measured_.end()) {
    const Measured* own = nullptr;
    const Measured* other = nullptr;
    for (const Measured& m : measured->second) {
      const bool same = same_model(model_.devices_[m.device], model_.device_);
      const Measured*& slot = same ? own : other;
      if (slot == nullptr || m.time_ms < slot->time_ms) slot = &m;
    }
    if (own != nullptr) {
      prediction.time_ms = own->time_ms;
      prediction.basis = Basis::kMeasured;
      prediction.measured_on = model_.devices_[own->device].name;
      return prediction;
    }
    const DeviceInfo& there = model_.devices_[other->device];
    const Estimate e_there =
        estimate(there, problem_, FootprintReader(kernel_template.manifest, there, problem_).read(normalized),
                 f.est_regs);
    if (std::isfinite(e_there.time_ms)) {
      prediction.time_ms = other->time_ms * e.time_ms / e_there.time_ms;
      prediction.basis = Basis::kMeasuredElsewhere;
      prediction.log_error = kScaledLogError;
      prediction.measured_on = there.name;
      return prediction;
    }
  }
  prediction.time_ms =
      e.time_ms *
      std::exp(dot(model_.weights_, model_.features(kernel_template, normalized, problem_, f, e)));
  prediction.basis = Basis::kFitted;
  const Block* block = model_.find_block(kernel_template, problem_.dtype);
  if (block == nullptr) {
    prediction.log_error = kUnfittedLogError;
  } else {
    // Below the least work the template was fitted on, its fixed costs (launch, prologue, pipeline fill)
    // weigh more than any training problem showed: the error grows with the distance.
    prediction.log_error =
        block->log_error + std::log(std::max(block->smallest_estimate_ms / e.time_ms, 1.0));
  }
  return prediction;
}

}  // namespace gemmforge::model
