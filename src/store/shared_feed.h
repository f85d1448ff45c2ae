// SharedFeed: one follow of a ChangeFeed for all the readers of a process.
//
// A berthd replica follows its store three times: the control loop, the
// read cache and the event log, each from the revision it listed at. On
// etcd every follow is a watch: etcd encodes and sends each event once per
// watch, and each reader decodes it again (a 100,000-task pass is tens of
// megabytes, three times over). SharedFeed follows the inner feed once and
// hands each commit to every reader.
//
// Contract: ChangeFeed's, for each reader. Follow(R) hands every commit
// after R to that reader once, in revision order, one call at a time, on a
// thread of the reader's own (a reader slow to take a commit, such as a
// read cache that waits for its lists, holds up no other reader); when the
// inner feed is lost, each reader gets the commits it brought before, then
// `lost`. Destroying a Following waits for a call in progress; it must not
// be destroyed from inside its own sink.
//
// How a reader joins at revision R:
//   - no inner follow yet (or the last one was lost and told): one starts
//     at R;
//   - R + 1 at or after the oldest commit still held: the reader gets the
//     held commits after R, then new ones;
//   - R older than that (it listed before others joined): the inner follow
//     starts again at R, and the others skip what they took already (they
//     wait while the inner feed brings again what followed R; if it can
//     no longer, every reader is lost and lists again);
//   - while a loss is still being told to the readers: a follow of its own
//     from the inner feed.
// Held commits: every commit a reader has still to take, and beyond those
// the latest `keep` commits, at most `keep_bytes`, for readers that list and
// join just after. A reader that stops taking commits makes them pile up in
// memory.
//
// Thread-safe. The inner feed must call its sink on its own thread (as
// ChangeFeed says), never inside Follow.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "store/change_feed.h"

namespace berth::store {

struct SharedFeedOptions {
  size_t keep = 256;             // commits held for readers that join late (default 256)
  size_t keep_bytes = 64 << 20;  // and at most these bytes of them (default 64 MiB)
};

class SharedFeed final : public ChangeFeed {
 public:
  explicit SharedFeed(ChangeFeed& inner, SharedFeedOptions options = {});
  // Every reader's Following must be gone.
  ~SharedFeed() override;

  Result<int64_t> LatestRevision() override { return inner_.LatestRevision(); }
  Result<Snapshot> ListAtOneRevision(const std::vector<std::string>& kinds) override {
    return inner_.ListAtOneRevision(kinds);
  }
  std::unique_ptr<Following> Follow(int64_t revision, Sink sink) override;

  // How many follows of the inner feed were made (shared ones and readers'
  // own), for tests.
  size_t inner_follows() const;

 private:
  struct Commit {
    int64_t revision = 0;
    std::shared_ptr<const std::vector<Change>> changes;
    size_t bytes = 0;
  };
  struct Reader {
    Sink sink;
    int64_t next = 0;   // the next revision it takes
    bool gone = false;  // its Following was destroyed
    std::thread thread;
  };
  class Joined;

  void Received(uint64_t generation, int64_t revision, std::vector<Change> changes);
  void InnerLost(uint64_t generation, const Status& why);
  void Serve(const std::shared_ptr<Reader>& reader);  // the reader's thread
  // Starts the inner follow at `revision` (none held yet); the one it
  // replaces goes to `old`, to be destroyed outside mu_.
  void Start(int64_t revision, std::unique_ptr<Following>* old);
  void Leave(const std::shared_ptr<Reader>& reader);
  void Trim();

  ChangeFeed& inner_;
  const SharedFeedOptions options_;
  mutable std::mutex mu_;
  std::condition_variable changed_;       // a commit, a loss, a reader taking or leaving, stop_
  std::unique_ptr<Following> following_;  // the shared inner follow
  uint64_t generation_ = 0;               // of following_: older ones' calls are ignored
  int64_t held_from_ = 0;  // every commit the inner follow brought from here on is held_
  std::deque<Commit> held_;
  size_t held_bytes_ = 0;
  std::optional<Status> lost_;                    // of following_, until every reader was told
  std::vector<std::shared_ptr<Reader>> readers_;  // sharing following_, not yet told of a loss
  size_t inner_follows_ = 0;
  size_t serving_ = 0;  // reader threads still running
  bool stop_ = false;
};

}  // namespace berth::store
