// The three places a kernel comes from, cheapest first.
#include "runtime/kernel_cache.hpp"

#include <spdlog/spdlog.h>

#include "gemmforge/error.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::runtime {

KernelCache::KernelCache(const TemplateLibrary& library, std::vector<SharedDatabase*> sources,
                         SharedDatabase* store)
    : library_(library), sources_(std::move(sources)), store_(store) {}

std::shared_ptr<const rtc::GemmKernel> KernelCache::get(const rtc::KernelSpec& spec) {
  const std::string key = spec.cubin_key(library_);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = kernels_.find(key); it != kernels_.end()) return it->second;
  std::shared_ptr<const rtc::GemmKernel> kernel = load_stored(spec, key);
  if (!kernel) kernel = compile_and_store(spec, key);
  kernels_.emplace(key, kernel);
  return kernel;
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
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.clear();
}

size_t KernelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return kernels_.size();
}

}  // namespace gemmforge::runtime
