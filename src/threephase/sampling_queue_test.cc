#include "threephase/sampling_queue.h"

#include <gtest/gtest.h>

#include <thread>

namespace berth::threephase {
namespace {

QueuedTask Make(std::string id, int64_t priority, uint64_t arrival) {
  QueuedTask t;
  t.task.id = std::move(id);
  t.task.priority = priority;
  t.arrival = arrival;
  return t;
}

TEST(SamplingQueue, PriorityDescendingThenArrival) {
  SamplingQueue queue(std::make_unique<PriorityThenArrival>());
  queue.Push(Make("low-1", 0, 1));
  queue.Push(Make("high-3", 5, 3));
  queue.Push(Make("low-0", 0, 0));
  queue.Push(Make("high-2", 5, 2));
  std::vector<std::string> order;
  for (int i = 0; i < 4; ++i) order.push_back(queue.Pop()->task.id);
  EXPECT_EQ(order, (std::vector<std::string>{"high-2", "high-3", "low-0", "low-1"}));
}

TEST(SamplingQueue, PopUpToTakesWhatIsThereInOrderAndNoMore) {
  SamplingQueue queue(std::make_unique<PriorityThenArrival>());
  queue.Push(Make("low", 0, 0));
  queue.Push(Make("high", 5, 1));
  queue.Push(Make("mid", 3, 2));
  std::vector<QueuedTask> batch;
  ASSERT_TRUE(queue.PopUpTo(2, &batch));
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].task.id, "high");
  EXPECT_EQ(batch[1].task.id, "mid");
  ASSERT_TRUE(queue.PopUpTo(8, &batch));  // fewer there than asked: no waiting
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].task.id, "low");
  queue.Close();
  EXPECT_FALSE(queue.PopUpTo(8, &batch));
}

TEST(SamplingQueue, CloseWakesABlockedPop) {
  SamplingQueue queue(std::make_unique<PriorityThenArrival>());
  std::optional<QueuedTask> got = Make("x", 0, 0);
  std::thread popper([&] { got = queue.Pop(); });
  queue.Close();
  popper.join();
  EXPECT_FALSE(got.has_value());
  queue.Push(Make("late", 0, 1));  // dropped after close
  EXPECT_EQ(queue.size(), 0u);
}

}  // namespace
}  // namespace berth::threephase
