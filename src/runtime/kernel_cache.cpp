// The three places a kernel comes from, cheapest first, and the background compilations.
#include "runtime/kernel_cache.hpp"

#include <fmt/format.h>
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

// What `load()` makes of a stored or shipped cubin (`origin`), or null with a warning where the driver
// refuses it: a damaged row or another driver's cubin must not break serving, the caller compiles it.
template <typename Load>
auto loaded_or_null(const char* origin, const std::string& key, Load&& load) -> decltype(load()) {
  try {
    return load();
  } catch (const CudaError& e) {
    spdlog::warn("the {} cubin {} does not load ({}); compiling it", origin, key, e.what());
    return nullptr;
  }
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
  std::shared_ptr<const rtc::GemmKernel> kernel = load_ready(spec, key, /*may_compile_passes=*/false);
  if (!kernel) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.emplace(key, kernel).first->second;  // another thread's copy wins
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::get(const rtc::KernelSpec& spec) {
  if (std::shared_ptr<const rtc::GemmKernel> kernel = find(spec)) return kernel;
  const std::string key = spec.cubin_key(library_);
  // A stored kernel may lack only its operand passes: they compile, the kernel does not.
  std::shared_ptr<const rtc::GemmKernel> kernel = load_ready(spec, key, /*may_compile_passes=*/true);
  if (!kernel) kernel = compile_and_store(spec, key);
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
      kernel = load_ready(job.spec, job.key, /*may_compile_passes=*/true);
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

std::optional<std::vector<char>> KernelCache::stored_cubin(const std::string& key, const std::string& what) {
  for (SharedDatabase* source : sources_) {
    try {
      std::optional<db::CubinRecord> stored =
          source->with([&](db::Database& database) { return database.get_cubin(key); });
      if (stored) return std::move(stored->cubin);
    } catch (const DatabaseError& e) {
      spdlog::warn("cannot read the cubin of {}: {}", what, e.what());
    }
  }
  return std::nullopt;
}

std::optional<std::vector<char>> KernelCache::shipped_cubin(const std::string& key) {
  if (!shipped_cubins_) return std::nullopt;
  try {
    std::vector<char> cubin = shipped_results().cubin(key);
    if (!cubin.empty()) return cubin;
  } catch (const Error& e) {
    spdlog::warn("the shipped cubin {} cannot be read ({}); compiling it", key, e.what());
  }
  return std::nullopt;
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::load_ready(const rtc::KernelSpec& spec,
                                                               const std::string& key,
                                                               bool may_compile_passes) {
  const std::string what = fmt::format("{} {}", spec.kernel_template->manifest.name(), spec.config.key());
  std::shared_ptr<const rtc::OperandPasses> operand_passes;
  if (spec.kernel_template->manifest.prepares_operands()) {
    operand_passes = passes(spec, may_compile_passes);
    if (!operand_passes) return nullptr;
  }
  const auto load = [&](const char* origin, const std::vector<char>& cubin, std::atomic<uint64_t>& loads) {
    auto kernel = loaded_or_null(origin, key, [&] {
      return std::make_shared<const rtc::GemmKernel>(*spec.kernel_template, cubin, operand_passes);
    });
    if (kernel) ++loads;
    return kernel;
  };
  // A stored cubin that does not load is compiled again (and its row replaced), not looked up elsewhere.
  if (std::optional<std::vector<char>> cubin = stored_cubin(key, what))
    return load("stored", *cubin, from_database_);
  if (std::optional<std::vector<char>> cubin = shipped_cubin(key))
    return load("shipped", *cubin, from_shipped_);
  return nullptr;
}

void KernelCache::store(db::CubinRecord record, const rtc::CompileResult& compiled) {
  if (store_ == nullptr) return;
  record.nvrtc_version = rtc::nvrtc_version();
  record.options = compiled.options;
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
    spdlog::warn("cannot store the cubin {}: {}", record.key, e.what());
  }
}

std::shared_ptr<const rtc::GemmKernel> KernelCache::compile_and_store(const rtc::KernelSpec& spec,
                                                                      const std::string& key) {
  std::shared_ptr<const rtc::OperandPasses> operand_passes;
  if (spec.kernel_template->manifest.prepares_operands()) operand_passes = passes(spec, /*may_compile=*/true);
  const rtc::CompileResult compiled = rtc::compile(spec.request(library_));
  ++compiles_;
  auto kernel = std::make_shared<const rtc::GemmKernel>(*spec.kernel_template, compiled.cubin_or_throw(),
                                                        operand_passes);
  db::CubinRecord record;
  record.key = key;
  record.template_name = spec.kernel_template->manifest.name();
  record.template_hash = spec.kernel_template->hash;
  record.arch = spec.arch;
  record.config_key = spec.config.key();
  store(std::move(record), compiled);
  return kernel;
}

std::shared_ptr<const rtc::OperandPasses> KernelCache::passes(const rtc::KernelSpec& spec, bool may_compile) {
  std::lock_guard<std::mutex> lock(passes_mutex_);
  if (auto it = passes_.find(spec.arch); it != passes_.end()) return it->second;
  const std::string key = rtc::OperandPasses::cubin_key(library_, spec.arch);
  const auto load = [&](const char* origin, const std::vector<char>& cubin) {
    return loaded_or_null(origin, key, [&] { return std::make_shared<const rtc::OperandPasses>(cubin); });
  };
  std::shared_ptr<const rtc::OperandPasses> found;
  if (std::optional<std::vector<char>> cubin = stored_cubin(key, "the operand passes"))
    found = load("stored", *cubin);
  if (!found) {
    if (std::optional<std::vector<char>> cubin = shipped_cubin(key)) found = load("shipped", *cubin);
  }
  if (!found && may_compile) {
    const rtc::CompileRequest request = rtc::OperandPasses::request(library_, spec.arch);
    const rtc::CompileResult compiled = rtc::compile(request);  // not a GEMM kernel: compiles_ counts those
    found = std::make_shared<const rtc::OperandPasses>(compiled.cubin_or_throw());
    db::CubinRecord record;
    record.key = key;
    record.template_name = rtc::OperandPasses::kName;
    record.template_hash = library_.support_hash(kOperandPassesSource);
    record.arch = request.arch;
    store(std::move(record), compiled);
  }
  if (found) passes_.emplace(spec.arch, found);
  return found;
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
