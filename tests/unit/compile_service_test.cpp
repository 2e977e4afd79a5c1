// The shared compile pool: one compilation per cubin key whoever asks and whenever, kernels wanted now
// before kernels compiled ahead, and a kernel compiled ahead handed over when it is wanted. The compiler
// is injected, so these tests count and order compilations without NVRTC.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "rtc/compile_service.hpp"

namespace gemmforge::rtc {
namespace {

CompileRequest request(const std::string& name) {
  CompileRequest r;
  r.source = name;
  r.kernel = name;
  return r;
}

// A compiler that records what it compiles, in order, and can be held back until released.
class FakeCompiler {
 public:
  CompileResult operator()(const CompileRequest& r) {
    {
      std::unique_lock lock(mutex_);
      started_.push_back(r.source);
      changed_.notify_all();
      changed_.wait(lock, [&] { return !held_; });
    }
    ++count_;
    CompileResult result;
    result.ok = r.source != "broken";
    result.cubin.assign(r.source.begin(), r.source.end());
    result.compile_ms = 1;
    return result;
  }
  void hold() {
    std::lock_guard lock(mutex_);
    held_ = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      held_ = false;
    }
    changed_.notify_all();
  }
  void wait_started(size_t n) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return started_.size() >= n; });
  }
  std::vector<std::string> started() {
    std::lock_guard lock(mutex_);
    return started_;
  }
  int count() const { return count_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool held_ = false;
  std::vector<std::string> started_;
  std::atomic<int> count_{0};
};

void wait_all(const CompileService& service, const std::vector<CompileService::Ticket>& tickets) {
  std::vector<bool> taken(tickets.size(), false);
  while (const std::optional<size_t> done = service.wait_any(tickets, taken)) taken[*done] = true;
}

TEST(CompileService, OneKeyIsCompiledOnceWhoeverAsksAndWhenever) {
  auto compiler = std::make_shared<FakeCompiler>();
  CompileService service(2, [compiler](const CompileRequest& r) { return (*compiler)(r); });
  std::vector<CompileService::Ticket> tickets;
  for (int i = 0; i < 4; ++i) tickets.push_back(service.submit("key-a", request("a"), CompilePriority::kNow));
  tickets.push_back(service.submit("key-b", request("b"), CompilePriority::kNow));
  wait_all(service, tickets);
  EXPECT_EQ(compiler->count(), 2);
  EXPECT_EQ(tickets[0], tickets[3]) << "requests of one key share one compilation";
  // Asked again after it finished: kept, not compiled again.
  const CompileService::Ticket again = service.submit("key-a", request("a"), CompilePriority::kNow);
  wait_all(service, {again});
  EXPECT_EQ(compiler->count(), 2);
  EXPECT_TRUE(CompileService::result(again).ok);
  EXPECT_EQ(
      std::string(CompileService::result(again).cubin.begin(), CompileService::result(again).cubin.end()),
      "a");
  EXPECT_EQ(service.stats().compiled, 2u);
  EXPECT_EQ(service.stats().shared, 4u);
}

TEST(CompileService, KernelsWantedNowGoBeforeKernelsCompiledAhead) {
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->hold();
  CompileService service(1, [compiler](const CompileRequest& r) { return (*compiler)(r); });
  const CompileService::Ticket first = service.submit("k0", request("first"), CompilePriority::kNow);
  compiler->wait_started(1);  // the only thread is busy with "first"
  EXPECT_TRUE(service.ahead("k1", request("ahead-1")));
  EXPECT_TRUE(service.ahead("k2", request("ahead-2")));
  EXPECT_FALSE(service.ahead("k1", request("ahead-1"))) << "a known key is not queued twice";
  const CompileService::Ticket now = service.submit("k3", request("now"), CompilePriority::kNow);
  // Wanting a kernel queued ahead raises it above the other ahead.
  const CompileService::Ticket raised = service.submit("k2", request("ahead-2"), CompilePriority::kNow);
  compiler->release();
  wait_all(service, {first, now, raised});
  const std::vector<std::string> order = compiler->started();
  ASSERT_GE(order.size(), 3u);
  EXPECT_EQ(order[0], "first");
  EXPECT_EQ(order[1], "now");
  EXPECT_EQ(order[2], "ahead-2");
  const CompileServiceStats stats = service.stats();
  EXPECT_EQ(stats.ahead, 2u);
  EXPECT_EQ(stats.ahead_used, 1u);
}

TEST(CompileService, TheBatchAskedForRightAfterTheGuessesGoesFirst) {
  auto compiler = std::make_shared<FakeCompiler>();
  CompileService service(
      1, [compiler](const CompileRequest& r) { return (*compiler)(r); }, 512,
      /*ahead_delay_s=*/0.2);
  ASSERT_TRUE(service.ahead("g", request("guess")));  // the idle thread must not take it at once
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const CompileService::Ticket wanted = service.submit("w", request("wanted"), CompilePriority::kNow);
  wait_all(service, {wanted});
  const std::vector<std::string> order = compiler->started();
  ASSERT_FALSE(order.empty());
  EXPECT_EQ(order.front(), "wanted");
  // The guess still compiles once its wait is over.
  const CompileService::Ticket guess = service.submit("g", request("guess"), CompilePriority::kAhead);
  wait_all(service, {guess});
  EXPECT_EQ(compiler->count(), 2);
}

TEST(CompileService, GuessesTakeAtMostHalfTheThreads) {
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->hold();
  CompileService service(
      4, [compiler](const CompileRequest& r) { return (*compiler)(r); }, 512, /*ahead_delay_s=*/0);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(service.ahead("g" + std::to_string(i), request("guess-" + std::to_string(i))));
  }
  compiler->wait_started(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(compiler->started().size(), 2u) << "two of four threads stay free while guesses wait";
  // A kernel wanted now starts at once on a free thread.
  const CompileService::Ticket wanted = service.submit("w", request("wanted"), CompilePriority::kNow);
  compiler->wait_started(3);
  EXPECT_EQ(compiler->started()[2], "wanted");
  compiler->release();
  wait_all(service, {wanted});
  std::vector<CompileService::Ticket> guesses;
  for (int i = 0; i < 4; ++i) {
    guesses.push_back(service.submit("g" + std::to_string(i), request("guess-" + std::to_string(i)),
                                     CompilePriority::kAhead));
  }
  wait_all(service, guesses);
  EXPECT_EQ(compiler->count(), 5) << "every guess compiles in the end";
}

TEST(CompileService, OldGuessesGiveWayToNewOnes) {
  auto compiler = std::make_shared<FakeCompiler>();
  compiler->hold();
  CompileService service(1, [compiler](const CompileRequest& r) { return (*compiler)(r); });
  const CompileService::Ticket busy = service.submit("busy", request("busy"), CompilePriority::kNow);
  compiler->wait_started(1);
  for (int i = 0; i < 6; ++i) service.ahead("g" + std::to_string(i), request("g" + std::to_string(i)));
  // One thread: at most four guesses wait; the two oldest are gone, and a wanted one is never dropped.
  EXPECT_FALSE(service.known("g0"));
  EXPECT_FALSE(service.known("g1"));
  EXPECT_TRUE(service.known("g5"));
  const CompileService::Ticket wanted = service.submit("g2", request("g2"), CompilePriority::kNow);
  for (int i = 6; i < 12; ++i) service.ahead("g" + std::to_string(i), request("g" + std::to_string(i)));
  EXPECT_TRUE(service.known("g2"));
  compiler->release();
  wait_all(service, {busy, wanted});
  EXPECT_TRUE(CompileService::result(wanted).ok);
  EXPECT_GE(service.stats().ahead_dropped, 5u);
}

TEST(CompileService, AKernelCompiledAheadIsHandedOverWithoutCompilingAgain) {
  auto compiler = std::make_shared<FakeCompiler>();
  CompileService service(1, [compiler](const CompileRequest& r) { return (*compiler)(r); });
  ASSERT_TRUE(service.ahead("k", request("x")));
  while (compiler->count() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const CompileService::Ticket ticket = service.submit("k", request("x"), CompilePriority::kNow);
  wait_all(service, {ticket});
  EXPECT_EQ(compiler->count(), 1);
  EXPECT_TRUE(service.finished_at(ticket).has_value());
  EXPECT_EQ(service.stats().ahead_used, 1u);
}

TEST(CompileService, FailuresAndExceptionsAreResultsAndOldKernelsAreForgotten) {
  int calls = 0;
  CompileService service(
      1,
      [&calls](const CompileRequest& r) -> CompileResult {
        ++calls;
        if (r.source == "throws") throw std::runtime_error("NVRTC is unusable");
        CompileResult result;
        result.ok = r.source != "broken";
        return result;
      },
      /*keep=*/2);
  const auto broken = service.submit("b", request("broken"), CompilePriority::kNow);
  const auto throws = service.submit("t", request("throws"), CompilePriority::kNow);
  wait_all(service, {broken, throws});
  EXPECT_FALSE(CompileService::result(broken).ok);
  EXPECT_FALSE(CompileService::result(throws).ok);
  EXPECT_NE(CompileService::result(throws).error.find("unusable"), std::string::npos);
  const auto third = service.submit("c", request("c"), CompilePriority::kNow);
  wait_all(service, {third});
  EXPECT_FALSE(service.known("b")) << "only the last two finished kernels are kept";
  EXPECT_TRUE(service.known("c"));
  EXPECT_EQ(calls, 3);
}

}  // namespace
}  // namespace gemmforge::rtc
