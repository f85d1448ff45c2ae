#include "daemon/nodes/node_executor.h"

#include <algorithm>

#include "auth/token.h"

namespace berth::daemon {
namespace {

// Stopped assignments a node's feed keeps before dropping the oldest (a
// node asking from before them then gets its full list).
constexpr size_t kStoppedKept = 1024;
// Reports on tasks berthd has not published yet, kept until its first pass.
constexpr size_t kUnreadReportsKept = 100'000;

bool Ended(TaskState state) {
  return state == TaskState::kComplete || state == TaskState::kFailed ||
         state == TaskState::kRejected || state == TaskState::kShutdown;
}

}  // namespace

NodeExecutor::NodeExecutor(std::function<void()> wake_loop, NodeExecutorOptions options)
    : instance_(auth::NewSecret(8)), wake_loop_(std::move(wake_loop)), options_(options) {}

void NodeExecutor::SetNode(const std::string& node, bool berth_node) {
  std::lock_guard lock(mu_);
  if (berth_node)
    berth_nodes_.insert(node);
  else
    berth_nodes_.erase(node);
}

bool NodeExecutor::IsBerthNode(const std::string& node) const {
  std::lock_guard lock(mu_);
  return berth_nodes_.contains(node);
}

// A task without a command is simulated wherever it is placed.
bool NodeExecutor::OnBerthNode(const executor::TaskToRun& task) const {
  return task.process != nullptr && berth_nodes_.contains(task.node);
}

// A node's reports are trusted for its own tasks only.
const NodeExecutor::Reported* NodeExecutor::ReportOf(const executor::TaskToRun& task) const {
  auto it = reports_.find(task.id);
  return it != reports_.end() && it->second.node == task.node ? &it->second : nullptr;
}

// Stages a change unless the feed holds it already (the loop starts an
// assigned task again on each visit until its node reports).
void NodeExecutor::Stage(const executor::TaskToRun& task, bool run) {
  if (auto feed = feeds_.find(task.node); feed != feeds_.end())
    if (auto it = feed->second.tasks.find(task.id);
        it != feed->second.tasks.end() && it->second.run == run)
      return;
  staged_.push_back(
      {task.node, {task.id, run, std::make_shared<executor::ProcessSpec>(*task.process), 0}});
}

std::optional<std::string> NodeExecutor::Start(const executor::TaskToRun& task, Timestamp now) {
  std::lock_guard lock(mu_);
  if (!OnBerthNode(task)) return simulated_.Start(task, now);
  Stage(task, true);
  const Reported* reported = ReportOf(task);
  if (reported == nullptr) return std::nullopt;
  // Ended before berthd saw it run: Check says how, in the next pass.
  if (Ended(reported->report.state)) changed_.push_back(task.id);
  return "running on node '" + task.node + "'" +
         (reported->report.state == TaskState::kRunning && !reported->report.message.empty()
              ? ": " + reported->report.message
              : "");
}

std::optional<executor::Ended> NodeExecutor::Check(const executor::TaskToRun& task, Timestamp now,
                                                   std::optional<Timestamp>* due) {
  std::lock_guard lock(mu_);
  if (!OnBerthNode(task)) return simulated_.Check(task, now, due);
  Stage(task, true);
  const Reported* reported = ReportOf(task);
  if (reported == nullptr || !Ended(reported->report.state)) return std::nullopt;
  const TaskReport& r = reported->report;
  executor::Ended ended{r.state != TaskState::kComplete, r.ran_ms, r.message,
                        r.state == TaskState::kRejected};
  if (r.state == TaskState::kShutdown) ended.message = "stopped on its node: " + r.message;
  consumed_.push_back(task.id);  // forgotten once the pass that took it commits
  // Ended: off the node's list of what to run, so a full list never
  // starts it again.
  Stage(task, false);
  return ended;
}

// A task of a removed service comes without its template: what its node
// was told is what it stops.
void NodeExecutor::Stop(const executor::TaskToRun& task) {
  std::lock_guard lock(mu_);
  auto published = node_of_.find(task.id);
  if (published == node_of_.end() && !OnBerthNode(task)) return simulated_.Stop(task);
  const Feed& feed = feeds_[task.node];
  auto it = feed.tasks.find(task.id);
  if (it != feed.tasks.end() && !it->second.run) return;
  std::shared_ptr<const executor::ProcessSpec> process =
      it != feed.tasks.end() ? it->second.process
                             : std::make_shared<executor::ProcessSpec>(*task.process);
  staged_.push_back({task.node, {task.id, false, std::move(process), 0}});
  reports_.erase(task.id);
  if (stopping_.try_emplace(task.id, StopSent{task.node, ""}).second)
    stops_staged_.push_back(task.id);
}

bool NodeExecutor::Stopping(const std::string& id, const std::string& waiter) {
  std::lock_guard lock(mu_);
  auto it = stopping_.find(id);
  if (it == stopping_.end()) return false;
  it->second.waiter = waiter;
  return true;
}

std::vector<std::string> NodeExecutor::TakeChanged() {
  std::lock_guard lock(mu_);
  return std::exchange(changed_, {});
}

void NodeExecutor::Committed(int64_t revision) {
  std::vector<std::string> changed_nodes;
  bool first = false;
  {
    std::lock_guard lock(mu_);
    first = !ready_;
    if (on_published_) {
      for (const Staged& s : staged_) changed_nodes.push_back(s.node);
      std::sort(changed_nodes.begin(), changed_nodes.end());
      changed_nodes.erase(std::unique(changed_nodes.begin(), changed_nodes.end()),
                          changed_nodes.end());
    }
    // A pass that wrote nothing commits at the revision already published:
    // its assignments go one past it, so a node that saw that one sees them.
    published_ = std::max(revision, published_ + (staged_.empty() ? 0 : 1));
    for (const std::string& id : consumed_) reports_.erase(id);
    consumed_.clear();
    for (Staged& s : staged_) {
      Feed& feed = feeds_[s.node];
      feed.changed = published_;
      s.assignment.revision = published_;
      node_of_[s.assignment.task] = s.node;
      feed.tasks[s.assignment.task] = std::move(s.assignment);
      DropStopped(feed);
    }
    staged_.clear();
    stops_staged_.clear();
    ready_ = true;
  }
  published_cv_.notify_all();
  if (on_published_ && (first || !changed_nodes.empty())) on_published_(changed_nodes, first);
}

void NodeExecutor::Discarded() {
  std::lock_guard lock(mu_);
  staged_.clear();
  for (const std::string& id : stops_staged_) stopping_.erase(id);
  stops_staged_.clear();
  consumed_.clear();  // the next pass reads those reports again
}

// Keeps a node's feed bounded: the oldest stopped assignments go, and the
// floor rises to them.
void NodeExecutor::DropStopped(Feed& feed) {  // under mu_
  size_t stopped = 0;
  for (const auto& [id, a] : feed.tasks) stopped += !a.run;
  if (stopped <= 2 * kStoppedKept) return;
  std::vector<std::pair<int64_t, std::string>> oldest;
  for (const auto& [id, a] : feed.tasks)
    if (!a.run) oldest.emplace_back(a.revision, id);
  std::sort(oldest.begin(), oldest.end());
  oldest.resize(stopped - kStoppedKept);
  for (const auto& [revision, id] : oldest) {
    feed.floor = std::max(feed.floor, revision);
    feed.tasks.erase(id);
    node_of_.erase(id);
    stopping_.erase(id);
  }
}

AssignmentBatch NodeExecutor::Assignments(const std::string& node, const std::string& instance,
                                          int64_t since, Duration wait) {
  std::unique_lock lock(mu_);
  auto has_news = [&] {
    if (closed_) return true;
    if (!ready_) return false;
    if (instance != instance_) return true;
    auto feed = feeds_.find(node);
    return feed != feeds_.end() && (since < feed->second.floor || feed->second.changed > since);
  };
  // A waiting request holds one of the server's threads: beyond
  // max_waiting, a node is answered at once and told when to ask again.
  Duration poll_after{0};
  if (waiting_ < options_.max_waiting) {
    ++waiting_;
    published_cv_.wait_for(lock, wait, has_news);
    --waiting_;
  } else if (!has_news()) {
    poll_after = options_.busy_poll_after;
  }
  // Not ready: nothing to say yet, in the node's own terms, so that it
  // still asks as a node of its instance and gets its full list later.
  if (!ready_ || closed_) return {instance, since, false, {}, poll_after};
  AssignmentBatch batch{instance_, since, false, {}, poll_after};
  batch.revision = published_;
  auto feed = feeds_.find(node);
  batch.full = instance != instance_ || (feed != feeds_.end() && since < feed->second.floor);
  if (feed == feeds_.end()) return batch;
  for (const auto& [id, a] : feed->second.tasks)
    if (batch.full ? a.run : a.revision > since) batch.changes.push_back(a);
  std::sort(batch.changes.begin(), batch.changes.end(),
            [](const Assignment& a, const Assignment& b) { return a.task < b.task; });
  return batch;
}

// Kept: a report on a task the node was told to run. Before berthd's first
// pass is published (its feed is empty) any report is kept, up to a bound,
// for that pass to read. Refused: a task assigned to another node.
std::vector<std::string> NodeExecutor::Report(const std::string& node,
                                              std::vector<TaskReport> reports) {
  std::vector<std::string> refused;
  bool kept = false;
  {
    std::lock_guard lock(mu_);
    for (TaskReport& r : reports) {
      auto owner = node_of_.find(r.task);
      if (owner != node_of_.end() && owner->second != node) {
        refused.push_back(r.task);
        continue;
      }
      if (auto stop = stopping_.find(r.task);
          stop != stopping_.end() && stop->second.node == node && Ended(r.state)) {
        if (!stop->second.waiter.empty()) changed_.push_back(stop->second.waiter);
        kept = kept || !stop->second.waiter.empty();
        stopping_.erase(stop);
      }
      bool wanted = false;
      if (owner != node_of_.end())
        if (auto it = feeds_[node].tasks.find(r.task); it != feeds_[node].tasks.end())
          wanted = it->second.run;
      if (!wanted && (ready_ || reports_.size() >= kUnreadReportsKept)) continue;
      changed_.push_back(r.task);
      Reported& reported = reports_[r.task];
      reported = {node, std::move(r)};
      kept = true;
    }
  }
  if (kept) wake_loop_();
  return refused;
}

int64_t NodeExecutor::ChangedFor(const std::string& node) const {
  std::lock_guard lock(mu_);
  auto feed = feeds_.find(node);
  return feed == feeds_.end() ? 0 : feed->second.changed;
}

void NodeExecutor::Close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  published_cv_.notify_all();
}

}  // namespace berth::daemon
