// SamplingQueue: the priority queue in front of an instance's samplers,
// ordered by a TaskOrder plugin. Pop blocks until a task is there or the
// queue is closed. Thread-safe.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "threephase/task_order.h"

namespace berth::threephase {

class SamplingQueue {
 public:
  explicit SamplingQueue(std::unique_ptr<TaskOrder> order);

  void Push(QueuedTask task);
  // The first task in order; nullopt once the queue is closed.
  std::optional<QueuedTask> Pop();
  // Into `out`, in order: the first task (waiting for one) and up to
  // `max` - 1 more that are there already; false once the queue is closed.
  bool PopUpTo(size_t max, std::vector<QueuedTask>* out);
  // Wakes every Pop; later pushes are dropped.
  void Close();
  size_t size() const;

 private:
  std::unique_ptr<TaskOrder> order_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::vector<QueuedTask> heap_;  // a max-heap by `order_`
  bool closed_ = false;
};

}  // namespace berth::threephase
