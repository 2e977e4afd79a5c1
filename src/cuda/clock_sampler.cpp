// NVML's few entry points that the sampler needs, declared here (their C ABI is stable; the toolkit ships
// no NVML header) and resolved from the driver's library at run time.
#include "cuda/clock_sampler.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace gemmforge::cuda {

void ClockLog::add(const ClockSample& sample) {
  if (samples_.size() >= capacity_) samples_.erase(samples_.begin(), samples_.begin() + capacity_ / 2 + 1);
  samples_.push_back(sample);
}

std::optional<MeanClock> ClockLog::mean(SampleClock::time_point start, SampleClock::time_point end) const {
  // The samples are in the order taken: the span's first is found by bisection.
  const auto first =
      std::lower_bound(samples_.begin(), samples_.end(), start,
                       [](const ClockSample& s, SampleClock::time_point t) { return s.at < t; });
  double sum = 0;
  size_t count = 0;
  for (auto s = first; s != samples_.end() && s->at <= end; ++s) {
    sum += s->sm_mhz;
    ++count;
  }
  if (count == 0) return std::nullopt;
  return MeanClock{sum / static_cast<double>(count), count};
}

struct ClockSampler::Nvml {
  using Device = void*;
  using Init = int (*)();
  using Shutdown = int (*)();
  using HandleByUuid = int (*)(const char*, Device*);
  using ClockInfo = int (*)(Device, int, unsigned*);
  static constexpr int kSuccess = 0;
  static constexpr int kClockSm = 1;  // NVML_CLOCK_SM

  void* library = nullptr;
  Shutdown shutdown = nullptr;
  ClockInfo clock_info = nullptr;
  Device device = nullptr;

  ~Nvml() {
    if (shutdown != nullptr) shutdown();
    if (library != nullptr) dlclose(library);
  }
};

ClockSampler::ClockSampler(const std::string& uuid, std::chrono::microseconds period) {
  auto nvml = std::make_unique<Nvml>();
  nvml->library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml->library == nullptr) {
    reason_ = "libnvidia-ml.so.1 (NVML, part of the NVIDIA driver) could not be loaded";
    return;
  }
  const auto init = reinterpret_cast<Nvml::Init>(dlsym(nvml->library, "nvmlInit_v2"));
  const auto shutdown = reinterpret_cast<Nvml::Shutdown>(dlsym(nvml->library, "nvmlShutdown"));
  const auto by_uuid =
      reinterpret_cast<Nvml::HandleByUuid>(dlsym(nvml->library, "nvmlDeviceGetHandleByUUID"));
  nvml->clock_info = reinterpret_cast<Nvml::ClockInfo>(dlsym(nvml->library, "nvmlDeviceGetClockInfo"));
  if (init == nullptr || shutdown == nullptr || by_uuid == nullptr || nvml->clock_info == nullptr) {
    reason_ = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByUUID or nvmlDeviceGetClockInfo";
    return;
  }
  if (const int status = init(); status != Nvml::kSuccess) {
    reason_ = fmt::format("NVML could not be initialized (nvmlInit_v2 returned {})", status);
    return;
  }
  nvml->shutdown = shutdown;
  if (const int status = by_uuid(uuid.c_str(), &nvml->device); status != Nvml::kSuccess) {
    reason_ =
        fmt::format("NVML does not know the GPU {} (nvmlDeviceGetHandleByUUID returned {})", uuid, status);
    return;
  }
  unsigned mhz = 0;
  if (const int status = nvml->clock_info(nvml->device, Nvml::kClockSm, &mhz); status != Nvml::kSuccess) {
    reason_ =
        fmt::format("NVML cannot read the SM clock of {} (nvmlDeviceGetClockInfo returned {})", uuid, status);
    return;
  }
  nvml_ = std::move(nvml);
  thread_ = std::thread([this, period] { run(period); });
}

ClockSampler::~ClockSampler() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void ClockSampler::run(std::chrono::microseconds period) {
  while (!stop_) {
    unsigned mhz = 0;
    if (nvml_->clock_info(nvml_->device, Nvml::kClockSm, &mhz) == Nvml::kSuccess) {
      const std::lock_guard<std::mutex> lock(mutex_);
      log_.add({SampleClock::now(), mhz});
    }
    std::this_thread::sleep_for(period);
  }
}

std::optional<MeanClock> ClockSampler::between(SampleClock::time_point start,
                                               SampleClock::time_point end) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return log_.mean(start, end);
}

}  // namespace gemmforge::cuda
