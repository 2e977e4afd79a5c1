// Evaluators sharing one compile pool and one database connection, as the GPUs of one tuning run do:
// a kernel is compiled once however many problems and GPUs want it at the same time, and a kernel
// compiled ahead of the search is used without compiling it again. The worker simulates the GPU; NVRTC
// compiles for real.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "core/space.hpp"
#include "db/database.hpp"
#include "rtc/compile_service.hpp"
#include "support/tuner_fixtures.hpp"
#include "tuner/gpu_evaluator.hpp"

namespace gemmforge::tuner {
namespace {

class SharedCompileTest : public ::testing::Test {
 protected:
  SharedCompileTest()
      : library_(TemplateLibrary::from_directory(fixtures::write_faulty_templates(folder_))),
        database_(db::Database::open(":memory:")) {
    for (auto& worker : workers_) {
      WorkerOptions options;
      options.simulate = true;
      options.template_dir = folder_.file("faulty_templates");
      worker.emplace(options);
      device_ = worker->start().device;
    }
    device_id_ = database_.upsert_device(device_);
  }

  static KernelProblem problem(int64_t m) {
    KernelProblem p;
    p.m = m;
    p.n = 64;
    p.k = 32;
    return p;
  }

  SearchSpace space(const KernelProblem& p) const {
    std::vector<Space> spaces;
    spaces.push_back(Space::build(library_.get("faulty"), device_, p));
    return SearchSpace(std::move(spaces), device_, p);
  }

  EvaluatorOptions options() {
    EvaluatorOptions o;
    o.compile_service = service_;
    o.database_mutex = &database_mutex_;
    return o;
  }

  fixtures::TempFolder folder_;
  TemplateLibrary library_;
  db::Database database_;
  std::mutex database_mutex_;
  std::shared_ptr<rtc::CompileService> service_ = std::make_shared<rtc::CompileService>(2);
  std::optional<WorkerClient> workers_[2];
  DeviceInfo device_;
  int64_t device_id_ = 0;
};

TEST_F(SharedCompileTest, ProblemsWantingTheSameKernelsAtOnceCompileEachOnce) {
  // Problems differing only in M share every kernel: the size is not compiled in.
  const KernelProblem small = problem(64), large = problem(96);
  const SearchSpace small_space = space(small), large_space = space(large);
  ASSERT_EQ(small_space.size(), large_space.size());
  std::vector<size_t> all(small_space.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;

  GpuEvaluator a(database_, *workers_[0], library_, device_id_, device_, small, options());
  GpuEvaluator b(database_, *workers_[1], library_, device_id_, device_, large, options());
  std::vector<Observation> from_a, from_b;
  std::thread other([&] { from_b = b.evaluate(large_space, all); });
  from_a = a.evaluate(small_space, all);
  other.join();

  ASSERT_EQ(from_a.size(), all.size());
  ASSERT_EQ(from_b.size(), all.size());
  EXPECT_EQ(service_->stats().compiled, all.size()) << "a kernel was compiled twice";
  EXPECT_EQ(a.stats().compiled + a.stats().cubins_cached + b.stats().compiled + b.stats().cubins_cached,
            2 * all.size());
  size_t failed_compiles = 0;
  for (const Observation& o : from_a) failed_compiles += o.outcome == Outcome::kCompileError ? 1 : 0;
  EXPECT_GT(failed_compiles, 0u) << "MODE 3 fails to compile, for both problems";
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(from_a[i].outcome, from_b[i].outcome) << i;
  // Both evaluators recorded every trial through the one connection.
  std::lock_guard lock(database_mutex_);
  EXPECT_EQ(database_.trials(device_id_, *database_.find_problem(small)).size(), all.size());
  EXPECT_EQ(database_.trials(device_id_, *database_.find_problem(large)).size(), all.size());
}

TEST_F(SharedCompileTest, KernelsCompiledAheadAreUsedWithoutCompilingAgain) {
  const KernelProblem p = problem(64);
  const SearchSpace s = space(p);
  std::vector<size_t> all(s.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  GpuEvaluator evaluator(database_, *workers_[0], library_, device_id_, device_, p, options());
  evaluator.prefetch(s, all);
  EXPECT_EQ(service_->stats().ahead, all.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (service_->stats().compiled < all.size() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(service_->stats().compiled, all.size());
  evaluator.evaluate(s, all);
  EXPECT_EQ(service_->stats().compiled, all.size()) << "a kernel compiled ahead was compiled again";
  EXPECT_EQ(evaluator.stats().compiled_ahead, all.size());
  EXPECT_EQ(service_->stats().ahead_used, all.size());
  // Tried candidates are not guessed again.
  evaluator.prefetch(s, all);
  EXPECT_EQ(service_->stats().ahead, all.size());
}

}  // namespace
}  // namespace gemmforge::tuner
