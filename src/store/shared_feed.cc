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
    : inner_(inner), options_(options) {}

SharedFeed::~SharedFeed() {
  std::unique_ptr<Following> following;
  {
    std::unique_lock lock(mu_);
    stop_ = true;
    following = std::move(following_);
    changed_.notify_all();
    changed_.wait(lock, [this] { return serving_ == 0; });
  }
  following.reset();  // outside mu_: its thread may be waiting for it in Received
}

std::unique_ptr<ChangeFeed::Following> SharedFeed::Follow(int64_t revision, Sink sink) {
  std::unique_ptr<Following> old;  // destroyed after `lock` is released
  std::unique_lock lock(mu_);
  if (lost_ && readers_.empty()) {  // every reader was told: start anew
    old = std::move(following_);
    lost_.reset();
  }
  if (lost_) {
    ++inner_follows_;
    return inner_.Follow(revision, std::move(sink));
  }
  if (following_ == nullptr || revision + 1 < held_from_) Start(revision, &old);
  auto reader = std::make_shared<Reader>();
  reader->sink = std::move(sink);
  reader->next = revision + 1;
  // The thread waits for mu_; made first, so that a thread that cannot be
  // made leaves no reader behind.
  reader->thread = std::thread([this, reader] { Serve(reader); });
  readers_.push_back(reader);
  ++serving_;
  return std::make_unique<Joined>(*this, std::move(reader));
}

void SharedFeed::Start(int64_t revision, std::unique_ptr<Following>* old) {
  if (following_ != nullptr) *old = std::move(following_);
  const uint64_t generation = ++generation_;
  held_.clear();
  held_bytes_ = 0;
  held_from_ = revision + 1;
  ++inner_follows_;
  following_ = inner_.Follow(
      revision, {[this, generation](int64_t at, std::vector<Change> changes) {
                   Received(generation, at, std::move(changes));
                 },
                 [this, generation](const Status& why) { InnerLost(generation, why); }});
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
  changed_.notify_all();
}

void SharedFeed::InnerLost(uint64_t generation, const Status& why) {
  std::lock_guard lock(mu_);
  if (generation != generation_ || lost_ || stop_) return;
  lost_ = why;
  changed_.notify_all();
}

// Hands the reader each held commit from its `next` on, and the loss once
// it took every commit before it.
void SharedFeed::Serve(const std::shared_ptr<Reader>& reader) {
  std::unique_lock lock(mu_);
  for (;;) {
    auto commit = held_.end();
    changed_.wait(lock, [&] {
      if (reader->gone || stop_) return true;
      commit =
          std::lower_bound(held_.begin(), held_.end(), reader->next,
                           [](const Commit& c, int64_t revision) { return c.revision < revision; });
      return commit != held_.end() || lost_.has_value();
    });
    if (reader->gone || stop_) break;
    if (commit == held_.end()) {  // lost, and nothing left before it
      const Status why = *lost_;
      std::erase(readers_, reader);
      if (readers_.empty()) {  // nobody needs what the lost follow brought
        held_.clear();
        held_bytes_ = 0;
      }
      lock.unlock();
      reader->sink.lost(why);
      lock.lock();
      break;
    }
    const int64_t revision = commit->revision;
    const std::shared_ptr<const std::vector<Change>> changes = commit->changes;
    lock.unlock();
    reader->sink.changed(revision, std::vector<Change>(*changes));
    lock.lock();
    reader->next = revision + 1;
    Trim();
  }
  --serving_;
  changed_.notify_all();
}

void SharedFeed::Leave(const std::shared_ptr<Reader>& reader) {
  {
    std::lock_guard lock(mu_);
    reader->gone = true;
    std::erase(readers_, reader);
    Trim();
  }
  changed_.notify_all();
  if (reader->thread.get_id() == std::this_thread::get_id())
    reader->thread.detach();  // from inside its own sink (not allowed): it ends after the call
  else
    reader->thread.join();
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
