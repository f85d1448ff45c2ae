#include "threephase/sampling_queue.h"

#include <algorithm>

namespace berth::threephase {

SamplingQueue::SamplingQueue(std::unique_ptr<TaskOrder> order) : order_(std::move(order)) {}

void SamplingQueue::Push(QueuedTask task) {
  {
    std::lock_guard lock(mu_);
    if (closed_) return;
    heap_.push_back(std::move(task));
    // std heaps put the greatest first; "after" makes the first in order the greatest.
    std::push_heap(heap_.begin(), heap_.end(),
                   [&](const QueuedTask& a, const QueuedTask& b) { return order_->Before(b, a); });
  }
  ready_.notify_one();
}

std::optional<QueuedTask> SamplingQueue::Pop() {
  std::vector<QueuedTask> one;
  if (!PopUpTo(1, &one)) return std::nullopt;
  return std::move(one.front());
}

bool SamplingQueue::PopUpTo(size_t max, std::vector<QueuedTask>* out) {
  out->clear();
  std::unique_lock lock(mu_);
  ready_.wait(lock, [&] { return closed_ || !heap_.empty(); });
  if (closed_) return false;
  while (!heap_.empty() && out->size() < std::max<size_t>(max, 1)) {
    std::pop_heap(heap_.begin(), heap_.end(),
                  [&](const QueuedTask& a, const QueuedTask& b) { return order_->Before(b, a); });
    out->push_back(std::move(heap_.back()));
    heap_.pop_back();
  }
  return true;
}

void SamplingQueue::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    heap_.clear();
  }
  ready_.notify_all();
}

size_t SamplingQueue::size() const {
  std::lock_guard lock(mu_);
  return heap_.size();
}

}  // namespace berth::threephase
