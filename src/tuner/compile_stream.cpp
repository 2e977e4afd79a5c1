// A small pool of compile threads feeding a queue of finished results.
#include "tuner/compile_stream.hpp"

#include <algorithm>
#include <exception>

#include "rtc/compile_pool.hpp"

namespace gemmforge::tuner {

unsigned default_tuning_compile_threads() {
  const unsigned cores = rtc::default_compile_threads();
  return std::max(1u, cores - 1);
}

CompileStream::CompileStream(std::vector<rtc::CompileRequest> requests, unsigned threads)
    : requests_(std::move(requests)), start_(std::chrono::steady_clock::now()) {
  if (threads == 0) threads = default_tuning_compile_threads();
  const size_t count = std::min<size_t>(threads, requests_.size());
  for (size_t t = 0; t < count; ++t) threads_.emplace_back([this] { work(); });
}

CompileStream::~CompileStream() {
  stop_ = true;
  threads_.clear();  // joins
}

void CompileStream::work() {
  for (size_t i = next_request_++; i < requests_.size() && !stop_; i = next_request_++) {
    Done done;
    done.index = i;
    try {
      done.result = rtc::compile(requests_[i]);
    } catch (const std::exception& e) {  // NVRTC refusing a program is a failed compile like any other
      done.result.ok = false;
      done.result.error = e.what();
    }
    const double now_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    {
      std::lock_guard lock(mutex_);
      done_.push_back(std::move(done));
      busy_s_ = std::max(busy_s_, now_s);
    }
    ready_.notify_one();
  }
}

std::optional<CompileStream::Done> CompileStream::next() {
  std::unique_lock lock(mutex_);
  if (handed_over_ == requests_.size()) return std::nullopt;
  ready_.wait(lock, [this] { return !done_.empty(); });
  Done done = std::move(done_.front());
  done_.pop_front();
  ++handed_over_;
  return done;
}

double CompileStream::busy_seconds() const {
  std::lock_guard lock(mutex_);
  return busy_s_;
}

}  // namespace gemmforge::tuner
