#include "daemon/events/event_log.h"

#include <algorithm>
#include <string_view>

namespace berth::daemon {

bool EventLog::Records(std::string_view kind) {
  // The fair-share classes are kind "config", id "classes".
  static constexpr std::string_view kKinds[] = {"node",   "service", "task",  "job",
                                                "config", "update",  "leader"};
  return std::find(std::begin(kKinds), std::end(kKinds), kind) != std::end(kKinds);
}

EventLog::EventLog(const Clock& clock, EventLogOptions options)
    : clock_(clock), options_(options) {}

void EventLog::Record(int64_t revision, const std::vector<store::Change>& changes, size_t cut) {
  size_t wanted = 0;
  for (const store::Change& c : changes) wanted += Records(c.kind);
  if (wanted == 0) return;
  const Timestamp now = clock_.Now();
  {
    std::lock_guard lock(mu_);
    if (revision <= newest_) return;
    size_t skip = wanted > capacity() ? wanted - capacity() : 0;
    if (skip + cut > 0) dropped_through_ = revision;
    for (const store::Change& c : changes) {
      if (!Records(c.kind) || (skip > 0 && skip--)) continue;
      const bool deleted = c.op == store::Write::Op::kDelete;
      events_.push_back({revision, now, deleted, c.kind, c.id, deleted ? "" : c.body});
    }
    while (events_.size() > capacity()) {
      dropped_through_ = std::max(dropped_through_, events_.front().index);
      events_.pop_front();
    }
    newest_ = revision;
    recorded_ += wanted + cut;
  }
  recorded_cv_.notify_all();
}

void EventLog::Missed(int64_t through) {
  std::lock_guard lock(mu_);
  dropped_through_ = std::max(dropped_through_, through);
}

EventLog::Batch EventLog::Read(int64_t from, size_t limit) const {
  std::lock_guard lock(mu_);
  Batch batch;
  if (from <= dropped_through_) batch.missed_through = dropped_through_;
  auto it = std::lower_bound(events_.begin(), events_.end(), from,
                             [](const RecordedEvent& e, int64_t i) { return e.index < i; });
  for (; it != events_.end(); ++it) {
    if (batch.events.size() >= limit &&
        (batch.events.empty() || it->index != batch.events.back().index))
      break;
    batch.events.push_back(*it);
  }
  return batch;
}

bool EventLog::WaitFor(int64_t from, Duration timeout) const {
  std::unique_lock lock(mu_);
  return recorded_cv_.wait_for(lock, timeout, [&] { return closed_ || newest_ >= from; }) &&
         newest_ >= from;
}

void EventLog::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  recorded_cv_.notify_all();
}

bool EventLog::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

int64_t EventLog::newest_index() const {
  std::lock_guard lock(mu_);
  return newest_;
}

uint64_t EventLog::recorded() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

}  // namespace berth::daemon
