#include "daemon/daemon.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "daemon/task_views.h"
#include "daemon/token.h"

namespace berth::daemon {
namespace {

using api::Answer;
using api::ApiRequest;
using api::ApiResponse;
using api::Json;
using api::WithBody;

// The answer to a removal: {"removed": id}, or why it failed.
Result<Json> Removed(const Status& status, const std::string& id) {
  if (!status.ok()) return status;
  return Json{{"removed", id}};
}

// Creates the directory if needed and checks that berthd can write there,
// by creating and removing a file: SQLite alone would say "disk I/O error"
// for a read-only directory.
Status MakeDataDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::Unavailable("cannot create data directory " + dir + ": " + std::strerror(errno));
  const std::string probe = dir + "/.write-test-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    return Status::Unavailable("cannot write in data directory " + dir + ": " +
                               std::strerror(errno) + " (berthd keeps its store there)");
  ::close(fd);
  ::unlink(probe.c_str());
  return Status::Ok();
}

// Reaches every configured agent once, so a typo fails at start.
Result<std::vector<std::unique_ptr<api::HttpAgentTransport>>> ConnectAgents(
    const DaemonOptions& options) {
  std::vector<std::unique_ptr<api::HttpAgentTransport>> agents;
  for (const std::string& server : options.agents) {
    Result<std::unique_ptr<api::HttpAgentTransport>> agent =
        api::HttpAgentTransport::Connect(server, options.agent_token);
    if (!agent.ok()) return agent.status();
    for (const auto& other : agents)
      if (other->agent_id() == (*agent)->agent_id())
        return Status::InvalidArgument("two agents have the id '" + other->agent_id() + "'");
    agents.push_back(std::move(*agent));
  }
  return agents;
}

// The transports berthd places through: the ones it connected to, or the
// ones its options give.
std::vector<threephase::AgentTransport*> TransportsOf(
    const std::vector<std::unique_ptr<api::HttpAgentTransport>>& connected,
    const DaemonOptions& options) {
  std::vector<threephase::AgentTransport*> transports = options.agent_transports;
  for (const auto& agent : connected) transports.push_back(agent.get());
  return transports;
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::Open(const DaemonOptions& options) {
  BERTH_RETURN_IF_ERROR(MakeDataDir(options.data_dir));
  std::shared_ptr<store::Store> store = options.store;
  store::EtcdStore* etcd = nullptr;
  if (store == nullptr && !options.etcd_endpoints.empty()) {
    store::EtcdStoreOptions etcd_options = options.etcd;
    etcd_options.client.endpoints = options.etcd_endpoints;
    Result<std::unique_ptr<store::EtcdStore>> opened = store::EtcdStore::Open(etcd_options);
    if (!opened.ok()) return opened.status();
    etcd = opened->get();
    store = std::move(*opened);
  } else if (store == nullptr) {
    Result<std::unique_ptr<store::SqliteStore>> sqlite =
        store::SqliteStore::Open(options.data_dir + "/berth.db");
    if (!sqlite.ok()) return sqlite.status();
    store = std::move(*sqlite);
  }
  const MissingToken missing =
      store->revision() > 0 && !options.new_token ? MissingToken::kRefuse : MissingToken::kCreate;
  Result<std::string> token = etcd != nullptr ? ShareToken(*store, options.data_dir)
                                              : LoadOrCreateToken(options.data_dir, missing);
  if (!token.ok()) return token.status();
  std::vector<std::unique_ptr<api::HttpAgentTransport>> connected;
  if (options.agent_transports.empty()) {
    Result<std::vector<std::unique_ptr<api::HttpAgentTransport>>> agents = ConnectAgents(options);
    if (!agents.ok()) return agents.status();
    connected = std::move(*agents);
  }
  std::unique_ptr<Daemon> daemon(
      new Daemon(std::move(store), etcd, std::move(*token), std::move(connected), options));
  BERTH_RETURN_IF_ERROR(daemon->server_->Start());
  if (daemon->leadership_ != nullptr) {
    const std::string self = options.host + ":" + std::to_string(daemon->port());
    daemon->leadership_->Start(
        options.leadership.id.empty() ? self : options.leadership.id,
        options.leadership.address.empty() ? "http://" + self : options.leadership.address);
  } else {
    BERTH_RETURN_IF_ERROR(daemon->dispatcher_->Load());
    daemon->StartLeading(0);
  }
  return daemon;
}

// A new leader reads everything at one revision (the loop's first pass) and
// gives every node a fresh grace period (the dispatcher's Load) before
// marking any down.
void Daemon::StartLeading(int64_t epoch) {
  if (epoch != 0) {
    if (Status loaded = dispatcher_->Load(); !loaded.ok())
      std::fprintf(stderr, "berthd: reading the nodes as the new leader: %s\n",
                   loaded.message().c_str());
    std::fprintf(stderr, "berthd: leading, epoch %lld\n", static_cast<long long>(epoch));
  }
  for (const auto& agent : connected_agents_) agent->set_epoch(epoch);
  dispatcher_->Start();
  if (agent_placement_) agent_placement_->Start([this] { loop_->Notify(); });
  loop_->Start();
}

Status Daemon::NotLeading() const {
  const Leadership::View view = leadership_->view();
  if (view.leader_address.empty())
    return Status::Unavailable("this berthd replica does not lead, and no leader is known yet");
  return Status::Unavailable("this berthd replica does not lead: the leader is " + view.leader_id +
                             " at " + view.leader_address);
}

Daemon::Daemon(std::shared_ptr<store::Store> store, store::EtcdStore* etcd, std::string token,
               std::vector<std::unique_ptr<api::HttpAgentTransport>> connected,
               const DaemonOptions& options)
    : store_(std::make_unique<store::WatchedStore>(std::move(store))),
      token_(std::move(token)),
      clock_(options.clock != nullptr ? *options.clock : system_clock_),
      nodes_(*store_),
      services_(*store_),
      classes_(*store_),
      jobs_(*store_, clock_),
      connected_agents_(std::move(connected)),
      agent_transports_(TransportsOf(connected_agents_, options)),
      agent_placement_(agent_transports_.empty()
                           ? nullptr
                           : std::make_unique<AgentPlacement>(agent_transports_, clock_,
                                                              options.agent_placement)),
      node_executor_(std::make_unique<NodeExecutor>(
          [this] { loop_->Notify(); },
          NodeExecutorOptions{std::max(1, options.threads / 2),
                              options.node_dispatcher.heartbeat_period})),
      dispatcher_(std::make_unique<NodeDispatcher>(
          *store_, nodes_, *node_executor_, clock_, [this] { loop_->Notify(); },
          options.node_dispatcher)),
      reconciler_(*store_, agent_placement_.get(), &clock_, options.reconciler,
                  options.executor != nullptr ? options.executor : node_executor_.get()),
      loop_(std::make_unique<ControlLoop>(reconciler_, clock_, options.loop)),
      lost_leadership_(options.lost_leadership),
      server_(std::make_unique<api::ApiServer>(api::ApiServerOptions{
          options.host, options.port, token_, options.max_body_bytes, options.threads,
          [this](std::string_view token) -> std::optional<api::Principal> {
            std::optional<api::Principal> who = dispatcher_->Authenticate(token);
            if (who || leading()) return who;
            // Only the leader holds the nodes' credentials; a node that
            // asks a follower is told where the leader is (node routes).
            return api::Principal{api::Principal::Kind::kUnverified, ""};
          }})) {
  if (etcd != nullptr) {
    store_->SetFence([this] { return leadership_->Fence(); });
    store_->OnChange([this] { loop_->Notify(); });
    // The id and address need the port the server got: the server starts
    // first (Open), and nothing asks leadership_ before that.
    leadership_ = std::make_unique<Leadership>(
        *etcd, clock_, options.leadership, [this](int64_t epoch) { StartLeading(epoch); },
        [this](const std::string& why) {
          if (lost_leadership_) return lost_leadership_(why);
          std::fprintf(stderr, "berthd: %s\n", why.c_str());
          loop_->Stop();
        });
  }
  AddRoutes();
}

Daemon::~Daemon() { Stop(); }

// The loop stops first: a request waiting for it to settle then returns at
// once instead of holding the server's shutdown for its whole timeout.
void Daemon::Stop() {
  if (leadership_) leadership_->Stop();  // nothing starts the loop after this
  loop_->Stop();
  if (agent_placement_) agent_placement_->Stop();
  dispatcher_->Stop();
  node_executor_->Close();  // answers the nodes' waiting requests, so the server can stop
  server_->Stop();
}

void Daemon::AddRoutes() {
  // First: cpp-httplib tries a method's routes in the order they were added
  // (a regular expression each), and heartbeats are the most frequent
  // requests (docs/benchmarks.md, "Heartbeats").
  AddBerthNodeRoutes();
  // ?wait=settled[&timeout=SECONDS] answers once the control loop has acted
  // on every change made before the request (503 if it has not in time).
  server_->Route("GET", "/v1/health", [this](const ApiRequest& r) { return Health(r); });
  server_->Route("GET", "/metrics",
                 [this](const ApiRequest&) -> Result<ApiResponse> { return Metrics(); });
  AddNodeRoutes();
  AddServiceRoutes();
  AddTaskRoutes();
  AddJobRoutes();
}

// ?wait=settled[&timeout=SECONDS] answers once the control loop has acted
// on every change made before the request (503 if it has not in time, or
// when this replica does not run the loop). With etcd the answer names the
// leader and its epoch.
Result<ApiResponse> Daemon::Health(const ApiRequest& r) {
  if (leadership_ != nullptr) {
    // One read of etcd: the revision shown, and waited for, is then the
    // latest of every replica's writes, not only this one's.
    Result<std::optional<store::StoredObject>> leader =
        store_->Get(Leadership::kKind, Leadership::kId);
    if (!leader.ok()) return leader.status();
  }
  if (r.Query("wait") == "settled") {
    char* rest = nullptr;
    const std::string timeout = r.Query("timeout");
    const double seconds = timeout.empty() ? 30 : std::strtod(timeout.c_str(), &rest);
    if (!timeout.empty() && (*rest != '\0' || !(seconds >= 0 && seconds <= 600)))
      return Status::InvalidArgument("timeout: expected seconds between 0 and 600, got '" +
                                     timeout + "'");
    if (!leading()) return NotLeading();
    const Duration wait{static_cast<int64_t>(seconds * 1000)};
    // A shared store's changes reach the loop through its feed: first wait
    // for the feed to bring what this request may follow.
    if (!store_->WaitDelivered(store_->revision(), wait) || !loop_->WaitSettled(wait))
      return Status::Unavailable("the control loop has not settled within " +
                                 (timeout.empty() ? std::string("30") : timeout) + " s");
  }
  Json health{{"status", "ok"}, {"revision", store_->revision()}};
  if (leadership_ != nullptr) {
    const Leadership::View view = leadership_->view();
    health["role"] = view.leading ? "leader" : "follower";
    health["leader"] =
        view.leader_id.empty()
            ? Json(nullptr)
            : Json{{"id", view.leader_id}, {"address", view.leader_address}, {"epoch", view.epoch}};
  } else {
    health["role"] = "single";
  }
  return Answer(std::move(health));
}

// Runs a write, and tells the control loop when it changed something.
template <typename Write>
Result<ApiResponse> Daemon::Changing(int status, Write write) {
  Result<Json> result = write();
  if (result.ok()) loop_->Notify();
  return Answer(std::move(result), status);
}

void Daemon::AddNodeRoutes() {
  constexpr const char* kNode = R"(/v1/nodes/([^/]+))";
  server_->Route("POST", "/v1/nodes", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return nodes_.Register(body); }); });
  });
  server_->Route("GET", "/v1/nodes", [this](const ApiRequest&) { return Answer(nodes_.List()); });
  server_->Route("GET", kNode, [this](const ApiRequest& r) -> Result<ApiResponse> {
    Result<Json> node = nodes_.Get(r.params[0]);
    if (!node.ok()) return node.status();
    Result<Json> usage = NodeUsage(*store_, *node);
    if (usage.ok()) node->update(*usage);
    return Answer(std::move(node));
  });
  server_->Route("PATCH", kNode, [this](const ApiRequest& r) {
    return WithBody(r, [&](const Json& body) {
      return Changing(200, [&] { return nodes_.Update(r.params[0], body); });
    });
  });
  server_->Route("POST", std::string(kNode) + "/drain", [this](const ApiRequest& r) {
    return Changing(200, [&] { return nodes_.Drain(r.params[0]); });
  });
  // The leader's: it revokes the credential it holds.
  server_->Route("DELETE", kNode, [this](const ApiRequest& r) -> Result<ApiResponse> {
    if (!leading()) return NotLeading();
    return Changing(200, [&] { return Removed(dispatcher_->Remove(r.params[0]), r.params[0]); });
  });
}

void Daemon::AddServiceRoutes() {
  constexpr const char* kService = R"(/v1/services/([^/]+))";
  server_->Route("POST", "/v1/services", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return services_.Create(body); }); });
  });
  server_->Route("GET", "/v1/services",
                 [this](const ApiRequest&) { return Answer(services_.List()); });
  server_->Route("GET", kService,
                 [this](const ApiRequest& r) { return Answer(services_.Get(r.params[0])); });
  server_->Route("PATCH", kService, [this](const ApiRequest& r) {
    return WithBody(r, [&](const Json& body) {
      return Changing(200, [&] { return services_.Update(r.params[0], body); });
    });
  });
  server_->Route("POST", std::string(kService) + "/rollback", [this](const ApiRequest& r) {
    return Changing(200, [&] { return services_.Rollback(r.params[0]); });
  });
  server_->Route("POST", std::string(kService) + "/rebalance", [this](const ApiRequest& r) {
    return Changing(200, [&] { return services_.Rebalance(r.params[0]); });
  });
  server_->Route("DELETE", kService, [this](const ApiRequest& r) {
    return Changing(200, [&] { return Removed(services_.Remove(r.params[0]), r.params[0]); });
  });
}

void Daemon::AddTaskRoutes() {
  constexpr const char* kTask = R"(/v1/tasks/([^/]+))";
  server_->Route("GET", "/v1/tasks", [this](const ApiRequest& r) {
    return Answer(ListTasks(*store_, {r.Query("service"), r.Query("node"), r.Query("state"),
                                      r.Query("desired_state")}));
  });
  server_->Route("GET", kTask,
                 [this](const ApiRequest& r) { return Answer(GetTask(*store_, r.params[0])); });
  server_->Route("GET", std::string(kTask) + "/why",
                 [this](const ApiRequest& r) { return Answer(WhyTask(*store_, r.params[0])); });
}

void Daemon::AddJobRoutes() {
  constexpr const char* kJob = R"(/v1/jobs/([^/]+))";
  server_->Route("POST", "/v1/jobs", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(201, [&] { return jobs_.Submit(body); }); });
  });
  server_->Route("GET", "/v1/jobs", [this](const ApiRequest&) { return Answer(jobs_.List()); });
  server_->Route("GET", kJob,
                 [this](const ApiRequest& r) { return Answer(jobs_.Get(r.params[0])); });
  server_->Route("DELETE", kJob, [this](const ApiRequest& r) {
    return Changing(200, [&] { return jobs_.Kill(r.params[0]); });
  });
  server_->Route("GET", "/v1/classes",
                 [this](const ApiRequest&) { return Answer(classes_.Get()); });
  server_->Route("PATCH", "/v1/classes", [this](const ApiRequest& r) {
    return WithBody(
        r, [&](const Json& body) { return Changing(200, [&] { return classes_.Update(body); }); });
  });
}

ApiResponse Daemon::Metrics() const {
  const api::ApiCounters& c = server_->counters();
  api::MetricsText metrics;
  metrics.Add("berth_http_requests_total", "HTTP requests answered.", c.requests.load());
  metrics.Add("berth_http_unauthorized_total", "Requests refused for a missing or wrong token.",
              c.unauthorized.load());
  metrics.Add("berth_http_client_errors_total", "Requests answered with a 4xx status.",
              c.client_errors.load());
  metrics.Add("berth_http_server_errors_total", "Requests answered with a 5xx status.",
              c.server_errors.load());
  metrics.Add("berth_control_passes_total", "Control-loop passes run.", loop_->passes());
  metrics.Add("berth_control_pass_microseconds_total",
              "Wall time spent in control-loop passes, commits included.",
              loop_->pass_nanos() / 1000);
  metrics.Add("berth_control_tasks_visited_total",
              "Tasks the control-loop passes looked at (a pass visits what changed).",
              loop_->tasks_visited());
  metrics.Add("berth_control_pass_errors_total", "Control-loop passes that failed.",
              loop_->pass_errors());
  if (agent_placement_) {
    const AgentPlacementCounters& a = agent_placement_->counters();
    metrics.Add("berth_agent_submitted_total", "Tasks handed to the three-phase scheduler.",
                a.submitted.load());
    metrics.Add("berth_agent_bound_total", "Tasks an agent bound.", a.bound.load());
    metrics.Add("berth_agent_failed_total", "Tasks no agent could place (all attempts).",
                a.failed.load());
    metrics.Add("berth_agent_released_total", "Bindings released on agents.", a.released.load());
    metrics.Add("berth_agent_release_errors_total", "Releases that did not reach their agent.",
                a.release_errors.load());
    metrics.Add("berth_agent_stray_released_total",
                "Bindings released because no stored task held them.", a.stray_released.load());
    metrics.Add("berth_agent_rebound_total",
                "Stored tasks an agent no longer held (restarted) that were bound again.",
                a.rebound.load());
    metrics.Add("berth_agent_lost_total",
                "Stored tasks an agent no longer held and could not bind again (failed).",
                a.lost.load());
    metrics.Add("berth_agent_skips_total",
                "Times an agent was left out for a while after failing calls in a row.",
                agent_placement_->agent_skips());
  }
  metrics.Add("berth_node_heartbeats_total", "Heartbeats of berth-node machines taken.",
              dispatcher_->heartbeats());
  metrics.Add("berth_store_lists_total",
              "Times the control loop read the whole state: when it starts leading, after a "
              "failed pass, after its change feed was lost.",
              store_->lists());
  metrics.Add("berth_store_revision", "Revision of the last committed store transaction.",
              static_cast<uint64_t>(store_->revision()), "gauge");
  return metrics.Response();
}

}  // namespace berth::daemon
