// SharedFeed on an inner feed driven by the test: readers share one inner
// follow, late readers take held commits, old ones get a follow of their
// own, a loss reaches each reader after its commits, and a reader that
// leaves (even from inside its own sink) is never called again.
#include "store/shared_feed.h"

#include <gtest/gtest.h>

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

TEST(SharedFeed, AReaderOlderThanTheHeldCommitsGetsAFollowOfItsOwn) {
  DrivenFeed inner;
  SharedFeed feed(inner, SharedFeedOptions{.keep = 2});
  Heard first, old;
  auto following = feed.Follow(10, first.Sink());
  for (int64_t r = 11; r <= 15; ++r) inner.Send(0, r);
  EXPECT_EQ(first.Await(5).size(), 5u);  // taken, so only the last two are held
  auto following_old = feed.Follow(12, old.Sink());
  EXPECT_EQ(feed.inner_follows(), 2u);
  EXPECT_EQ(inner.FromOf(1), 12);
  inner.Send(1, 13);
  EXPECT_EQ(old.Await(1), (Seen{"r13"}));
  auto following_recent = feed.Follow(13, old.Sink());  // 14 and 15 are held: shared
  EXPECT_EQ(feed.inner_follows(), 2u);
}

TEST(SharedFeed, ALossReachesEachReaderAfterItsCommitsAndTheNextFollowStartsAnew) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard a, b;
  auto following_a = feed.Follow(10, a.Sink());
  auto following_b = feed.Follow(11, b.Sink());
  inner.Send(0, 11);
  inner.Send(0, 12);
  inner.Lose(0);
  inner.Send(0, 13);  // after the loss: never handed out
  EXPECT_EQ(a.Await(3), (Seen{"r11", "r12", "lost"}));
  EXPECT_EQ(b.Await(2), (Seen{"r12", "lost"}));
  following_a.reset();
  following_b.reset();
  // The loss is handled on the feed's thread; until then a new reader
  // gets a follow of its own, after it one that others share.
  Heard c;
  std::unique_ptr<ChangeFeed::Following> following_c;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until;) {
    const size_t before = feed.inner_follows();
    following_c = feed.Follow(30, c.Sink());
    if (inner.FromOf(before) == 30 && feed.inner_follows() == before + 1) {
      Heard d;
      auto following_d = feed.Follow(30, d.Sink());
      if (feed.inner_follows() == before + 1) {  // d shares c's: c's is the shared one
        inner.Send(before, 31);
        EXPECT_EQ(c.Await(1), (Seen{"r31"}));
        EXPECT_EQ(d.Await(1), (Seen{"r31"}));
        return;
      }
    }
    following_c.reset();
    std::this_thread::yield();
  }
  FAIL() << "no shared follow was made again after the loss";
}

TEST(SharedFeed, AReaderThatLeavesIsNotCalledAgainEvenWhenItLeavesFromItsOwnSink) {
  DrivenFeed inner;
  SharedFeed feed(inner);
  Heard stays, leaves;
  std::unique_ptr<ChangeFeed::Following> following_leaves;
  auto following = feed.Follow(10, stays.Sink());
  following_leaves = feed.Follow(10, {[&](int64_t revision, std::vector<Change>) {
                                        leaves.Add("r" + std::to_string(revision));
                                        following_leaves.reset();  // from inside its sink
                                      },
                                      [&](const Status&) { leaves.Add("lost"); }});
  for (int64_t r = 11; r <= 13; ++r) inner.Send(0, r);
  EXPECT_EQ(stays.Await(3), (Seen{"r11", "r12", "r13"}));
  EXPECT_EQ(leaves.Await(1), (Seen{"r11"}));
  Heard later;
  auto following_later = feed.Follow(13, later.Sink());
  inner.Send(0, 14);
  EXPECT_EQ(later.Await(1), (Seen{"r14"}));  // delivered after 14: the one that left was not
  EXPECT_EQ(leaves.Await(1), (Seen{"r11"}));
}

}  // namespace
}  // namespace berth::store
