// The three places a kernel comes from, cheapest first, and the background compilations.
#include "runtime/kernel_cache.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cuda/device.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"
#include "runtime/shipped_results.hpp"

namespace gemmforge::runtime {
namespace {

// NVRTC takes a core for about a second per kernel; an application's first calls need a few kernels at
// once, but a compile storm must not take every core from it.
unsigned background_threads() {
  return std::clamp(std::thread::hardware_concurrency() / 4, 1u, 4u);
}

}  // namespace

KernelCache::KernelCache(const TemplateLibrary& library, std::vector<SharedDatabase*> sources,
                         SharedDatabase* store, int ordinal, bool shipped_cubins)
    : library_(library),
      sources_(std::move(sources)),
      store_(store),
      ordinal_(ordinal),
      shipped_cubins_(shipped_cubins) {}

KernelCache::~KernelCache() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::find(const rtc::KernelSpec& spec) {
  const std::string key = spec.cubin_key(library_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  }
  std::shared_ptr<const rtc::GemmKernel> kernel = load_stored(spec, key);
  if (!kernel) kernel = load_shipped(spec, key);
  if (!kernel) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.emplace(key, kernel).first->second;  // another thread's copy wins
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::get(const rtc::KernelSpec& spec) {
  if (std::shared_ptr<const rtc::GemmKernel> kernel = find(spec)) return kernel;
  const std::string key = spec.cubin_key(library_);
  std::shared_ptr<const rtc::GemmKernel> kernel = compile_and_store(spec, key);
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.emplace(key, kernel).first->second;
}

void KernelCache::compile_in_background(const rtc::KernelSpec& spec, Done done) {
  const std::string key = spec.cubin_key(library_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (stopping_ || kernels_.count(key) != 0 || !in_flight_.insert(key).second) return;
  queue_.push_back(Job{spec, key, std::move(done)});
  if (workers_.size() < background_threads()) workers_.emplace_back([this] { work(); });
  work_ready_.notify_one();
}

void KernelCache::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::shared_ptr<const rtc::GemmKernel> kernel;
    try {
      cuda::DeviceGuard guard(ordinal_);  // the module loads into this device's context
      kernel = load_stored(job.spec, job.key);
      if (!kernel) kernel = load_shipped(job.spec, job.key);
      if (!kernel) kernel = compile_and_store(job.spec, job.key);
    } catch (const std::exception& e) {
      spdlog::warn("compiling {} {} in the background failed; cuBLAS keeps serving its problems: {}",
                   job.spec.kernel_template->manifest.name(), job.spec.config.key(), e.what());
    }
    lock.lock();
    if (kernel) kernels_.emplace(job.key, kernel);
    lock.unlock();
    if (job.done) job.done(job.key, kernel);
    lock.lock();
    in_flight_.erase(job.key);
    if (in_flight_.empty()) idle_.notify_all();
  }
}

void KernelCache::wait_idle() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return in_flight_.empty(); });
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::load_stored(const rtc::KernelSpec& spec,
                                                                const std::string& key) {
  std::optional<db::CubinRecord> stored;
  for (SharedDatabase* source : sources_) {
    try {
      stored = source->with([&](db::Database& database) { return database.get_cubin(key); });
    } catch (const DatabaseError& e) {
      spdlog::warn("cannot read the cubin of {} {}: {}", spec.kernel_template->manifest.name(),
                   spec.config.key(), e.what());
    }
    if (stored) break;
  }
  if (!stored) return nullptr;
  try {
    auto kernel = std::make_shared<const rtc::GemmKernel>(*spec.kernel_template, stored->cubin);
    ++from_database_;
    return kernel;
  } catch (const CudaError& e) {
    // A damaged row must not break serving: compile again and replace it.
    spdlog::warn("the stored cubin {} does not load ({}); compiling it again", key, e.what());
    return nullptr;
  }
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::load_shipped(const rtc::KernelSpec& spec,
                                                                 const std::string& key) {
  if (!shipped_cubins_) return nullptr;
  try {
    const std::vector<char> cubin = shipped_results().cubin(key);
    if (cubin.empty()) return nullptr;
    auto kernel = std::make_shared<const rtc::GemmKernel>(*spec.kernel_template, cubin);
    ++from_shipped_;
    return kernel;
  } catch (const Error& e) {
    spdlog::warn("the shipped cubin {} does not load ({}); compiling it", key, e.what());
    return nullptr;
  }
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::compile_and_store(const rtc::KernelSpec& spec,
                                                                      const std::string& key) {
  const rtc::CompileResult compiled = rtc::compile(spec.request(library_));
  ++compiles_;
  auto kernel = std::make_shared<const rtc::GemmKernel>(*spec.kernel_template, compiled.cubin_or_throw());
  if (store_ == nullptr) return kernel;
  db::CubinRecord record;
  record.key = key;
  record.template_name = spec.kernel_template->manifest.name();
  record.template_hash = spec.kernel_template->hash;
  record.arch = spec.arch;
  record.nvrtc_version = rtc::nvrtc_version();
  record.options = compiled.options;
  record.config_key = spec.config.key();
  record.cubin = compiled.cubin;
  record.log = compiled.log;
  if (compiled.usage.registers >= 0) record.registers = compiled.usage.registers;
  record.spill_bytes = compiled.usage.spill_store_bytes + compiled.usage.spill_load_bytes;
  record.static_smem_bytes = compiled.usage.static_smem_bytes;
  record.compile_ms = compiled.compile_ms;
  try {
    store_->with([&](db::Database& database) { database.put_cubin(record); });
  } catch (const DatabaseError& e) {
    // Serving goes on; only the next process pays for the compile again.
    spdlog::warn("cannot store the cubin {}: {}", key, e.what());
  }
  return kernel;
}

void KernelCache::clear() {
  wait_idle();
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

size_t KernelCache::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_flight_.size();
}

}  // namespace gemmforge::runtime
