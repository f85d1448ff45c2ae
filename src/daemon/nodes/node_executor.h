// NodeExecutor: berthd's Executor (executor/executor.h) for tasks placed on
// berth-node machines, and the assignment feed those machines read
// (docs/agent.md, "Assignments"). Tasks on other nodes (registered through
// the API, simulated), and tasks whose template gives no command, go to a
// SimulatedExecutor as before.
//
// The control loop's calls are staged and published only once the pass's
// commit succeeded (Committed), so a node never runs what the store does
// not hold: Start stages "run this task", Stop "stop it", and a Check of a
// running task that the feed does not hold (the first pass after berthd
// started) stages it again. Each published assignment carries the revision
// of the commit that published it (one past the last published one when the
// pass wrote nothing, so that revisions only grow); a node asks for what
// changed after the revision it last saw, in the current `instance` (a
// berthd started again has a new one, and answers a node of the old one
// with its full list).
// Until the first pass after start has been published, a node's request
// waits: an empty full list would tell it to stop everything.
//
// Nodes report task states (Report); a report names its task in the next
// TakeChanged, and Start and Check return what it says: a task stays
// assigned until its node says it runs, and ends as the node says. A task
// told to stop is Stopping until its node reports its end.
//
// Thread-safety: the Executor methods and Committed/Discarded from the
// control loop's thread; SetNode, Assignments and Report from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/status.h"
#include "core/task.h"
#include "core/time.h"
#include "executor/executor.h"
#include "executor/simulated_executor.h"

namespace berth::daemon {

// What a node is told to do with one task.
struct Assignment {
  std::string task;
  bool run = true;                                       // false: stop it
  std::shared_ptr<const executor::ProcessSpec> process;  // how to run it; never null
  int64_t revision = 0;                                  // of the commit that published it
};

// A node's word on one of its tasks.
struct TaskReport {
  std::string task;
  TaskState state = TaskState::kRunning;  // running, complete, failed, rejected or shutdown
  std::string message;                    // e.g. "exit status 3"
  int64_t ran_ms = 0;
};

// The answer to a node's request for its assignments.
struct AssignmentBatch {
  std::string instance;
  int64_t revision = 0;  // ask for changes after this one next
  bool full = false;     // `changes` is every task the node should run: stop any other
  std::vector<Assignment> changes;
  // Ask again no sooner than this: berthd was too busy to hold the request
  // open (NodeExecutorOptions::max_waiting). 0: at once.
  Duration poll_after{0};
};

struct NodeExecutorOptions {
  // Assignment requests held open at once. Each holds one of berthd's HTTP
  // threads, so this stays below them (berthd: --threads / 2). Default 16.
  int max_waiting = 16;
  // When to ask again for a node answered at once because max_waiting
  // requests wait already. Default 5 s (the heartbeat period).
  Duration busy_poll_after = std::chrono::seconds(5);
};

class NodeExecutor final : public executor::Executor {
 public:
  // `wake_loop` is called (from a reporting thread) when a report arrives.
  explicit NodeExecutor(std::function<void()> wake_loop, NodeExecutorOptions options = {});

  // Whether `node` is a berth-node machine (registered by NodeDispatcher).
  void SetNode(const std::string& node, bool berth_node);
  bool IsBerthNode(const std::string& node) const;

  // executor::Executor, from the control loop.
  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp now) override;
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp now,
                                       std::optional<Timestamp>* due) override;
  void Stop(const executor::TaskToRun& task) override;
  bool Stopping(const std::string& id, const std::string& waiter) override;
  std::vector<std::string> TakeChanged() override;
  void Committed(int64_t revision) override;
  void Discarded() override;

  // The node's assignments after `since` of `instance`, waiting up to
  // `wait` (real time: the node's request deadline) for one when there is
  // none yet. Returns at once after Close.
  AssignmentBatch Assignments(const std::string& node, const std::string& instance, int64_t since,
                              Duration wait);
  // Records `node`'s reports on the tasks it runs for berthd; returns the
  // ids of those assigned to another node, which are refused. Reports on
  // tasks berthd stopped, saw end or never published are dropped.
  std::vector<std::string> Report(const std::string& node, std::vector<TaskReport> reports);
  // The last revision that changed `node`'s assignments (0: none yet), for
  // its heartbeat's answer: a node told to wait (poll_after) asks again
  // once this passes what it has.
  int64_t ChangedFor(const std::string& node) const;
  // Wakes every waiting Assignments call (berthd is stopping).
  void Close();
  // Called on the control loop's thread after each publish, outside the
  // executor's lock, with the nodes whose assignments changed; `all` at the
  // first publish, before which every node's request waited. For pushing
  // to node sessions: it must return at once. Set before the loop starts.
  using PublishedHook = std::function<void(const std::vector<std::string>& nodes, bool all)>;
  void OnPublished(PublishedHook hook) { on_published_ = std::move(hook); }

  const std::string& instance() const { return instance_; }

 private:
  // A node's published assignments, by task id.
  struct Feed {
    std::unordered_map<std::string, Assignment> tasks;
    int64_t floor = 0;    // assignments at or below it were dropped: an older `since` gets all
    int64_t changed = 0;  // the last revision that changed it
  };
  struct Staged {
    std::string node;
    Assignment assignment;
  };
  struct Reported {
    std::string node;
    TaskReport report;
  };

  bool OnBerthNode(const executor::TaskToRun& task) const;  // under mu_
  void Stage(const executor::TaskToRun& task, bool run);
  const Reported* ReportOf(const executor::TaskToRun& task) const;  // under mu_
  void DropStopped(Feed& feed);

  const std::string instance_;
  std::function<void()> wake_loop_;
  executor::SimulatedExecutor simulated_;
  mutable std::mutex mu_;
  std::condition_variable published_cv_;
  std::unordered_set<std::string> berth_nodes_;
  std::unordered_map<std::string, Feed> feeds_;           // by node
  std::unordered_map<std::string, std::string> node_of_;  // a published task's node
  std::vector<Staged> staged_;                            // loop thread only
  int64_t published_ = 0;                                 // the last revision published
  bool ready_ = false, closed_ = false;
  std::unordered_map<std::string, Reported> reports_;  // by task
  // Tasks told to stop whose node has not reported their end, by id: the
  // node, and the task waiting for that end ("": none yet).
  struct StopSent {
    std::string node, waiter;
  };
  std::unordered_map<std::string, StopSent> stopping_;
  std::vector<std::string> stops_staged_;  // this pass's additions to stopping_
  std::vector<std::string> consumed_;      // reports a pass took, forgotten when it commits
  const NodeExecutorOptions options_;
  int waiting_ = 0;  // Assignments calls waiting now
  std::vector<std::string> changed_;
  PublishedHook on_published_;
};

}  // namespace berth::daemon
