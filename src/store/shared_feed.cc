#include "store/shared_feed.h"

#include <algorithm>
#include <limits>

namespace berth::store {

class SharedFeed::Joined final : public ChangeFeed::Following {
 public:
  Joined(SharedFeed& feed, std::shared_ptr<Reader> reader)
      : feed_(feed), reader_(std::move(reader)) {}
  ~Joined() override { feed_.Leave(reader_); }

 private:
  SharedFeed& feed_;
  std::shared_ptr<Reader> reader_;
};

SharedFeed::SharedFeed(ChangeFeed& inner, SharedFeedOptions options)
    : inner_(inner), options_(options), thread_([this] { Run(); }) {}

SharedFeed::~SharedFeed() {
  std::unique_ptr<Following> following;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    following = std::move(following_);
  }
  work_.notify_all();
  following.reset();  // outside mu_: its thread may be waiting for it in Received
  thread_.join();
}

std::unique_ptr<ChangeFeed::Following> SharedFeed::Follow(int64_t revision, Sink sink) {
  std::lock_guard lock(mu_);
  ++inner_follows_;
  if (following_ == nullptr && !lost_) {
    const uint64_t generation = ++generation_;
    held_from_ = revision + 1;
    following_ = inner_.Follow(
        revision, {[this, generation](int64_t at, std::vector<Change> changes) {
                     Received(generation, at, std::move(changes));
                   },
                   [this, generation](const Status& why) { InnerLost(generation, why); }});
  } else if (lost_ || revision + 1 < held_from_) {
    return inner_.Follow(revision, std::move(sink));  // a follow of its own
  } else {
    --inner_follows_;  // shares the one made
  }
  auto reader = std::make_shared<Reader>(Reader{std::move(sink), revision + 1});
  readers_.push_back(reader);
  work_.notify_all();
  return std::make_unique<Joined>(*this, std::move(reader));
}

size_t SharedFeed::inner_follows() const {
  std::lock_guard lock(mu_);
  return inner_follows_;
}

void SharedFeed::Received(uint64_t generation, int64_t revision, std::vector<Change> changes) {
  size_t bytes = sizeof(Commit);
  for (const Change& c : changes)
    bytes += sizeof(Change) + c.kind.size() + c.id.size() + c.body.size();
  auto shared = std::make_shared<const std::vector<Change>>(std::move(changes));
  std::lock_guard lock(mu_);
  if (generation != generation_ || lost_ || stop_) return;
  held_.push_back({revision, std::move(shared), bytes});
  held_bytes_ += bytes;
  Trim();
  work_.notify_all();
}

void SharedFeed::InnerLost(uint64_t generation, const Status& why) {
  std::lock_guard lock(mu_);
  if (generation != generation_ || lost_ || stop_) return;
  lost_ = why;
  work_.notify_all();
}

void SharedFeed::Run() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    if (DeliverOne(lock)) continue;
    if (lost_) {
      ResetAfterLoss(lock);
      continue;
    }
    work_.wait(lock);
  }
}

bool SharedFeed::DeliverOne(std::unique_lock<std::mutex>& lock) {
  for (const std::shared_ptr<Reader>& reader : readers_) {
    if (reader->busy) continue;
    const auto commit =
        std::lower_bound(held_.begin(), held_.end(), reader->next,
                         [](const Commit& c, int64_t revision) { return c.revision < revision; });
    if (commit == held_.end()) continue;
    const std::shared_ptr<Reader> taking = reader;  // it may leave while called
    const int64_t revision = commit->revision;
    const std::shared_ptr<const std::vector<Change>> changes = commit->changes;
    taking->busy = true;
    lock.unlock();
    taking->sink.changed(revision, std::vector<Change>(*changes));
    lock.lock();
    taking->busy = false;
    taking->next = revision + 1;
    Trim();
    idle_.notify_all();
    return true;
  }
  return false;
}

// Each reader hears of the loss as it would of a commit: busy meanwhile,
// so that Leave waits for the call.
void SharedFeed::ResetAfterLoss(std::unique_lock<std::mutex>& lock) {
  const Status why = *lost_;
  while (!readers_.empty()) {
    const std::shared_ptr<Reader> reader = readers_.back();
    readers_.pop_back();
    reader->busy = true;
    lock.unlock();
    reader->sink.lost(why);
    lock.lock();
    reader->busy = false;
    idle_.notify_all();
  }
  std::unique_ptr<Following> following = std::move(following_);
  held_.clear();
  held_bytes_ = 0;
  lock.unlock();
  following.reset();  // outside mu_, as in the destructor
  lock.lock();
  lost_.reset();  // the next Follow starts a new inner follow
}

void SharedFeed::Leave(const std::shared_ptr<Reader>& reader) {
  std::unique_lock lock(mu_);
  std::erase(readers_, reader);
  // From inside its own sink the call in progress is this one.
  if (std::this_thread::get_id() != thread_.get_id())
    idle_.wait(lock, [&] { return !reader->busy; });
  Trim();
}

// Drops the oldest commits that every reader took, beyond the ones kept.
void SharedFeed::Trim() {
  int64_t taken = std::numeric_limits<int64_t>::max();  // every reader's commits before it
  for (const std::shared_ptr<Reader>& reader : readers_) taken = std::min(taken, reader->next);
  while (!held_.empty() && held_.front().revision < taken &&
         (held_.size() > options_.keep || held_bytes_ > options_.keep_bytes)) {
    held_bytes_ -= held_.front().bytes;
    held_from_ = held_.front().revision + 1;
    held_.pop_front();
  }
}

}  // namespace berth::store
