// EventLog: the last changes of the cluster, for `GET /v1/events` and
// `berth events` (docs/api.md, "Events").
//
// An event is one stored change of an object the operator cares about (a
// node, service, task, job, class, rollout or the leader key), recorded as
// the store hands it out: its kind, id, whether it was written or deleted,
// and its new body. What the event says (topic, type, message, attributes:
// describe.h) is read from that body when a client asks, at the edge, so
// that recording costs the control loop a copy and no decoding.
//
// Index: the store revision of the commit that made the change. Every
// berthd replica records the same commits from the same store (etcd's feed
// on each, docs/ha.md), so the events of one index range are the same on
// every replica; the commits of one revision form one frame. Times are the
// recording replica's clock.
//
// Bounded: the log keeps the newest `capacity` events; a reader that asks
// for an index older than the oldest kept, or than the first recorded, is
// told which it missed. A
// batch larger than the log keeps only its last `capacity` changes (a pass
// that writes 100,000 tasks does not copy them all to drop them).
//
// Thread-safe: Record from the committing threads (one commit at a time,
// in revision order: WatchedStore::SetCommitSink), readers from any.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/time.h"
#include "store/change_feed.h"

namespace berth::daemon {

struct EventLogOptions {
  // How many events are kept (berthd --event-buffer). Default 10,000; 0:
  // berthd records none (the log stays empty).
  size_t capacity = 10000;
};

// One recorded change.
struct RecordedEvent {
  int64_t index = 0;  // the store revision of its commit
  Timestamp time{};   // when this replica recorded it
  bool deleted = false;
  std::string kind, id, body;  // body: the new one; "" when deleted
};

class EventLog {
 public:
  // The kinds that make events.
  static bool Records(std::string_view kind);

  EventLog(const Clock& clock, EventLogOptions options = {});

  // Records one commit's changes (those of kinds Records takes) at
  // `revision`, of which `cut` more were left out (a commit larger than
  // the log); a revision not above the newest recorded is ignored.
  void Record(int64_t revision, const std::vector<store::Change>& changes, size_t cut = 0);
  // Commits up to `through` were never recorded (before recording
  // started, or while the store's feed was lost): a reader asking for
  // them is told it missed them.
  void Missed(int64_t through);

  struct Batch {
    std::vector<RecordedEvent> events;  // index order
    // Nonzero: events from the index asked for up to this one were
    // dropped (the log is bounded); the frame of this index may be in
    // `events` in part (the rest of a frame cut at the front, or the last
    // `capacity` changes of a larger commit).
    int64_t missed_through = 0;
  };
  // The events with index >= `from`, at most `limit` but whole frames (a
  // frame is never cut, so a batch may exceed `limit` by one frame's
  // rest: at most `capacity` events, copied under the log's lock).
  Batch Read(int64_t from, size_t limit) const;

  // Waits (real time, up to `timeout`) until an event with index >= `from`
  // is recorded or the log is closed; whether one is there.
  bool WaitFor(int64_t from, Duration timeout) const;
  // Wakes every waiter for good (berthd stops).
  void Close();
  bool closed() const;

  int64_t newest_index() const;
  uint64_t recorded() const;  // events recorded since start
  size_t capacity() const { return std::max<size_t>(1, options_.capacity); }

 private:
  const Clock& clock_;
  const EventLogOptions options_;
  mutable std::mutex mu_;
  mutable std::condition_variable recorded_cv_;
  std::deque<RecordedEvent> events_;  // index order, at most capacity
  uint64_t recorded_ = 0;
  int64_t dropped_through_ = 0;  // the index of the newest event dropped
  int64_t newest_ = 0;
  bool closed_ = false;
};

}  // namespace berth::daemon
