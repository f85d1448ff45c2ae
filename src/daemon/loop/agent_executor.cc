#include "daemon/loop/agent_executor.h"

#include <utility>

namespace berth::daemon {
namespace {

// A poll waits this long for news: also how long stopping berthd may wait
// for a poller.
constexpr Duration kPollWait = std::chrono::seconds(1);
constexpr Duration kRetryAfter = std::chrono::seconds(1);

bool Ended(TaskState state) { return state > TaskState::kRunning; }

}  // namespace

AgentExecutor::AgentExecutor(executor::Executor& inner,
                             std::vector<threephase::AgentTransport*> agents,
                             std::function<void()> wake_loop)
    : inner_(inner), wake_loop_(std::move(wake_loop)) {
  for (threephase::AgentTransport* agent : agents) feeds_[agent->agent_id()].transport = agent;
}

void AgentExecutor::Start() {
  std::lock_guard lock(mu_);
  if (!pollers_.empty()) return;
  stopping_ = false;
  for (auto& entry : feeds_) {
    Feed* feed = &entry.second;
    pollers_.emplace_back([this, feed] { Poll(*feed); });
  }
}

void AgentExecutor::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  for (std::thread& t : pollers_) t.join();
  pollers_.clear();
}

// Long-polls one agent's runs until berthd stops, or the agent says it
// runs nothing.
void AgentExecutor::Poll(Feed& feed) {
  std::string instance;
  int64_t sequence = 0;
  for (;;) {
    Result<agent::RunsBatch> batch = feed.transport->Runs(instance, sequence, kPollWait);
    std::unique_lock lock(mu_);
    if (stopping_) return;
    if (!batch.ok() && batch.status().code() == StatusCode::kNotFound) {
      lock.unlock();
      return Learn(feed, Kind::kSimulated, {});
    }
    if (!batch.ok()) {
      stop_cv_.wait_for(lock, kRetryAfter, [&] { return stopping_; });
      continue;
    }
    instance = batch->instance;
    sequence = batch->sequence;
    lock.unlock();
    Learn(feed, Kind::kFleet, std::move(batch->runs));
  }
}

void AgentExecutor::Learn(Feed& feed, Kind kind, std::vector<agent::RunReport> runs) {
  {
    std::lock_guard lock(mu_);
    const bool news = feed.kind != kind || !runs.empty() || !feed.waiting.empty();
    feed.kind = kind;
    for (std::string& run : feed.waiting) changed_.push_back(std::move(run));
    feed.waiting.clear();
    for (agent::RunReport& r : runs) {
      changed_.push_back(r.run);
      runs_[r.run] = std::move(r);
    }
    if (!news) return;
  }
  wake_loop_();
}

AgentExecutor::Feed* AgentExecutor::FeedOf(const executor::TaskToRun& task) {
  if (task.agent.empty() || task.process == nullptr) return nullptr;
  auto it = feeds_.find(std::string(task.agent));
  if (it == feeds_.end() || it->second.kind == Kind::kSimulated) return nullptr;
  return &it->second;
}

std::optional<std::string> AgentExecutor::Start(const executor::TaskToRun& task, Timestamp now) {
  std::unique_lock lock(mu_);
  Feed* feed = FeedOf(task);
  if (feed == nullptr) {
    lock.unlock();
    return inner_.Start(task, now);
  }
  if (feed->kind == Kind::kUnknown) {
    feed->waiting.push_back(task.id);
    return std::nullopt;
  }
  auto it = runs_.find(task.id);
  if (it == runs_.end() || it->second.node != task.node) return std::nullopt;
  // Ended before berthd saw it run: Check says how, in the next pass.
  if (Ended(it->second.state)) changed_.push_back(task.id);
  return "running on node '" + task.node + "' of agent " + std::string(task.agent) +
         (it->second.state == TaskState::kRunning && !it->second.message.empty()
              ? ": " + it->second.message
              : "");
}

std::optional<executor::Ended> AgentExecutor::Check(const executor::TaskToRun& task, Timestamp now,
                                                    std::optional<Timestamp>* due) {
  std::unique_lock lock(mu_);
  Feed* feed = FeedOf(task);
  if (feed == nullptr) {
    lock.unlock();
    return inner_.Check(task, now, due);
  }
  auto it = runs_.find(task.id);
  if (it == runs_.end() || it->second.node != task.node || !Ended(it->second.state))
    return std::nullopt;
  const agent::RunReport r = std::move(it->second);
  runs_.erase(it);
  executor::Ended ended{r.state != TaskState::kComplete, r.ran_ms, r.message,
                        r.state == TaskState::kRejected};
  if (r.state == TaskState::kShutdown) ended.message = "stopped on its node: " + r.message;
  return ended;
}

void AgentExecutor::Stop(const executor::TaskToRun& task) {
  std::unique_lock lock(mu_);
  if (FeedOf(task) == nullptr) {
    lock.unlock();
    return inner_.Stop(task);
  }
  runs_.erase(task.id);  // its release stops it on its node
}

std::vector<std::string> AgentExecutor::TakeChanged() {
  std::vector<std::string> changed = inner_.TakeChanged();
  std::lock_guard lock(mu_);
  changed.insert(changed.end(), changed_.begin(), changed_.end());
  changed_.clear();
  return changed;
}

}  // namespace berth::daemon
