// SharedFeed on an inner feed driven by the test: readers share one inner
// follow, late readers take held commits, an older one starts the inner
// follow again, a loss reaches each reader after its commits, one reader's
// slow sink holds up no other, and a reader that leaves is not called again.
#include "store/shared_feed.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>

namespace berth::store {
namespace {

// An inner feed whose commits and losses the test sends, to any follow made.
class DrivenFeed final : public ChangeFeed {
 public:
  Result<int64_t> LatestRevision() override { return 0; }
  Result<Snapshot> ListAtOneRevision(const std::vector<std::string>&) override {
    return Snapshot{};
  }
  std::unique_ptr<Following> Follow(int64_t from, Sink sink) override {
    std::lock_guard lock(mu);
    follows.push_back({from, std::move(sink)});
    return std::make_unique<Following>();
  }
  // Commit `revision` (one change, "task/<revision>") through follow `i`.
  void Send(size_t i, int64_t revision) {
    Sink sink = SinkOf(i);
    sink.changed(revision,
                 {Change{Write::Op::kPut, "task", std::to_string(revision), "{}", revision}});
  }
  void Lose(size_t i) { SinkOf(i).lost(Status::Unavailable("compacted")); }
  int64_t FromOf(size_t i) {
    std::lock_guard lock(mu);
    return follows.at(i).from;
  }

 private:
  Sink SinkOf(size_t i) {
    std::lock_guard lock(mu);
    return follows.at(i).sink;
  }
  struct Made {
    int64_t from;
    Sink sink;
  };
  std::mutex mu;
  std::vector<Made> follows;
};

// What one reader was handed: "r<revision>" for each commit, "lost" at a loss.
class Heard {
 public:
  ChangeFeed::Sink Sink() {
    return {[this](int64_t revision, std::vector<Change> changes) {
              EXPECT_EQ(changes.size(), 1u);
              Add("r" + std::to_string(revision));
            },
            [this](const Status&) { Add("lost"); }};
  }
  // Waits (at most 10 s) until `count` entries came; all of them.
  std::vector<std::string> Await(size_t count) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return heard_.size() >= count; });
    return heard_;
  }
  void Add(std::string what) {
    std::lock_guard lock(mu_);
    heard_.push_back(std::move(what));
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> heard_;
};

using Seen = std::vector<std::string>;

TEST(SharedFeed, ReadersShareOneInnerFollowAndEachGetsEveryCommitOnceInOrder) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard a, b;
  auto following_a = feed.Follow(10, a.Sink());
  auto following_b = feed.Follow(10, b.Sink());
  EXPECT_EQ(feed.inner_follows(), 1u);
  EXPECT_EQ(inner.FromOf(0), 10);
  for (int64_t r = 11; r <= 13; ++r) inner.Send(0, r);
  EXPECT_EQ(a.Await(3), (Seen{"r11", "r12", "r13"}));
  EXPECT_EQ(b.Await(3), (Seen{"r11", "r12", "r13"}));
}

TEST(SharedFeed, AReaderJoiningLateTakesTheHeldCommitsAfterItsRevisionThenNewOnes) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard first, late, ahead;
  auto following = feed.Follow(10, first.Sink());
  for (int64_t r = 11; r <= 14; ++r) inner.Send(0, r);
  EXPECT_EQ(first.Await(4).size(), 4u);
  auto following_late = feed.Follow(12, late.Sink());
  auto following_ahead = feed.Follow(20, ahead.Sink());  // listed past what the feed brought
  EXPECT_EQ(feed.inner_follows(), 1u);
  inner.Send(0, 21);
  EXPECT_EQ(late.Await(3), (Seen{"r13", "r14", "r21"}));
  EXPECT_EQ(ahead.Await(1), (Seen{"r21"}));
}

// An older reader (it listed before the others followed) starts the inner
// follow again from its revision; the others skip the commits they took.
TEST(SharedFeed, AReaderOlderThanTheHeldCommitsStartsTheInnerFollowAgain) {
  DrivenFeed inner;
  SharedFeed feed(inner, SharedFeedOptions{.keep = 2});
  Heard first, old, recent;
  auto following = feed.Follow(10, first.Sink());
  for (int64_t r = 11; r <= 15; ++r) inner.Send(0, r);
  EXPECT_EQ(first.Await(5).size(), 5u);                    // taken, so only the last two are held
  auto following_recent = feed.Follow(13, recent.Sink());  // 14 and 15 are held: shared
  EXPECT_EQ(feed.inner_follows(), 1u);
  EXPECT_EQ(recent.Await(2), (Seen{"r14", "r15"}));
  auto following_old = feed.Follow(12, old.Sink());
  EXPECT_EQ(feed.inner_follows(), 2u);
  EXPECT_EQ(inner.FromOf(1), 12);
  inner.Send(0, 16);  // the replaced follow's: ignored
  inner.Lose(0);      // and so is its loss
  for (int64_t r = 13; r <= 16; ++r) inner.Send(1, r);
  EXPECT_EQ(old.Await(4), (Seen{"r13", "r14", "r15", "r16"}));
  EXPECT_EQ(first.Await(6), (Seen{"r11", "r12", "r13", "r14", "r15", "r16"}));
  EXPECT_EQ(recent.Await(3), (Seen{"r14", "r15", "r16"}));
}

// A gate a sink waits at.
class Gate {
 public:
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Pass() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
};

TEST(SharedFeed, ALossReachesEachReaderAfterItsCommitsAndTheNextFollowStartsAnew) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard a, b;
  Gate gate;
  auto following_a = feed.Follow(10, {[&](int64_t revision, std::vector<Change>) {
                                        gate.Pass();  // held at r11 while r12 and the loss come
                                        a.Add("r" + std::to_string(revision));
                                      },
                                      [&](const Status&) { a.Add("lost"); }});
  auto following_b = feed.Follow(11, b.Sink());
  inner.Send(0, 11);
  inner.Send(0, 12);
  inner.Lose(0);
  EXPECT_EQ(b.Await(2), (Seen{"r12", "lost"}));
  // a is still held at r11, so not told yet: a reader now gets a follow of
  // its own, and a still gets r12 and the loss.
  Heard own;
  auto following_own = feed.Follow(40, own.Sink());
  EXPECT_EQ(feed.inner_follows(), 2u);
  EXPECT_EQ(inner.FromOf(1), 40);
  inner.Send(1, 41);
  EXPECT_EQ(own.Await(1), (Seen{"r41"}));
  following_own.reset();
  gate.Open();
  EXPECT_EQ(a.Await(3), (Seen{"r11", "r12", "lost"}));
  following_a.reset();
  following_b.reset();
  Heard c, d;  // every reader was told: a new shared inner follow
  auto following_c = feed.Follow(30, c.Sink());
  auto following_d = feed.Follow(30, d.Sink());
  EXPECT_EQ(feed.inner_follows(), 3u);
  EXPECT_EQ(inner.FromOf(2), 30);
  inner.Send(0, 31);  // the lost follow's: ignored
  inner.Send(2, 31);
  EXPECT_EQ(c.Await(1), (Seen{"r31"}));
  EXPECT_EQ(d.Await(1), (Seen{"r31"}));
}

// A reader whose sink waits (a read cache behind its lists) holds up no
// other reader; destroying its Following waits for the call in progress,
// and it is called no more.
TEST(SharedFeed, ASlowReaderHoldsUpNoOtherAndLeavesAfterItsCall) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard slow, fast;
  Gate gate;
  std::atomic<bool> returned{false}, left{false};
  auto following_slow = feed.Follow(10, {[&](int64_t revision, std::vector<Change>) {
                                           EXPECT_FALSE(left) << "called after it left";
                                           slow.Add("r" + std::to_string(revision));
                                           gate.Pass();
                                           returned = true;
                                         },
                                         [&](const Status&) { slow.Add("lost"); }});
  auto following_fast = feed.Follow(10, fast.Sink());
  for (int64_t r = 11; r <= 13; ++r) inner.Send(0, r);
  EXPECT_EQ(fast.Await(3), (Seen{"r11", "r12", "r13"}));  // while the slow one waits at r11
  EXPECT_EQ(slow.Await(1).front(), "r11");
  std::thread leaving([&] {
    following_slow.reset();
    EXPECT_TRUE(returned);  // the call in progress ended first
    left = true;
  });
  gate.Open();
  leaving.join();
  inner.Send(0, 14);
  EXPECT_EQ(fast.Await(4).back(), "r14");
}

}  // namespace
}  // namespace berth::store
