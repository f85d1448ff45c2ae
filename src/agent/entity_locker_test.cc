#include "agent/entity_locker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace berth::agent {
namespace {

TEST(EntityLocker, EntriesExistOnlyWhileUsed) {
  EntityLocker locker;
  EXPECT_EQ(locker.size(), 0u);
  locker.Lock(7);
  locker.Lock(8);
  EXPECT_EQ(locker.size(), 2u);
  locker.Unlock(7);
  EXPECT_EQ(locker.size(), 1u);
  locker.Unlock(8);
  EXPECT_EQ(locker.size(), 0u);
  locker.Unlock(9);  // never locked: ignored, not a crash
  EXPECT_EQ(locker.size(), 0u);
}

TEST(EntityLocker, WaitersAreServedInArrivalOrder) {
  EntityLocker locker;
  locker.Lock(1);
  constexpr int kWaiters = 6;
  std::vector<int> order;
  std::mutex order_mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    threads.emplace_back([&, i] {
      EntityLock lock(locker, 1);
      std::lock_guard g(order_mu);
      order.push_back(i);
    });
    // Start the next waiter only once this one has taken its ticket (the
    // holder plus i + 1 waiters), so the arrival order is known. Bounded.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (locker.Users(1) < static_cast<uint32_t>(i + 2)) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "waiter " << i << " never queued";
      std::this_thread::yield();
    }
  }
  locker.Unlock(1);
  for (auto& t : threads) t.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(locker.size(), 0u);
}

}  // namespace
}  // namespace berth::agent
