#include "daemon/daemon.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/api_client.h"
#include "auth/token.h"
#include "daemon/ha/shared_token.h"
#include "daemon/registry/job_parts.h"
#include "daemon/registry/task_views.h"

namespace berth::daemon {
namespace {

using api::Answer;
using api::ApiRequest;
using api::ApiResponse;
using api::Json;
using api::WithBody;

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
// berthd presents its own certificate to them (an agent started with
// --manager-ca requires it).
Result<std::vector<std::unique_ptr<api::HttpAgentTransport>>> ConnectAgents(
    const DaemonOptions& options, const ClusterCa* ca) {
  api::AgentClientIdentity identity;
  if (ca != nullptr) identity = {ca->cert_file(), ca->key_file()};
  std::vector<std::unique_ptr<api::HttpAgentTransport>> agents;
  for (const std::string& server : options.agents) {
    Result<std::unique_ptr<api::HttpAgentTransport>> agent = api::HttpAgentTransport::Connect(
        server, options.agent_token, options.agent_trust_pem, identity);
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

// The reconciler's options with the node graces berthd was given.
ReconcilerOptions WithLifecycle(ReconcilerOptions options, const NodeLifecycleOptions& lifecycle) {
  options.lifecycle = lifecycle;
  return options;
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::Open(const DaemonOptions& options) {
  if (options.insecure_http && !api::IsLoopbackHost(options.host))
    return Status::InvalidArgument(
        "--insecure-http serves plain HTTP, which only a loopback address may (--host " +
        options.host + " is not one): tokens would cross the network in clear");
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
  // Whether the store held data before this start (the CA is stored at the
  // first start, after this is read).
  const auth::MissingToken missing = store->revision() > 0 && !options.new_token
                                         ? auth::MissingToken::kRefuse
                                         : auth::MissingToken::kCreate;
  ClusterCaOptions ca_options = options.ca;
  ca_options.data_dir = options.data_dir;
  ca_options.server_files = true;  // berthd's node sessions read them
  if (!options.leadership.address.empty())
    ca_options.names.push_back(api::HostOf(options.leadership.address));
  // The CA writes through the store the control loop watches (a rotation
  // is a commit like any other).
  auto watched = std::make_unique<store::WatchedStore>(std::move(store));
  // On etcd, the API's lists come from memory (docs/ha.md, "Reads").
  watched->CacheReads({"node", "service", "task", "job", kJobTasksKind, "class", "update"});
  std::unique_ptr<ClusterCa> ca;
  if (!options.insecure_http) {
    Result<std::unique_ptr<ClusterCa>> opened = ClusterCa::Open(*watched, ca_options);
    if (!opened.ok()) return opened.status();
    ca = std::move(*opened);
  }
  Result<std::string> token = etcd != nullptr ? ShareToken(*watched, options.data_dir, ca.get())
                                              : auth::LoadOrCreateToken(options.data_dir, missing);
  if (!token.ok()) return token.status();
  std::vector<std::unique_ptr<api::HttpAgentTransport>> connected;
  if (options.agent_transports.empty()) {
    Result<std::vector<std::unique_ptr<api::HttpAgentTransport>>> agents =
        ConnectAgents(options, ca.get());
    if (!agents.ok()) return agents.status();
    connected = std::move(*agents);
  }
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(watched), etcd, std::move(*token),
                                            std::move(ca), std::move(connected), options));
  BERTH_RETURN_IF_ERROR(daemon->server_->Start());
  if (daemon->sessions_) BERTH_RETURN_IF_ERROR(daemon->sessions_->Start());
  if (daemon->ca_) daemon->ca_->Start(daemon->clock_);
  if (daemon->leadership_ != nullptr) {
    const std::string self = options.host + ":" + std::to_string(daemon->port());
    daemon->leadership_->Start(
        options.leadership.id.empty() ? self : options.leadership.id,
        options.leadership.address.empty() ? daemon->url() : options.leadership.address);
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
    // The root another leader may have rotated since this replica's last
    // Sync, before anything is signed with it.
    if (ca_ != nullptr)
      if (Status synced = ca_->Sync(); !synced.ok())
        std::fprintf(stderr, "berthd: reading the CA as the new leader: %s\n",
                     synced.message().c_str());
    if (Status loaded = dispatcher_->Load(); !loaded.ok())
      std::fprintf(stderr, "berthd: reading the nodes as the new leader: %s\n",
                   loaded.message().c_str());
    std::fprintf(stderr, "berthd: leading, epoch %lld\n", static_cast<long long>(epoch));
  }
  for (const auto& agent : connected_agents_) agent->set_epoch(epoch);
  dispatcher_->Start();
  if (agent_placement_) agent_placement_->Start([this] { loop_->Notify(); });
  if (agent_executor_) agent_executor_->Start();
  loop_->Start();
}

Status Daemon::NotLeading() const {
  const Leadership::View view = leadership_->view();
  if (view.leader_address.empty())
    return Status::Unavailable("this berthd replica does not lead, and no leader is known yet");
  return Status::Unavailable("this berthd replica does not lead: the leader is " + view.leader_id +
                             " at " + view.leader_address);
}

Daemon::Daemon(std::unique_ptr<store::WatchedStore> store, store::EtcdStore* etcd,
               std::string token, std::unique_ptr<ClusterCa> ca,
               std::vector<std::unique_ptr<api::HttpAgentTransport>> connected,
               const DaemonOptions& options)
    : store_(std::move(store)),
      token_(std::move(token)),
      ca_(std::move(ca)),
      tls_(!options.insecure_http),
      host_(options.host),
      clock_(options.clock != nullptr ? *options.clock : system_clock_),
      events_(std::make_shared<EventLog>(clock_, options.events)),
      max_event_streams_(std::min(std::max(1, options.threads / 4), options.threads - 1)),
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
                              options.node_lifecycle.heartbeat_period})),
      agent_executor_(agent_transports_.empty()
                          ? nullptr
                          : std::make_unique<AgentExecutor>(
                                options.executor != nullptr ? *options.executor : *node_executor_,
                                agent_transports_, [this] { loop_->Notify(); })),
      dispatcher_(std::make_unique<NodeDispatcher>(
          *store_, nodes_, *node_executor_, clock_, [this] { loop_->Notify(); },
          options.node_lifecycle, tls_ ? ca_.get() : nullptr)),
      reconciler_(*store_, agent_placement_.get(), &clock_,
                  WithLifecycle(options.reconciler, options.node_lifecycle),
                  agent_executor_ != nullptr    ? agent_executor_.get()
                  : options.executor != nullptr ? options.executor
                                                : node_executor_.get()),
      loop_(std::make_unique<ControlLoop>(reconciler_, clock_, options.loop)),
      lost_leadership_(options.lost_leadership),
      server_(std::make_unique<api::ApiServer>(api::ApiServerOptions{
          options.host, options.port, token_, options.max_body_bytes, options.threads,
          [this](std::string_view token, api::Peer peer) -> std::optional<api::Principal> {
            std::optional<api::Principal> who = dispatcher_->Authenticate(token, peer);
            if (who || leading()) return who;
            // Only the leader holds the nodes' credentials; a node that
            // asks a follower is told where the leader is (node routes).
            return api::Principal{api::Principal::Kind::kUnverified, ""};
          },
          tls_ ? ca_->server_tls() : nullptr, ""})) {
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
  AddRoutes(options);
  if (options.events.capacity == 0) return;  // no events kept
  const size_t keep_last = options.events.capacity;
  const Status following = store_->SetCommitSink(
      {EventLog::Records, keep_last,
       [events = events_](int64_t revision, const std::vector<store::Change>& changes, size_t cut) {
         events->Record(revision, changes, cut);
       },
       [events = events_](int64_t through) { events->Missed(through); }});
  // Without it now, each GET /v1/events tries again.
  if (!following.ok())
    std::fprintf(stderr, "berthd: following the store for events: %s\n",
                 following.message().c_str());
}

Daemon::~Daemon() { Stop(); }

int Daemon::session_port() const { return sessions_ ? sessions_->port() : 0; }

std::string Daemon::url() const {
  // A wildcard address is reached on loopback, which berthd's certificate names.
  const std::string host = host_ == "0.0.0.0" ? "127.0.0.1" : host_ == "::" ? "::1" : host_;
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls_ ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) + ":" +
         std::to_string(port());
}

tls::Credentials Daemon::client_tls() const {
  if (!tls_) return {};
  return {"", "", ca_->trust_pem()};
}

// The loop stops first: a request waiting for it to settle then returns at
// once instead of holding the server's shutdown for its whole timeout.
void Daemon::Stop() {
  events_->Close();                      // event streams end, so the server can stop
  if (leadership_) leadership_->Stop();  // nothing starts the loop after this
  loop_->Stop();
  if (agent_placement_) agent_placement_->Stop();
  if (agent_executor_) agent_executor_->Stop();
  if (sessions_) sessions_->Stop();
  dispatcher_->Stop();
  node_executor_->Close();  // answers the nodes' waiting requests, so the server can stop
  server_->Stop();
  store_->ClearCommitSink();  // the event log's clock goes with this
  if (ca_) ca_->Stop();
}

void Daemon::AddRoutes(const DaemonOptions& options) {
  // First: cpp-httplib tries a method's routes in the order they were added
  // (a regular expression each), and heartbeats are the most frequent
  // requests (docs/benchmarks.md, "Heartbeats").
  AddBerthNodeRoutes(options);
  // ?wait=settled[&timeout=SECONDS] answers once the control loop has acted
  // on every change made before the request (503 if it has not in time).
  server_->Route("GET", "/v1/health", [this](const ApiRequest& r) { return Health(r); });
  server_->Route("GET", "/metrics",
                 [this](const ApiRequest&) -> Result<ApiResponse> { return Metrics(); });
  AddNodeRoutes();
  AddServiceRoutes();
  AddTaskRoutes();
  AddJobRoutes();
  AddClassRoutes();
  AddCaRoutes();
  AddEventRoutes();
  AddSnapshotRoutes();
  AddUiRoutes();
}

}  // namespace berth::daemon
