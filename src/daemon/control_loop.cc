#include "daemon/control_loop.h"

#include <cstdio>

namespace berth::daemon {

void ControlLoop::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ControlLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  settled_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ControlLoop::Notify() {
  {
    std::lock_guard lock(mu_);
    notified_ = true;
    ++requests_;
  }
  wake_.notify_all();
}

bool ControlLoop::WaitSettled(Duration timeout) {
  std::unique_lock lock(mu_);
  const uint64_t mine = ++requests_;
  notified_ = true;
  wake_.notify_all();
  return settled_.wait_for(lock, timeout, [&] { return stopping_ || settled_upto_ >= mine; }) &&
         !stopping_;
}

// Collects notifications until `batch_delay` passes without one, or
// `max_batch_delay` after the first.
void ControlLoop::WaitForBatch(std::unique_lock<std::mutex>& lock) {
  const auto cap = std::chrono::steady_clock::now() + options_.max_batch_delay;
  while (!stopping_ && std::chrono::steady_clock::now() < cap) {
    notified_ = false;
    const auto until = std::min(cap, std::chrono::steady_clock::now() + options_.batch_delay);
    if (!wake_.wait_until(lock, until, [&] { return stopping_ || notified_; })) return;
  }
}

namespace {

// A pass reads only stored data that the API validated, so an exception from
// it is a bug: it is reported as a failed pass (and retried) rather than
// ending berthd.
Result<PassSummary> GuardedPass(Reconciler& reconciler, Timestamp now) {
  try {
    return reconciler.RunPass(now);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("internal error in a pass: ") + e.what());
  }
}

}  // namespace

void ControlLoop::Loop() {
  std::unique_lock lock(mu_);
  bool again = true;  // the first pass runs at once
  while (!stopping_) {
    if (!again)
      wake_.wait_for(lock, options_.idle_interval, [&] { return stopping_ || notified_; });
    if (stopping_) break;
    if (notified_) WaitForBatch(lock);
    notified_ = false;
    const uint64_t covered = requests_;
    lock.unlock();
    Result<PassSummary> pass = GuardedPass(reconciler_, clock_.Now());
    lock.lock();
    passes_.fetch_add(1);
    // A Conflict means an API write raced the pass: run again on fresh state.
    const bool raced = !pass.ok() && pass.status().code() == StatusCode::kConflict;
    if (!pass.ok() && !raced) {
      pass_errors_.fetch_add(1);
      std::fprintf(stderr, "berthd: control loop: %s\n", pass.status().message().c_str());
    }
    again = raced || (pass.ok() && pass->wrote);
    if (pass.ok() && !pass->wrote && !pass->waiting) {
      settled_upto_ = covered;
      settled_.notify_all();
    }
  }
}

}  // namespace berth::daemon
