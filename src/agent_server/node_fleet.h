// NodeFleet: a berth-agent's own berth-node machines (docs/agent.md, "The
// agent's node fleet"). The agent hosts berthd's node dispatcher (the
// berth_dispatcher library: registration, credentials, heartbeats, the
// assignment feed and the node routes) on a SQLite store in its data
// directory, and keeps three things in step:
//  - the agent's nodes: a node that joins, changes, goes down or comes back
//    is upserted into agent::Agent, whose samples skip nodes that are not
//    ready and whose commits refuse them;
//  - the nodes' assignments: a bound task with a process is stored (kind
//    "binding") and then assigned to its node under its run id; a released
//    one is deleted and its node told to stop it;
//  - the runs feed berthd reads (Runs): each assigned run's latest state as
//    its node reported it, with a sequence number. A node that goes down
//    ends its runs as failed, so berthd replaces their tasks.
// At start the stored nodes, credentials and bindings are read back: a
// restarted agent re-learns its nodes and bindings, and its nodes, asking
// with the old instance, get their full lists, which hold what they run.
//
// Thread-safe: Commit, Release and Runs from the API's threads; a thread of
// its own applies the nodes' reports and changes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "agent/agent.h"
#include "api/http_server.h"
#include "core/time.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/registry/node_registry.h"
#include "store/store.h"

namespace berth::agent_server {

class NodeFleet {
 public:
  // Opens (or creates) `data_dir`/fleet.db and reads back the nodes, their
  // credentials and the bindings into `agent` (not owned; outlives this).
  // `ca` (null: plain HTTP) signs the nodes' certificates, and the agent
  // shows its certificate to their log servers.
  static Result<std::unique_ptr<NodeFleet>> Open(agent::Agent& agent, const std::string& data_dir,
                                                 daemon::NodeLifecycleOptions lifecycle = {},
                                                 const daemon::ClusterCa* ca = nullptr);
  ~NodeFleet();

  // The node routes (daemon/nodes/node_routes.h), GET /v1/runs and the task
  // logs its nodes serve (GET /v1/tasks/{run}/logs).
  void AddRoutes(api::ApiServer& server);
  // Maps a node's credential or the join token to its principal, for the
  // agent's ApiServer.
  std::optional<api::Principal> Authenticate(std::string_view token, api::Peer peer) const {
    return dispatcher_->Authenticate(token, peer);
  }
  void Start();
  void Stop();

  // Agent::Commit, then, when bound, the binding stored and its run
  // assigned. A binding that cannot be stored is given back (an error).
  agent::CommitResponse Commit(const agent::CommitRequest& request);
  // Agent::Release, the bindings deleted and their runs stopped.
  size_t Release(const std::vector<std::string>& task_ids);
  // The runs changed after `sequence` of `instance` (all when the instance
  // is not this one's), waiting up to `wait` for one.
  agent::RunsBatch Runs(const std::string& instance, int64_t sequence, Duration wait);

 private:
  struct Run {
    std::string task, node;
    std::shared_ptr<const executor::ProcessSpec> process;
    bool running = false, ended = false;
    agent::RunReport report = {};  // its latest state; sequence 0: none yet
    int64_t sequence = 0;
  };

  NodeFleet(agent::Agent& agent, std::unique_ptr<store::Store> store,
            daemon::NodeLifecycleOptions lifecycle, const daemon::ClusterCa* ca);
  Status Load();
  Status LoadBindings();
  void SyncNodes();     // under mu_
  void ApplyReports();  // under mu_
  void Publish();       // under mu_: the staged assignments go out
  // under mu_: the run's new state, for Runs
  void Record(Run& run, const std::string& id, TaskState state, std::string message,
              int64_t ran_ms);
  executor::TaskToRun ToRun(const std::string& run_id, const Run& run) const;
  void Loop();
  void Wake();
  Result<api::Json> TaskLogs(const api::ApiRequest& r) const;

  agent::Agent& agent_;
  std::unique_ptr<store::Store> store_;
  SystemClock clock_;
  daemon::NodeRegistry nodes_;
  std::unique_ptr<daemon::NodeExecutor> executor_;
  const daemon::ClusterCa* ca_;
  std::unique_ptr<daemon::NodeDispatcher> dispatcher_;
  const std::string instance_;

  mutable std::mutex mu_;
  std::condition_variable changed_;                      // runs_ changed, or stopping
  std::unordered_map<std::string, Run> runs_;            // by run id
  std::unordered_map<std::string, std::string> run_of_;  // by task id
  // The nodes of released runs, for their logs: the newest kReleasedKept.
  std::unordered_map<std::string, std::string> released_;  // by run id
  std::deque<std::string> released_order_;
  int64_t sequence_ = 0;

  std::atomic<bool> stopping_{false}, nodes_changed_{false};
  std::mutex wake_mu_;  // never held with mu_
  std::condition_variable wake_;
  bool woken_ = false;
  std::thread loop_;
};

}  // namespace berth::agent_server
