#include "daemon/loop/control_loop.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace berth::daemon {

void ControlLoop::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "berth-loop");  // for top -H and perf
    Loop();
  });
}

void ControlLoop::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  settled_.notify_all();
  blocked_cv_.notify_all();
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
  settle_requested_ = true;  // a pass now: a wait for one is no change to batch
  wake_.notify_all();
  return settled_.wait_for(lock, timeout, [&] { return stopping_ || settled_upto_ >= mine; }) &&
         !stopping_;
}

bool ControlLoop::WaitBlocked(Duration timeout) {
  const Timestamp since = clock_.Now();
  std::unique_lock lock(mu_);
  return blocked_cv_.wait_for(lock, timeout, [&] {
    return stopping_ || (blocked_ && !notified_ && !settle_requested_ &&
                         !(blocked_until_ && *blocked_until_ <= since));
  }) && !stopping_;
}

bool ControlLoop::Due(Timestamp now) const {
  return window_.Due(now) || (timer_ && now >= *timer_);
}

void ControlLoop::WaitForWork(std::unique_lock<std::mutex>& lock) {
  std::optional<Timestamp> deadline = window_.Deadline();
  if (timer_) deadline = deadline ? std::min(*deadline, *timer_) : *timer_;
  blocked_ = true;
  blocked_until_ = deadline;
  blocked_cv_.notify_all();
  clock_.WaitUntil(lock, wake_, deadline,
                   [&] { return stopping_ || notified_ || settle_requested_; });
  blocked_ = false;
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

bool ControlLoop::RunPass(std::unique_lock<std::mutex>& lock) {
  window_.Reset();
  timer_.reset();
  settle_requested_ = false;
  const uint64_t covered = requests_;
  lock.unlock();
  const Timestamp now = clock_.Now();
  const auto began = std::chrono::steady_clock::now();
  Result<PassSummary> pass = GuardedPass(reconciler_, now);
  const auto nanos = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began)
          .count());
  lock.lock();
  passes_.fetch_add(1);
  pass_nanos_.fetch_add(nanos);
  pass_durations_.Observe(std::chrono::nanoseconds(nanos));
  if (pass.ok()) tasks_visited_.fetch_add(pass->visited);
  // A Conflict means an API write raced the pass: run again on fresh state.
  const bool raced = !pass.ok() && pass.status().code() == StatusCode::kConflict;
  if (!pass.ok() && !raced) {
    pass_errors_.fetch_add(1);
    std::fprintf(stderr, "berthd: control loop: %s\n", pass.status().message().c_str());
    timer_ = now + options_.retry_after;
    return false;
  }
  if (raced) return true;
  timer_ = pass->next_due;
  if (!pass->wrote && !pass->waiting) {
    settled_upto_ = covered;
    settled_.notify_all();
  }
  return pass->wrote;
}

void ControlLoop::Loop() {
  std::unique_lock lock(mu_);
  bool again = true;  // the first pass reads the store at once
  while (!stopping_) {
    if (notified_) {
      notified_ = false;
      window_.OnEvent(clock_.Now());
    }
    if (again || settle_requested_ || Due(clock_.Now())) {
      again = RunPass(lock);
    } else {
      WaitForWork(lock);
    }
  }
}

}  // namespace berth::daemon
