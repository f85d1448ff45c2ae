// NodeAgent: berth-node, the program on each machine that runs tasks
// (docs/agent.md, "berth-node"). It joins berthd, heartbeats, takes its
// assignments and runs them as processes (executor::ProcessExecutor),
// reports their states in batches, and serves their logs to berthd.
//
// Threads, each with its own HTTP client:
//  - heartbeat: POST /v1/node/heartbeat every period berthd names; a
//    credential berthd does not know (its store was replaced) registers
//    the node again with the join token; the answer says when this node's
//    assignments last changed, which wakes a sync that berthd told to wait;
//  - sync: GET /v1/node/assignments as a long poll keyed by the revision
//    and berthd instance it last saw, so a node that was cut off gets what
//    changed since, and one berthd does not know (restarted) gets its full
//    list; each answer goes to the supervisor;
//  - supervisor: the only caller of the ProcessExecutor. It applies
//    assignments (start, stop; with a full list, stops what is not in it
//    and reports every task it has again), collects ended tasks, and sends
//    the reports that berthd has not acknowledged;
//  - the log server (api::ApiServer), for berthd only: over TLS, its
//    requests come with berthd's certificate (role manager, or agent for a
//    berth-agent); on plain HTTP, with this node's credential.
// TLS (docs/security.md): berthd's URL is https:// unless it says http://.
// The node joins as NodeTls says, presents its certificate on every call,
// and renews it from the heartbeat loop.
// Its data directory holds node.json (its node id, credential and machine
// id, so a restarted berth-node is the same node) and tasks/ (the task
// directories, executor/task_dir.h; those of the last 100 ended tasks that
// berthd acknowledged are kept, with their logs). Restarted, it adopts the
// tasks still running and reports how the others ended.
//
// Stop (SIGTERM) stops the threads and leaves the tasks running: the next
// berth-node adopts them. Start and Stop from one owning thread.
//
// Removed from the cluster (berthd answers any call 403 node_removed,
// docs/agent.md "Removing a node"): berthd has replaced this node's tasks
// elsewhere and refuses the node from then on, so it stops asking, stops
// its tasks (SIGTERM, then SIGKILL after their grace, by their supervisors)
// and calls on_removed; removed() says why. Told so at Start, it stops the
// tasks its data directory holds and Start fails with the reason.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "api/api_client.h"
#include "api/http_server.h"
#include "api/json_fields.h"
#include "core/node.h"
#include "core/status.h"
#include "core/task.h"
#include "core/time.h"
#include "executor/process_executor.h"
#include "node/node_session.h"
#include "node/node_tls.h"

namespace berth::node {

struct NodeAgentOptions {
  // berthd's URL ("http://host:port"), or several replicas' separated by
  // commas (docs/ha.md): the node asks the next when one does not lead.
  // Required.
  std::string join;
  std::string join_token;  // the cluster's node join token; needed until the node has joined
  std::string data_dir = "berth-node-data";  // created (mode 0700) when missing
  std::string hostname;                      // the node's id; "": the machine's hostname
  Labels engine_labels;                      // --label K=V
  std::string listen_host = "0.0.0.0";       // the log server's address
  int listen_port = 7482;                    // 0: any free port (7481 is berth-agent's)
  // The address berthd reaches the log server on; "": the local address
  // that routes to berthd.
  std::string advertise;
  std::string exec_path;  // the berth-exec program. Required.
  // How long one assignments request waits for a change. Default 25 s.
  Duration poll_wait = std::chrono::seconds(25);
  // How often the supervisor looks for ended tasks. Default 200 ms.
  Duration check_every = std::chrono::milliseconds(200);
  // Called once, on one of the agent's threads, when berthd says this node
  // was removed from the cluster, once its tasks were told to stop.
  std::function<void()> on_removed;
};

// berth-exec beside the running program (as installed, and as built).
std::string ExecNextToThisProgram();

class NodeAgent {
 public:
  // Joins (or rejoins) berthd, adopts the tasks of the data directory and
  // starts the threads. InvalidArgument: a refused token, or a node id held
  // by another machine; Unavailable: berthd or the data directory cannot
  // be reached.
  static Result<std::unique_ptr<NodeAgent>> Start(NodeAgentOptions options, const Clock& clock);
  ~NodeAgent();
  void Stop();

  const std::string& node() const { return node_; }
  int log_port() const { return server_->port(); }
  // berthd's word that this node was removed from the cluster, with how to
  // join again; "" until berthd said so.
  std::string removed() const;

 private:
  struct LocalTask {
    std::shared_ptr<const executor::ProcessSpec> process;  // null: adopted (its shim has it)
    bool running = false;
    bool stopping = false;
    api::Json last_report;  // what it last reported: sent again with a full list
  };

  NodeAgent(NodeAgentOptions options, const Clock& clock);
  Status LoadIdentity();  // before the threads start
  std::string IdentityPath() const;
  Result<api::Json> Description() const;
  Status Register();
  // Trusts berthd's CA (the join token's digest) when it does not yet.
  Status EnsureTrust();
  // A new certificate, when NodeTls says it is due.
  void RenewIfDue(const std::string& ca_digest);
  // The client of one call to the replica asked now.
  api::ApiClient Client(const std::string& token, int read_timeout = 30) const;
  Status StartLogServer();
  Result<std::shared_ptr<tls::ServerTls>> NewLogServerTls() const;
  Result<api::ApiResponse> LogsOf(const api::ApiRequest& r) const;
  std::string Credential() const;
  void HeartbeatLoop();
  void TakeHeartbeat(const Result<api::Json>& beat, bool renew = true);
  void ConnectSession(std::unique_ptr<NodeSession>& connecting);
  NodeSessionOptions SessionOptions(int port);
  void RunSession(std::unique_ptr<NodeSession> connected);
  void SyncLoop();
  Duration TakeBatch(Result<api::Json> batch);
  void SuperviseLoop();
  // Supervisor thread only:
  void Apply(const api::Json& batch);
  void StartTask(const std::string& id, std::shared_ptr<const executor::ProcessSpec> process);
  void StopTask(const std::string& id);
  void CollectEnded();
  bool Collect(const std::string& id);  // whether the task ended (and was reported so)
  void Report(const std::string& id, TaskState state, const std::string& message,
              int64_t ran_ms = 0);
  void SendReports();
  void Acknowledged(const std::string& id);
  // false once stopping or removed
  bool Waiting(std::unique_lock<std::mutex>& lock, Duration d);
  // berthd refused this node as removed (`refused`: 403 node_removed): the
  // threads stop asking. Any thread.
  void TakeRemoval(const Status& refused);
  // Stops every running task (supervisor thread, or before the threads
  // start); returns how many.
  size_t StopAll();
  // The berthd replica asked now.
  std::string Server() const { return servers_[asked_.load() % servers_.size()]; }
  // Calls berthd; moves on to the next replica when one does not answer,
  // does not lead (503) or answers for an older leader's epoch than one
  // this node has seen (a deposed leader), trying each once.
  Result<api::Json> Ask(const std::string& method, const std::string& path, const api::Json& body,
                        const std::string& token);
  // Refuses an answer of an epoch older than the newest seen.
  Status CheckEpoch(const api::Json& answer);

  NodeAgentOptions options_;
  std::vector<std::string> servers_;  // options_.join, split
  std::atomic<size_t> asked_{0};      // the one asked now (index into servers_)
  std::atomic<int64_t> epoch_{0};     // the newest leader epoch seen
  const Clock& clock_;
  std::string node_, machine_;  // set before the threads start
  mutable std::mutex credential_mu_;
  std::string credential_;
  std::atomic<Duration> heartbeat_period_{std::chrono::seconds(5)};
  std::atomic<int> session_port_{0};  // berthd's node sessions, as its last answer said; 0: none
  bool secure_ = true;                // berthd speaks HTTPS (its URL is not http://)
  NodeTls tls_;
  std::shared_ptr<tls::ServerTls> server_tls_;  // the log server's; null without TLS

  // Whether tasks' limits hold here (PrepareLimits, before any thread of
  // this agent starts); before executor_, which takes its cgroup root.
  const executor::LimitsSupport limits_;
  executor::ProcessExecutor executor_;
  std::map<std::string, LocalTask> tasks_;   // supervisor thread
  std::map<std::string, api::Json> unsent_;  // the latest report of each task; supervisor thread
  std::deque<std::string> acknowledged_;     // ended tasks berthd has heard of, oldest first

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<api::Json> batches_;         // from sync to the supervisor
  std::shared_ptr<api::ApiClient> poll_;  // the sync thread's call in flight, cancelled by Stop
  // berthd's instance and the revision of this node's last change, as its
  // last heartbeat answer said: a node berthd told to wait asks again then.
  std::pair<std::string, int64_t> news_;
  // The instance and revision of the last assignments taken, polled or pushed.
  std::pair<std::string, int64_t> seen_;
  std::shared_ptr<NodeSession> session_;  // the open session, or null
  bool session_logged_ = false;           // heartbeat thread
  bool session_failing_ = false;          // heartbeat thread: the last session did not open
  std::string ca_digest_;                 // under mu_: the CA's, as berthd last said
  bool stopping_ = false;
  std::string removed_;  // TakeRemoval's: why berthd refuses this node
  std::vector<std::thread> threads_;
  std::unique_ptr<api::ApiServer> server_;
};

}  // namespace berth::node
