#include "agent_server/node_fleet.h"

#include <cstdio>

#include "api/agent_codec.h"
#include "api/api_client.h"
#include "auth/token.h"
#include "daemon/nodes/node_routes.h"
#include "store/sqlite_store.h"

namespace berth::agent_server {
namespace {

using api::Json;

// Bindings are stored as the commit request that made them (by task id).
constexpr const char* kBindingKind = "binding";
// Released runs whose node is remembered, so that their logs stay readable.
constexpr size_t kReleasedKept = 100'000;

}  // namespace

Result<std::unique_ptr<NodeFleet>> NodeFleet::Open(agent::Agent& agent, const std::string& data_dir,
                                                   daemon::NodeLifecycleOptions lifecycle,
                                                   const daemon::ClusterCa* ca) {
  Result<std::unique_ptr<store::SqliteStore>> store =
      store::SqliteStore::Open(data_dir + "/fleet.db");
  if (!store.ok()) return store.status();
  std::unique_ptr<NodeFleet> fleet(new NodeFleet(agent, std::move(*store), lifecycle, ca));
  BERTH_RETURN_IF_ERROR(fleet->Load());
  return fleet;
}

NodeFleet::NodeFleet(agent::Agent& agent, std::unique_ptr<store::Store> store,
                     daemon::NodeLifecycleOptions lifecycle, const daemon::ClusterCa* ca)
    : agent_(agent),
      store_(std::move(store)),
      nodes_(*store_),
      executor_(std::make_unique<daemon::NodeExecutor>([this] { Wake(); })),
      ca_(ca),
      dispatcher_(std::make_unique<daemon::NodeDispatcher>(
          *store_, nodes_, *executor_, clock_,
          [this] {
            nodes_changed_ = true;
            Wake();
          },
          lifecycle, ca)),
      instance_(auth::NewSecret(8)) {}

NodeFleet::~NodeFleet() { Stop(); }

Status NodeFleet::Load() {
  BERTH_RETURN_IF_ERROR(dispatcher_->Load());
  std::lock_guard lock(mu_);
  SyncNodes();
  BERTH_RETURN_IF_ERROR(LoadBindings());
  Publish();  // nodes asking before this wait: an empty list would stop their tasks
  return Status::Ok();
}

// Binds each stored binding again (its node is known by now), and stages
// its run, so a node's full list holds what it runs.
Status NodeFleet::LoadBindings() {
  Result<std::vector<store::StoredObject>> stored = store_->List(kBindingKind);
  if (!stored.ok()) return stored.status();
  for (const store::StoredObject& b : *stored) {
    Result<agent::CommitRequest> request =
        api::DecodeCommitRequest(Json::parse(b.body, nullptr, false));
    const agent::CommitResponse bound =
        request.ok()
            ? agent_.Commit(*request)
            : agent::CommitResponse{agent::CommitOutcome::kError, request.status().message()};
    if (bound.outcome != agent::CommitOutcome::kBound) {
      std::fprintf(stderr, "berth-agent: the stored binding of task '%s' is dropped: %s\n",
                   b.id.c_str(), bound.reason.c_str());
      continue;
    }
    if (request->task.process == nullptr) continue;
    const std::string run = request->task.run();
    runs_[run] = Run{request->task.id, request->node_id, request->task.process};
    run_of_[request->task.id] = run;
    executor_->Start(ToRun(run, runs_[run]), clock_.Now());
  }
  return Status::Ok();
}

void NodeFleet::Start() {
  dispatcher_->Start();
  loop_ = std::thread([this] { Loop(); });
}

void NodeFleet::Stop() {
  {
    std::lock_guard lock(mu_);  // a Runs waiting sees it
    if (stopping_.exchange(true)) return;
  }
  Wake();
  changed_.notify_all();
  if (loop_.joinable()) loop_.join();
  dispatcher_->Stop();
  executor_->Close();
}

void NodeFleet::Wake() {
  {
    std::lock_guard lock(wake_mu_);
    woken_ = true;
  }
  wake_.notify_one();
}

void NodeFleet::Loop() {
  for (;;) {
    {
      std::unique_lock lock(wake_mu_);
      wake_.wait(lock, [&] { return woken_; });
      woken_ = false;
    }
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (nodes_changed_.exchange(false)) SyncNodes();
    ApplyReports();
  }
}

// Every stored node into the agent; the runs of a node that is no longer
// ready end as failed, and its node is told to stop them should it return.
void NodeFleet::SyncNodes() {
  Result<std::vector<store::StoredObject>> stored = store_->List("node");
  if (!stored.ok()) {
    std::fprintf(stderr, "berth-agent: reading the nodes: %s\n", stored.status().message().c_str());
    return;
  }
  bool stopped = false;
  for (const store::StoredObject& o : *stored) {
    Node node;
    if (Status decoded = daemon::DecodeStoredNode(Json::parse(o.body, nullptr, false), o.id, &node);
        !decoded.ok())
      continue;
    const bool ready = node.state == NodeState::kReady;
    const std::string state(ToString(node.state));
    if (Result<uint32_t> added = agent_.UpsertNode(std::move(node)); !added.ok())
      std::fprintf(stderr, "berth-agent: node '%s': %s\n", o.id.c_str(),
                   added.status().message().c_str());
    if (ready) continue;
    for (auto& [id, run] : runs_) {
      if (run.node != o.id || run.ended) continue;
      Record(run, id, TaskState::kFailed, "node '" + o.id + "' is " + state, 0);
      run.ended = true;
      executor_->Stop(ToRun(id, run));
      stopped = true;
    }
  }
  if (stopped) Publish();
}

// The runs its nodes reported on, read through the executor as berthd's
// control loop reads them: Start says when one runs, Check when it ended.
void NodeFleet::ApplyReports() {
  const Timestamp now = clock_.Now();
  bool checked = false;
  for (const std::string& id : executor_->TakeChanged()) {
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second.ended) continue;
    Run& run = it->second;
    const executor::TaskToRun task = ToRun(id, run);
    if (!run.running) {
      std::optional<std::string> message = executor_->Start(task, now);
      if (!message) continue;
      run.running = true;
      // berthd says where it runs: the node's own word is what is left.
      const std::string where = "running on node '" + run.node + "'";
      Record(run, id, TaskState::kRunning,
             message->starts_with(where + ": ") ? message->substr(where.size() + 2) : "", 0);
    }
    std::optional<Timestamp> due;
    std::optional<executor::Ended> ended = executor_->Check(task, now, &due);
    checked = true;
    if (!ended) continue;
    const TaskState state = ended->rejected ? TaskState::kRejected
                            : ended->failed ? TaskState::kFailed
                                            : TaskState::kComplete;
    Record(run, id, state, std::move(ended->message), ended->ran_ms);
    run.ended = true;
  }
  if (checked) Publish();
}

void NodeFleet::Publish() { executor_->Committed(store_->revision()); }

void NodeFleet::Record(Run& run, const std::string& id, TaskState state, std::string message,
                       int64_t ran_ms) {
  run.report = {id, run.node, state, std::move(message), ran_ms};
  run.sequence = ++sequence_;
  changed_.notify_all();
}

executor::TaskToRun NodeFleet::ToRun(const std::string& run_id, const Run& run) const {
  static const std::optional<executor::SimulatedRun> kNone;
  return {run_id, run.node, kNone, std::nullopt, run.process.get()};
}

agent::CommitResponse NodeFleet::Commit(const agent::CommitRequest& request) {
  agent::CommitResponse response = agent_.Commit(request);
  if (response.outcome != agent::CommitOutcome::kBound) return response;
  const std::string& task = request.task.id;
  Result<int64_t> stored = store_->Commit(
      {store::Write::Put(kBindingKind, task, api::EncodeCommitRequest(request).dump())});
  if (!stored.ok()) {
    agent_.Release(task);
    return {agent::CommitOutcome::kError,
            "agent " + agent_.id() + " could not store the binding: " + stored.status().message()};
  }
  if (request.task.process == nullptr) return response;
  std::lock_guard lock(mu_);
  const std::string run = request.task.run();
  Run& r = runs_[run] = Run{task, request.node_id, request.task.process};
  run_of_[task] = run;
  executor_->Start(ToRun(run, r), clock_.Now());
  Publish();
  return response;
}

size_t NodeFleet::Release(const std::vector<std::string>& task_ids) {
  const size_t released = agent_.Release(task_ids);
  std::vector<store::Write> deletes;
  for (const std::string& id : task_ids) deletes.push_back(store::Write::Delete(kBindingKind, id));
  if (Result<int64_t> done = store_->Commit(deletes); !done.ok())
    std::fprintf(stderr, "berth-agent: deleting released bindings: %s\n",
                 done.status().message().c_str());
  std::lock_guard lock(mu_);
  for (const std::string& id : task_ids) {
    auto run = run_of_.find(id);
    if (run == run_of_.end()) continue;
    if (auto it = runs_.find(run->second); it != runs_.end()) {
      executor_->Stop(ToRun(it->first, it->second));
      if (released_.emplace(it->first, it->second.node).second)
        released_order_.push_back(it->first);
      if (released_order_.size() > kReleasedKept) {
        released_.erase(released_order_.front());
        released_order_.pop_front();
      }
      runs_.erase(it);
    }
    run_of_.erase(run);
  }
  Publish();
  return released;
}

agent::RunsBatch NodeFleet::Runs(const std::string& instance, int64_t sequence, Duration wait) {
  std::unique_lock lock(mu_);
  const bool full = instance != instance_;
  changed_.wait_for(lock, wait, [&] { return stopping_ || full || sequence_ > sequence; });
  agent::RunsBatch batch{instance_, sequence_, full, 0, {}};
  for (const auto& [id, run] : runs_)
    if (run.sequence > 0 && (full || run.sequence > sequence)) batch.runs.push_back(run.report);
  for (uint32_t i = 0; i < agent_.nodes().size(); ++i)
    batch.nodes += agent_.nodes().Read(
        i, [](const agent::AgentNode& n) { return n.info.node().state == NodeState::kReady; });
  return batch;
}

void NodeFleet::AddRoutes(api::ApiServer& server) {
  daemon::NodeRouteHooks hooks;
  hooks.admit = [this](const api::ApiRequest& r) -> Status {
    const agent::NodesCache& nodes = agent_.nodes();
    if (nodes.size() < nodes.capacity() || r.principal.kind == api::Principal::Kind::kNode)
      return Status::Ok();
    return Status::Conflict("agent " + agent_.id() + " holds " + std::to_string(nodes.size()) +
                            " nodes, its most (berth-agent --max-nodes)");
  };
  daemon::AddDispatcherRoutes(server, *dispatcher_, *executor_, std::move(hooks));
  server.Route("GET", "/v1/runs", [this](const api::ApiRequest& r) -> Result<api::ApiResponse> {
    Result<int64_t> sequence = api::QueryCount(r, "sequence", 0);
    if (!sequence.ok()) return sequence.status();
    Result<int64_t> wait_ms = api::QueryCount(r, "wait_ms", 0);
    if (!wait_ms.ok()) return wait_ms.status();
    const Duration wait = std::min<Duration>(Duration{*wait_ms}, std::chrono::seconds(60));
    return api::Answer(api::EncodeRunsBatch(Runs(r.Query("instance"), *sequence, wait)));
  });
  server.Route("GET", R"(/v1/tasks/([^/]+)/logs)",
               [this](const api::ApiRequest& r) { return api::Answer(TaskLogs(r)); });
}

// Asks the run's node for its log lines, with the node's credential.
Result<Json> NodeFleet::TaskLogs(const api::ApiRequest& r) const {
  Result<int64_t> tail = api::QueryCount(r, "tail", 0);
  if (!tail.ok()) return tail.status();
  Result<int64_t> after = api::QueryCount(r, "after", 0);
  if (!after.ok()) return after.status();
  const std::string& id = r.params[0];
  std::string node;
  {
    std::lock_guard lock(mu_);
    if (auto run = runs_.find(id); run != runs_.end())
      node = run->second.node;
    else if (auto gone = released_.find(id); gone != released_.end())
      node = gone->second;
    else
      return Status::NotFound("agent " + agent_.id() + " has no run '" + id + "'");
  }
  Result<Json> stored = nodes_.Get(node);
  std::optional<std::string> credential = dispatcher_->CredentialHashOf(node);
  if (!stored.ok() || !credential)
    return Status::NotFound("node '" + node + "' of agent " + agent_.id() + " is gone");
  const std::string endpoint = stored->value("berth_node", Json::object()).value("endpoint", "");
  // Over TLS the agent shows its certificate (role agent), which the node's
  // log server asks for; without TLS, the node's credential.
  api::ApiClient client(endpoint, ca_ ? "" : *credential, 10,
                        ca_ ? ca_->client_credentials() : tls::Credentials{});
  return client.Call("GET", "/v1/tasks/" + id + "/logs?tail=" + std::to_string(*tail) +
                                "&after=" + std::to_string(*after));
}

}  // namespace berth::agent_server
