// Daemon: berthd's wiring. Opens the data directory (the SQLite store,
// unless DaemonOptions gives another, and the API token), registers the API
// routes (docs/api.md) and serves them.
//
// Wired: nodes, services, jobs, classes, tasks (with `why`), health and
// metrics; the control loop (store -> orchestrator -> fair-share admission
// -> placement -> commit -> executor, docs/berthd.md "How it is built")
// with either the full-view engine (over the nodes registered with berthd)
// or, when agents are given, the three-phase path through those
// berth-agent processes. The store, clock, agent transports and executor
// are DaemonOptions, so tests run the whole daemon on MemoryStore and a
// ManualClock.
//
// Open and Stop from one owning thread; the API runs on the server's threads.
#pragma once

#include <memory>
#include <string>

#include "api/http_agent_transport.h"
#include "api/http_server.h"
#include "core/status.h"
#include "daemon/ca/cluster_ca.h"
#include "daemon/events/event_log.h"
#include "daemon/ha/leadership.h"
#include "daemon/loop/agent_executor.h"
#include "daemon/loop/agent_placement.h"
#include "daemon/loop/control_loop.h"
#include "daemon/loop/reconciler.h"
#include "daemon/nodes/node_dispatcher.h"
#include "daemon/nodes/node_executor.h"
#include "daemon/nodes/node_sessions.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"
#include "store/watched_store.h"

namespace berth::daemon {

struct DaemonOptions {
  std::string data_dir = "berth-data";  // created (mode 0700) if absent
  // Make a new API token when the token file is missing although the store
  // holds data (without it, Open refuses: clients have the old token).
  bool new_token = false;
  std::string host = "127.0.0.1";
  int port = 7480;  // 0: any free port
  // The node sessions' gRPC port (NodeSessions, on `host`): 0, any free
  // one; -1 (the default), 7479, or any free one when `port` is 0. None
  // with insecure_http: nodes then poll over HTTP.
  int session_port = -1;
  // Node sessions open at once from one IP address (NodeSessionsOptions::
  // max_per_address); 0: no limit.
  int max_sessions_per_address = NodeSessionsOptions{}.max_per_address;
  // Serve plain HTTP instead of HTTPS (docs/security.md); refused unless
  // `host` is a loopback address. Nodes then join without certificates.
  bool insecure_http = false;
  // The CA (ClusterCa): the operator's root, the unlock key's file and the
  // life of the certificates berthd issues. data_dir is this one's.
  ClusterCaOptions ca;
  size_t max_body_bytes = 1 << 20;
  // HTTP worker threads. A write waits on its thread for the group commit
  // that makes it durable, so more threads let more writes share one fsync
  // (docs/benchmarks.md: 32 against 8 raised saturation by about half).
  int threads = 32;
  ControlLoopOptions loop;
  ReconcilerOptions reconciler;
  // "host:port" of berth-agent processes; empty: the full-view engine.
  std::vector<std::string> agents;
  std::string agent_token;  // the agents' bearer token
  // The agents' CA bundles (each agent's DATA_DIR/ca.pem, berthd --agent-ca):
  // agents are called over HTTPS and checked against them. "": plain HTTP.
  std::string agent_trust_pem;
  AgentPlacementOptions agent_placement;
  // The events kept for GET /v1/events (berthd --event-buffer).
  EventLogOptions events;
  // berth-node machines' heartbeats (docs/agent.md) and the graces of nodes
  // that are not ready, for the dispatcher and the control loop alike (this
  // one is used, not reconciler.lifecycle).
  NodeLifecycleOptions node_lifecycle;

  // High availability (docs/ha.md): with etcd endpoints, the store is etcd
  // (`etcd.prefix`, shared by every replica) instead of SQLite, and this
  // replica runs the control loop only while it leads.
  std::vector<std::string> etcd_endpoints;
  store::EtcdStoreOptions etcd;  // client.endpoints: set from etcd_endpoints
  LeadershipOptions leadership;  // id and address: default host:port
  // Called (on the leadership thread) when this replica stops leading;
  // null: the control loop stops and the replica serves as a follower.
  // berthd exits, so that its supervisor starts it clean.
  std::function<void(const std::string& why)> lost_leadership;

  // The seams (docs/architecture.md, "Seams"), set by tests; berthd leaves
  // them unset.
  // The store; null: SQLite in data_dir (berth.db). berthd must be its only
  // writer.
  std::shared_ptr<store::Store> store;
  // Time for the control loop, jobs and agent timers; null: the system
  // clock. Not owned; outlives the Daemon.
  const Clock* clock = nullptr;
  // Place through these (not owned) instead of connecting to `agents`.
  std::vector<threephase::AgentTransport*> agent_transports;
  // Runs placed tasks (not owned); null: berth-node machines run theirs
  // (NodeExecutor), the simulated executor the others.
  executor::Executor* executor = nullptr;
};

struct EventStreamRequest;  // routes/events.cc

class Daemon {
 public:
  // Opens the data directory and starts serving. Unavailable: the directory
  // cannot be written, or the store or port cannot be used (another berthd
  // holds it, or another process listens there); InvalidArgument: the store
  // or token file is not usable (a missing token file with a non-empty
  // store, see new_token), or two agents share an id.
  // Unavailable also when an agent cannot be reached at start.
  static Result<std::unique_ptr<Daemon>> Open(const DaemonOptions& options);
  ~Daemon();

  int port() const { return server_->port(); }
  // The node sessions' port; 0 without them (insecure_http).
  int session_port() const;
  // "https://host:port" (or http:// with insecure_http).
  std::string url() const;
  // What a client of this berthd trusts (the CA's bundle; nothing without
  // TLS), for tests and `berth up`.
  tls::Credentials client_tls() const;
  // The CA; null with insecure_http.
  const ClusterCa* ca() const { return ca_.get(); }
  const std::string& token() const { return token_; }
  // "a0 (127.0.0.1:7481)" for each agent placed through, for the start log.
  std::vector<std::string> agent_names() const;
  void Stop();
  // Waits until the control loop has acted on every change made so far.
  bool WaitSettled(Duration timeout) { return loop_->WaitSettled(timeout); }
  // Whether this replica runs the control loop (always, without etcd).
  bool leading() const { return leadership_ == nullptr || leadership_->view().leading; }
  // berth-node machines' registrations and heartbeats (heartbeat_bench
  // calls it in process).
  NodeDispatcher& dispatcher() { return *dispatcher_; }
  // The control loop, for tests that drive it on a ManualClock.
  const ControlLoop& loop() const { return *loop_; }
  ControlLoop& loop() { return *loop_; }
  // The changes GET /v1/events streams.
  const EventLog& events() const { return *events_; }
  // The control loop's counts (loop/counts.h) as its last pass left them,
  // where this replica runs the loop; null on a follower or before the
  // first pass.
  std::shared_ptr<const CountsSnapshot> Counts() const {
    return leading() ? reconciler_.counts() : nullptr;
  }

 private:
  Daemon(std::unique_ptr<store::WatchedStore> store, store::EtcdStore* etcd, std::string token,
         std::unique_ptr<ClusterCa> ca,
         std::vector<std::unique_ptr<api::HttpAgentTransport>> connected,
         const DaemonOptions& options);
  void AddRoutes(const DaemonOptions& options);
  // One file per resource under routes/ (nodes.cc, services.cc, tasks.cc,
  // jobs.cc, classes.cc, health.cc, berth_node_routes.cc).
  void AddNodeRoutes();
  void AddServiceRoutes();
  void AddTaskRoutes();
  void AddJobRoutes();
  void AddClassRoutes();
  void AddBerthNodeRoutes(const DaemonOptions& options);
  void AddCaRoutes();
  void AddEventRoutes();
  void AddSnapshotRoutes();
  void AddUiRoutes();
  Result<api::ApiResponse> Events(const api::ApiRequest& r);
  void StreamEvents(const EventStreamRequest& asked, const api::ApiResponse::Write& write);
  bool SendBatch(const EventStreamRequest& asked, const EventLog::Batch& batch, int64_t from,
                 const std::function<bool(const std::string&)>& send);
  Result<api::Json> TaskLogs(const api::ApiRequest& r);
  // The nodes of the connected agents (each with "agent"), and under
  // "unreachable" each agent that did not answer and why.
  api::Json AgentNodes();
  Result<api::Json> AgentTaskLogs(const std::string& agent, const std::string& id,
                                  const std::string& node, const std::string& run, int64_t tail,
                                  int64_t after);
  api::ApiResponse Metrics() const;
  // Runs a write, and tells the control loop when it changed something.
  template <typename Write>
  Result<api::ApiResponse> Changing(int status, Write write) {
    Result<api::Json> result = write();
    if (result.ok()) loop_->Notify();
    return api::Answer(std::move(result), status);
  }
  // The control loop and its helpers start (at once without etcd; once
  // elected with it).
  void StartLeading(int64_t epoch);
  // Why a follower cannot serve a leader's request, naming the leader.
  Status NotLeading() const;
  Result<api::ApiResponse> Health(const api::ApiRequest& r);

  std::unique_ptr<store::WatchedStore> store_;  // the loop watches it
  std::string token_;
  std::unique_ptr<ClusterCa> ca_;
  bool tls_;  // HTTPS (not insecure_http)
  std::string host_;
  SystemClock system_clock_;
  const Clock& clock_;  // options.clock or system_clock_
  // Shared with the store's commit sink (cleared as berthd stops).
  std::shared_ptr<EventLog> events_;
  std::atomic<int> event_streams_{0};
  int max_event_streams_;  // a quarter of the worker threads, at least 1
  NodeRegistry nodes_;
  ServiceRegistry services_;
  ClassRegistry classes_;
  JobRegistry jobs_;
  std::vector<std::unique_ptr<api::HttpAgentTransport>> connected_agents_;
  std::vector<threephase::AgentTransport*> agent_transports_;  // connected or given
  std::unique_ptr<AgentPlacement> agent_placement_;            // null without agents
  std::unique_ptr<NodeExecutor> node_executor_;
  // Tasks on agents that front berth-node machines; null without agents.
  std::unique_ptr<AgentExecutor> agent_executor_;
  std::unique_ptr<NodeDispatcher> dispatcher_;
  std::unique_ptr<NodeSessions> sessions_;  // null with insecure_http
  Reconciler reconciler_;
  std::unique_ptr<ControlLoop> loop_;
  std::function<void(const std::string&)> lost_leadership_;
  std::unique_ptr<Leadership> leadership_;  // null without etcd
  std::unique_ptr<api::ApiServer> server_;
};

}  // namespace berth::daemon
