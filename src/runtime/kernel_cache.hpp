// Loaded GEMM kernels of one device, by cubin key: in memory, else a cubin stored in a tuning database or
// shipped with gemmforge, else compiled with NVRTC (and the cubin stored, so the next process needs no
// compiler) - at once, or in the background while the caller serves the problem some other way.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "rtc/gemm_kernel.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/operand_passes.hpp"
#include "runtime/shared_database.hpp"

namespace gemmforge::runtime {

class KernelCache {
 public:
  /// Cubins are looked up in `sources` in order and stored in `store` (may be null: kernels are then
  /// compiled by every process). Kernels load on device `ordinal`. With `shipped_cubins`, the cubins
  /// shipped with gemmforge are looked up after the databases'.
  KernelCache(const TemplateLibrary& library, std::vector<SharedDatabase*> sources, SharedDatabase* store,
              int ordinal, bool shipped_cubins);
  /// Waits for the compilations under way; queued ones are dropped.
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The kernel of `spec` loaded on the device, compiling it now if need be. Throws NvrtcError when it
  /// cannot be compiled.
  std::shared_ptr<const rtc::GemmKernel> get(const rtc::KernelSpec& spec);

  /// The kernel if it is in memory or a stored or shipped cubin loads; null otherwise. Never compiles.
  std::shared_ptr<const rtc::GemmKernel> find(const rtc::KernelSpec& spec);

  /// Compiles `spec` on a background thread unless it is loaded, queued or compiling, then calls
  /// `done(key, kernel)` on that thread (kernel null when the compilation failed, which is logged).
  using Done = std::function<void(const std::string& key, std::shared_ptr<const rtc::GemmKernel> kernel)>;
  void compile_in_background(const rtc::KernelSpec& spec, Done done);

  /// Blocks until no compilation is queued or under way.
  void wait_idle();

  /// Forgets every kernel; each unloads once no plan holds it any more. Waits for background work.
  void clear();

  std::string key(const rtc::KernelSpec& spec) const { return spec.cubin_key(library_); }
  size_t size() const;
  size_t pending() const;
  uint64_t compiles() const { return compiles_.load(); }
  uint64_t loaded_from_database() const { return from_database_.load(); }
  uint64_t loaded_from_shipped() const { return from_shipped_.load(); }

 private:
  struct Job {
    rtc::KernelSpec spec;
    std::string key;
    Done done;
  };

  /// The kernel of `spec` from its stored or else its shipped cubin, or null when neither is there or
  /// loads, or when its template runs operand passes that are not found (nor, where
  /// `may_compile_passes`, compiled).
  std::shared_ptr<const rtc::GemmKernel> load_ready(const rtc::KernelSpec& spec, const std::string& key,
                                                    bool may_compile_passes);
  /// The stored cubin of `key` (null when there is none or it cannot be read), and the shipped one.
  std::optional<std::vector<char>> stored_cubin(const std::string& key, const std::string& what);
  std::optional<std::vector<char>> shipped_cubin(const std::string& key);
  /// Stores a compiled cubin under `key`, for the next process; failures are logged.
  void store(db::CubinRecord record, const rtc::CompileResult& compiled);
  std::shared_ptr<const rtc::GemmKernel> compile_and_store(const rtc::KernelSpec& spec,
                                                           const std::string& key);
  /// The operand passes kernels of `spec` run (null for a template that runs none): in memory, else a
  /// stored or shipped cubin, else, where `may_compile`, compiled now and stored. Null when not found.
  std::shared_ptr<const rtc::OperandPasses> passes(const rtc::KernelSpec& spec, bool may_compile);
  void work();

  const TemplateLibrary& library_;
  std::vector<SharedDatabase*> sources_;
  SharedDatabase* store_;
  int ordinal_;
  bool shipped_cubins_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const rtc::GemmKernel>> kernels_;
  std::mutex passes_mutex_;  // held while the passes are found or compiled: they are compiled once
  std::map<std::string, std::shared_ptr<const rtc::OperandPasses>> passes_;  // by the kernels' arch
  std::atomic<uint64_t> compiles_{0};
  std::atomic<uint64_t> from_database_{0};
  std::atomic<uint64_t> from_shipped_{0};

  // Background compilations: a queue, the keys queued or under way, and worker threads started on demand.
  std::condition_variable work_ready_;
  std::condition_variable idle_;
  std::deque<Job> queue_;
  std::set<std::string> in_flight_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

}  // namespace gemmforge::runtime
