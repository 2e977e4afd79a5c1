// Timing device work the same way for every contender: CUDA events around each launch, warm-up first,
// L2 flushed before every repetition, repetitions until a time budget or a minimum count (no more than
// needed to reach them; a smaller count where launches are long; fewer where the median is already known
// to a given precision), median kept. A contender clearly slower than a known time stops after a few.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <vector>

#include "cuda/device_buffer.hpp"

namespace gemmforge::tuner {

struct TimingOptions {
  int warmup = 3;         ///< launches before timing, fewer when they add up to warmup_ms; 0: none
  double warmup_ms = 10;  ///< warm-up stops once its launches took this long (after one at least)
  int min_repetitions = 10;
  /// Where min_repetitions launches would take more than twice a budget (budget_ms > 0), the minimum count
  /// is what twice the budget holds, but not below this: the median of a few long launches is steady.
  int min_repetitions_long = 5;
  int max_repetitions = 200;
  double budget_ms =
      150;  ///< stop once this much launch time has been measured (and min_repetitions reached)
  bool flush_l2 = true;
  /// A contender whose first `beaten_repetitions` all ran slower than this is clearly beaten: its
  /// timing stops there, with their median. 0: every contender gets the full count.
  double beaten_above_ms = 0;
  int beaten_repetitions = 3;
  /// Past the minimum count, timing stops before the budget is spent once the median's relative standard
  /// error (relative_median_error) is at most this. 0: the budget is always spent.
  double precision = 0;
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  int repetitions = 0;
};

/// Repetitions enqueued before the host reads their times.
inline constexpr int kTimingBatch = 8;

/// Launches at least this long have a time that one launch already tells, cold or not: a contender's
/// verification launches may serve as its first look (beaten_at_verification).
inline constexpr double kLongLaunchMs = 1.0;

/// What the warm-up did: its launches and their total time.
struct WarmUp {
  int launches = 0;
  double ms = 0;
};

/// How many more repetitions a contender needs, given the times of those so far (`samples`, ms) and the
/// warm-up: the first look where a time to beat is given (none more once it is beaten), else the minimum
/// count and what the budget still holds at the pace so far, never past max_repetitions. 0: done.
int repetitions_needed(const std::vector<double>& samples, const WarmUp& warm_up,
                       const TimingOptions& options);

/// The standard error of the median of `samples` relative to it, estimated from their median absolute
/// deviation; infinite for fewer than two.
double relative_median_error(std::vector<double> samples);

/// Whether the launches a contender has just run to verify it (their times in ms) already show it clearly
/// beaten, so it needs no timing: only where the time to beat is long (kLongLaunchMs) and every one of
/// them ran slower than it.
bool beaten_at_verification(const std::vector<double>& launches_ms, const TimingOptions& options);

/// Median, extremes and count of `samples` (ms); throws InvalidArgumentError where there are none.
Timing timing_of(std::vector<double> samples);

/// Overwrites a buffer twice the size of L2 so the next launch finds none of its operands cached.
class L2Flusher {
 public:
  L2Flusher();
  void flush(cudaStream_t stream);

 private:
  cuda::DeviceBuffer buffer_;
};

/// Times `launch` (which enqueues the work on `stream`); throws CudaError when a launch fails. `done`: the
/// same work the caller has just run, which counts as warm-up (for the pace, too).
Timing time_launches(const std::function<void(cudaStream_t)>& launch, cudaStream_t stream,
                     const TimingOptions& options, L2Flusher& flusher, const WarmUp& done = {});

}  // namespace gemmforge::tuner
