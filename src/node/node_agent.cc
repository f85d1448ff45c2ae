#include "node/node_agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <tuple>

#include "api/api_client.h"
#include "api/process_codec.h"
#include "auth/token.h"
#include "executor/log_files.h"
#include "executor/task_dir.h"
#include "node/host_facts.h"
#include "node/node_session.h"
#include "session/grpc_defaults.h"
#include "tls/authority.h"
#include "tls/seal.h"

namespace berth::node {
namespace {

using api::Json;

constexpr const char* kIdentityFile = "node.json";
constexpr const char* kReportedFile =
    "reported";  // in a task's directory: its end was acknowledged
// How long Start keeps trying to reach berthd before it gives up.
constexpr Duration kJoinPatience = std::chrono::seconds(60);
const std::optional<executor::SimulatedRun> kNoRun;
// Ended tasks whose directories (and logs) a node keeps.
constexpr size_t kEndedKept = 100;

void Log(const std::string& line) {
  std::printf("berth-node: %s\n", line.c_str());
  std::fflush(stdout);
}

// The shape berth-node reads of an assignments answer (docs/api.md), so
// that reading it cannot throw.
bool IsBatch(const Json& b) {
  if (!b.is_object() || !b.value("instance", Json()).is_string() ||
      !b.value("revision", Json()).is_number_integer() || !b.value("full", Json()).is_boolean() ||
      !b.value("tasks", Json()).is_array() ||
      !b.value("poll_after_ms", Json(0)).is_number_integer())
    return false;
  for (const Json& t : b["tasks"])
    if (!t.is_object() || !t.value("task", Json()).is_string() ||
        !t.value("desired_state", Json()).is_string())
      return false;
  return true;
}

bool IsUnauthorized(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument && s.message().rfind("unauthorized", 0) == 0;
}

// berthd's answer to a node removed from the cluster: 403 node_removed,
// which api::ApiClient gives as "node_removed: <why>".
const std::string kRemovedPrefix = std::string(api::kNodeRemovedCode) + ": ";

bool IsRemoved(const Status& s) {
  return s.code() == StatusCode::kPermissionDenied && s.message().starts_with(kRemovedPrefix);
}

// The host and port of "http://host:port".
// "http://a:1,http://b:2" -> both; never empty.
std::vector<std::string> SplitServers(const std::string& join) {
  std::vector<std::string> servers;
  for (size_t start = 0; start <= join.size();) {
    const size_t comma = std::min(join.find(',', start), join.size());
    // A URL without a scheme is HTTPS: plain HTTP only when it says so.
    if (comma > start) servers.push_back(api::WithScheme(join.substr(start, comma - start), true));
    start = comma + 1;
  }
  if (servers.empty()) servers.push_back(join);
  return servers;
}

std::pair<std::string, int> HostPort(const std::string& url) {
  std::string rest = url.substr(url.find("://") == std::string::npos ? 0 : url.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  const size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return {rest, 80};
  return {rest.substr(0, colon), std::atoi(rest.c_str() + colon + 1)};
}

}  // namespace

std::string ExecNextToThisProgram() {
  char self[4096] = {};
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "berth-exec";
  const std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "berth-exec";
}

NodeAgent::NodeAgent(NodeAgentOptions options, const Clock& clock)
    : options_(std::move(options)),
      servers_(SplitServers(options_.join)),
      clock_(clock),
      secure_(servers_.empty() || servers_[0].rfind("http://", 0) != 0),
      tls_(options_.data_dir),
      limits_(executor::PrepareLimits()),
      executor_([this] {
        executor::ProcessExecutorOptions o;
        o.tasks_dir = options_.data_dir + "/tasks";
        o.shim_path = options_.exec_path;
        o.cgroup_root = limits_.root;
        o.cgroup_v1_parents = limits_.v1_parents;
        o.pids_limits = limits_.pids;
        return o;
      }()) {}

NodeAgent::~NodeAgent() { Stop(); }

Result<std::unique_ptr<NodeAgent>> NodeAgent::Start(NodeAgentOptions options, const Clock& clock) {
  if (::mkdir(options.data_dir.c_str(), 0700) != 0 && errno != EEXIST)
    return Status::Unavailable("cannot create data directory " + options.data_dir + ": " +
                               std::strerror(errno));
  std::unique_ptr<NodeAgent> agent(new NodeAgent(std::move(options), clock));
  BERTH_RETURN_IF_ERROR(agent->LoadIdentity());
  BERTH_RETURN_IF_ERROR(agent->StartLogServer());
  const Status joined = agent->Register();
  if (!joined.ok() && agent->removed().empty()) return joined;
  Result<std::vector<executor::AdoptedTask>> adopted = agent->executor_.Adopt();
  if (!adopted.ok()) return adopted.status();
  if (!joined.ok()) {
    // Removed: berthd replaced the tasks this node left running.
    for (const executor::AdoptedTask& t : *adopted) agent->tasks_[t.id].running = t.running;
    if (const size_t stopped = agent->StopAll(); stopped > 0)
      Log("stopped the " + std::to_string(stopped) + " task(s) this removed node left running");
    return joined;
  }
  for (const executor::AdoptedTask& t : *adopted) {
    agent->tasks_[t.id].running = true;
    if (!t.running) {
      agent->Collect(t.id);  // it ended while no berth-node watched
      continue;
    }
    Log("adopted task " + t.id + ", still running");
    agent->Report(t.id, TaskState::kRunning, "adopted by berth-node after its restart");
  }
  agent->threads_.emplace_back([a = agent.get()] { a->HeartbeatLoop(); });
  agent->threads_.emplace_back([a = agent.get()] { a->SyncLoop(); });
  agent->threads_.emplace_back([a = agent.get()] { a->SuperviseLoop(); });
  return agent;
}

void NodeAgent::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    if (poll_ != nullptr) poll_->Cancel();
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  if (server_) server_->Stop();
  executor::ReleaseLimits(limits_);
}

std::string NodeAgent::Credential() const {
  std::lock_guard lock(credential_mu_);
  return credential_;
}

std::string NodeAgent::removed() const {
  std::lock_guard lock(mu_);
  return removed_;
}

void NodeAgent::TakeRemoval(const Status& refused) {
  std::string why = refused.message();
  if (why.starts_with(kRemovedPrefix)) why.erase(0, kRemovedPrefix.size());
  why += "; here: rm " + IdentityPath();
  {
    std::lock_guard lock(mu_);
    if (!removed_.empty()) return;
    removed_ = why;
    if (poll_ != nullptr) poll_->Cancel();
    Log("berthd refuses this node: " + why);  // before the supervisor's word on it
  }
  wake_.notify_all();
}

size_t NodeAgent::StopAll() {
  size_t stopped = 0;
  for (auto& [id, task] : tasks_)
    if (task.running && !task.stopping) {
      StopTask(id);
      ++stopped;
    }
  return stopped;
}

// The node's identity is kept in node.json; a data directory is one node.
Status NodeAgent::LoadIdentity() {
  Json identity = Json::object();
  if (std::optional<std::string> text = executor::ReadSmallFile(IdentityPath())) {
    identity = Json::parse(*text, nullptr, false);
    if (!identity.is_object())
      return Status::InvalidArgument(IdentityPath() + " is not valid JSON");
  }
  node_ = identity.value("node", "");
  const std::string wanted = options_.hostname.empty()
                                 ? (node_.empty() ? DetectHost().hostname : node_)
                                 : options_.hostname;
  if (!node_.empty() && wanted != node_)
    return Status::InvalidArgument("the data directory " + options_.data_dir +
                                   " belongs to node '" + node_ + "', not '" + wanted +
                                   "': give each node its own --data-dir");
  node_ = wanted;
  machine_ = identity.value("machine", auth::NewSecret(16));
  credential_ = identity.value("credential", "");
  Result<bool> certified = tls_.Load();
  return certified.status();
}

std::string NodeAgent::IdentityPath() const { return options_.data_dir + "/" + kIdentityFile; }

// What the machine tells berthd of itself.
Result<Json> NodeAgent::Description() const {
  const HostFacts host = DetectHost();
  const auto [berthd_host, berthd_port] = HostPort(Server());
  std::string address = options_.advertise;
  if (address.empty()) {
    Result<std::string> local = LocalAddressTowards(berthd_host, berthd_port);
    if (!local.ok()) return local.status();
    address = *local;
  }
  Json body = {
      {"hostname", node_},
      {"machine", machine_},
      {"resources", {{"cpu", std::to_string(host.milli_cpu) + "m"}, {"memory", host.memory_bytes}}},
      {"platform", {{"os", host.os}, {"arch", host.arch}}},
      {"address", address},
      {"endpoint", address + ":" + std::to_string(server_->port())},
      {"limits",
       {{"enforced", limits_.enforced},
        {"reason", limits_.reason},
        {"cgroup", limits_.enforced ? "v" + std::to_string(limits_.cgroup_version) : ""},
        {"pids", limits_.pids},
        {"pids_reason", limits_.pids_reason}}},
      {"version", BERTH_VERSION}};
  if (!options_.engine_labels.empty()) body["engine_labels"] = options_.engine_labels;
  return body;
}

// Registers with the node's credential, or the join token when it has
// none or berthd no longer knows it (the node was removed). Retries while
// berthd cannot be reached, for kJoinPatience.
Status NodeAgent::Register() {
  Result<Json> body = Description();
  if (!body.ok()) return body.status();
  const Timestamp give_up = clock_.Now() + kJoinPatience;
  std::string credential = Credential();
  while (true) {
    const bool with_credential = !credential.empty();
    if (secure_) {
      Status trusted = EnsureTrust();
      if (trusted.code() == StatusCode::kUnavailable && clock_.Now() < give_up) {
        std::unique_lock lock(mu_);
        if (!Waiting(lock, std::chrono::seconds(1))) return Status::Unavailable("stopped");
        continue;
      }
      BERTH_RETURN_IF_ERROR(trusted);
      Result<std::string> csr = tls_.NewCsr(node_);
      if (!csr.ok()) return csr.status();
      (*body)["csr"] = *csr;
    }
    Result<Json> joined =
        Ask("POST", "/v1/node/register", *body, with_credential ? credential : options_.join_token);
    if (joined.ok() && secure_) {
      Status accepted = tls_.Accept(joined->value("certificate", ""), joined->value("ca", ""));
      if (accepted.ok() && server_tls_) accepted = server_tls_->Update(tls_.credentials());
      if (!accepted.ok()) return accepted;
    }
    if (joined.ok()) {
      // A node registering again keeps its credential (berthd has only its hash).
      credential = joined->value("credential", credential);
      {
        std::lock_guard lock(credential_mu_);
        credential_ = credential;
      }
      if (Result<Duration> period = ParseDuration(joined->value("heartbeat_period", "5s"));
          period.ok())
        heartbeat_period_ = *period;
      const Json identity = {{"node", node_}, {"machine", machine_}, {"credential", credential}};
      // It holds the node's credential.
      BERTH_RETURN_IF_ERROR(
          executor::WriteFileAtomically(IdentityPath(), identity.dump() + "\n", 0600));
      Log("joined " + Server() + " as node '" + node_ + "' (logs served on " +
          (*body)["endpoint"].get<std::string>() +
          (secure_ ? "; mutual TLS, certificate from CA " + tls_.root_digest().substr(0, 12) : "") +
          ")");
      return Status::Ok();
    }
    if (IsRemoved(joined.status())) {
      TakeRemoval(joined.status());
      return Status::PermissionDenied(removed());
    }
    if (with_credential && IsUnauthorized(joined.status()) && !options_.join_token.empty()) {
      credential.clear();
      continue;
    }
    if (IsUnauthorized(joined.status()))
      return Status::InvalidArgument(
          "berthd refused the " +
          std::string(with_credential ? "node's credential" : "join token") + " (" +
          joined.status().message() + "): give the node token with --token-file");
    if (joined.status().code() != StatusCode::kUnavailable || clock_.Now() >= give_up)
      return joined.status();
    std::unique_lock lock(mu_);
    if (!Waiting(lock, std::chrono::seconds(1))) return Status::Unavailable("stopped");
  }
}

Status NodeAgent::StartLogServer() {
  api::ApiServerOptions server;
  server.host = options_.listen_host;
  server.port = options_.listen_port;
  server.token = auth::NewSecret();  // nobody has it: berthd comes with the node's credential
  server.threads = 4;
  server.authenticate = [this](std::string_view token,
                               api::Peer peer) -> std::optional<api::Principal> {
    // Over TLS, berthd's certificate (or a berth-agent's) is who may read;
    // on plain HTTP, the node's credential.
    if (secure_)
      return peer != nullptr && (peer->identity.role == tls::kRoleManager ||
                                 peer->identity.role == tls::kRoleAgent)
                 ? std::optional<api::Principal>(api::Principal{})
                 : std::nullopt;
    // berthd keeps only the credential's hash, and presents that.
    const std::string credential = Credential();
    if (credential.empty() || token != tls::HashSecret(credential)) return std::nullopt;
    return api::Principal{};
  };
  if (secure_) {
    Result<std::shared_ptr<tls::ServerTls>> made = NewLogServerTls();
    if (!made.ok()) return made.status();
    server_tls_ = *made;
    server.tls = server_tls_;
  }
  server_ = std::make_unique<api::ApiServer>(server);
  server_->Route(
      "GET", R"(/v1/tasks/([^/]+)/logs)",
      [this](const api::ApiRequest& r) -> Result<api::ApiResponse> { return LogsOf(r); });
  return server_->Start();
}

// The log server's credentials: the node's certificate, or until the node
// has one (its first join, which needs the server's port first), one from a
// throwaway CA that nobody trusts, replaced once the node joins.
Result<std::shared_ptr<tls::ServerTls>> NodeAgent::NewLogServerTls() const {
  if (tls_.has_certificate()) return tls::ServerTls::Make(tls_.credentials());
  const Timestamp now = std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  Result<tls::CertificateAuthority> ca = tls::CertificateAuthority::Create("unjoined", now);
  if (!ca.ok()) return ca.status();
  Result<tls::KeyAndCert> own = ca->Issue({{node_, tls::kRoleNode, "unjoined"}, {}, now});
  if (!own.ok()) return own.status();
  return tls::ServerTls::Make({own->cert_pem, own->key_pem, ca->cert_pem()});
}

Status NodeAgent::EnsureTrust() {
  if (tls_.has_trust()) return Status::Ok();
  const std::string digest = JoinTokenDigest(options_.join_token);
  if (digest.empty())
    return Status::InvalidArgument(
        "the join token carries no CA digest, so this node cannot check berthd's certificate: "
        "take the token from `berth node token` of a berthd serving HTTPS (or join an "
        "--insecure-http berthd with an http:// URL)");
  return tls_.TrustFrom(Server(), digest);
}

void NodeAgent::RenewIfDue(const std::string& ca_digest) {
  if (!secure_ || !tls_.Due(ca_digest)) return;
  Result<std::string> csr = tls_.NewCsr(node_);
  Result<Json> renewed =
      csr.ok() ? Ask("POST", "/v1/node/certificate", Json{{"csr", *csr}}, Credential())
               : Result<Json>(csr.status());
  Status accepted = renewed.ok()
                        ? tls_.Accept(renewed->value("certificate", ""), renewed->value("ca", ""))
                        : renewed.status();
  if (accepted.ok() && server_tls_) accepted = server_tls_->Update(tls_.credentials());
  if (!accepted.ok()) return Log("cannot renew the node's certificate: " + accepted.message());
  Log("renewed the node's certificate" +
      std::string(ca_digest.empty() ? "" : " (CA " + ca_digest.substr(0, 12) + ")"));
}

api::ApiClient NodeAgent::Client(const std::string& token, int read_timeout) const {
  tls::Credentials tls = secure_ ? tls_.credentials() : tls::Credentials{};
  // With the join token the machine joins anew: a certificate it kept from
  // an earlier identity (a removed node's, denied) would only refuse it.
  if (token == options_.join_token) tls.cert_pem = tls.key_pem = "";
  return api::ApiClient(Server(), token, read_timeout, tls);
}

// The log lines of a task, as berthd's GET /v1/tasks/{id}/logs passes them on.
Result<api::ApiResponse> NodeAgent::LogsOf(const api::ApiRequest& r) const {
  const std::string& id = r.params[0];
  if (!executor::IsValidTaskDirName(id)) return Status::InvalidArgument("invalid task id");
  const uint64_t after = std::strtoull(r.Query("after").c_str(), nullptr, 10);
  const size_t tail = std::strtoull(r.Query("tail").c_str(), nullptr, 10);
  const std::string dir = executor_.LogDir(id);
  Result<std::vector<executor::LogLine>> lines = executor::ReadLog(dir, after, tail);
  if (!lines.ok()) {
    if (lines.status().code() == StatusCode::kNotFound)
      return Status::NotFound("node '" + node_ + "' has no logs of task '" + id + "'");
    return lines.status();
  }
  Json out = Json::array();
  for (const executor::LogLine& line : *lines)
    out.push_back(
        {{"seq", line.seq}, {"time", line.time_ns}, {"stream", line.stream}, {"text", line.text}});
  struct stat info {};
  const bool ended = ::stat((dir + "/" + executor::kExitFile).c_str(), &info) == 0;
  return api::ApiResponse{200, Json{{"lines", std::move(out)}, {"ended", ended}}, "", ""};
}

// Returns false once the agent stops or berthd removed the node; waits `d`
// otherwise (or less, woken).
bool NodeAgent::Waiting(std::unique_lock<std::mutex>& lock, Duration d) {
  clock_.WaitUntil(lock, wake_, clock_.Now() + d,
                   [this] { return stopping_ || !removed_.empty(); });
  return !stopping_ && removed_.empty();
}

// Over TLS, once berthd's answers name a session port, the node connects
// to it while its heartbeats go on as requests, so that a slow connection
// or handshake never costs it its grace; once connected, heartbeats go on
// the session (RunSession) for as long as it lasts. When a session ends
// (or cannot be made), heartbeats go as requests again, which also find
// the leader again.
void NodeAgent::HeartbeatLoop() {
  bool failing = false;
  std::unique_ptr<NodeSession> connecting;
  std::unique_lock lock(mu_);
  while (Waiting(lock, heartbeat_period_)) {
    lock.unlock();
    if (connecting && connecting->Connecting() == NodeSession::Progress::kReady) {
      RunSession(std::move(connecting));
    } else {
      Result<Json> beat = Ask("POST", "/v1/node/heartbeat", nullptr, Credential());
      if (beat.ok() && failing) Log("heartbeats reach berthd again");
      if (!beat.ok() && !failing && !IsRemoved(beat.status()))
        Log("heartbeat failed: " + beat.status().message());
      failing = !beat.ok();
      TakeHeartbeat(beat);
      ConnectSession(connecting);
    }
    lock.lock();
  }
}

// Starts connecting when an answer named a session port, and gives the
// connection up to half a period now: the next heartbeat is due a period
// after this wait, well within the grace (two periods at least).
void NodeAgent::ConnectSession(std::unique_ptr<NodeSession>& connecting) {
  const int port = session_port_.exchange(0);
  if (connecting && connecting->Connecting() == NodeSession::Progress::kFailed) {
    if (!session_failing_)
      Log("cannot open a node session with " + connecting->target() +
          " (connection or TLS handshake failed); heartbeats go as requests");
    session_failing_ = true;
    connecting.reset();
    return;  // and again after the next answer that names a port
  }
  if (port <= 0 || !secure_) return;
  if (!connecting) connecting = NodeSession::Connect(SessionOptions(port));
  if (connecting->WaitConnected(heartbeat_period_.load() / 2)) RunSession(std::move(connecting));
}

// A heartbeat's answer, from a request or a session. Only the heartbeat
// thread renews the certificate (`renew`); a session's reader records the
// CA digest, which that thread checks after its next heartbeat.
void NodeAgent::TakeHeartbeat(const Result<Json>& beat, bool renew) {
  if (!beat.ok() && IsRemoved(beat.status())) return TakeRemoval(beat.status());
  if (!beat.ok() && IsUnauthorized(beat.status())) {
    Log("berthd no longer knows this node's credential: joining again");
    if (Status joined = Register(); !joined.ok()) Log("cannot join again: " + joined.message());
    return;
  }
  if (!beat.ok()) return;
  if (renew) RenewIfDue(beat->value("ca_digest", ""));
  // berthd may have restarted with another period.
  if (Result<Duration> period = ParseDuration(beat->value("heartbeat_period", ""));
      period.ok() && period->count() > 0)
    heartbeat_period_ = *period;
  if (beat->value("session_port", Json()).is_number_integer())
    session_port_ = beat->value("session_port", 0);
  std::lock_guard told(mu_);
  ca_digest_ = beat->value("ca_digest", "");
  news_ = {beat->value("instance", ""), beat->value("assignments_revision", int64_t{0})};
  wake_.notify_all();
}

// A session's target and handlers: pushed assignments go to TakeBatch,
// heartbeat answers to TakeHeartbeat (the CA digest, without renewing).
NodeSessionOptions NodeAgent::SessionOptions(int port) {
  NodeSessionOptions o;
  o.target = session::HostPort(api::HostOf(Server()), port);
  o.tls = tls_.credentials();
  o.credential = Credential();
  o.on_assignments = [this](Json batch) { TakeBatch(Result<Json>(std::move(batch))); };
  o.on_heartbeat = [this](Json beat) {
    if (!beat.is_object()) return;
    if (Status current = CheckEpoch(beat); !current.ok()) return;
    TakeHeartbeat(beat, false);
  };
  o.on_end = [this] {
    std::lock_guard lock(mu_);
    wake_.notify_all();
  };
  return o;
}

// One session, connected, with the replica asked, until it ends: heartbeats every
// period on it, assignments pushed on it (to the supervisor, as the sync
// loop's), reports sent on it (SendReports). The sync loop waits meanwhile.
void NodeAgent::RunSession(std::unique_ptr<NodeSession> connected) {
  std::pair<std::string, int64_t> seen;
  {
    std::lock_guard lock(mu_);
    seen = seen_;
  }
  connected->Start(seen.first, seen.second);
  session_failing_ = false;
  std::shared_ptr<NodeSession> session = std::move(connected);
  std::unique_lock lock(mu_);
  session_ = session;
  if (poll_ != nullptr) poll_->Cancel();  // the session carries the assignments now
  if (!session_logged_)
    Log("node session open with berthd at " + session->target() + " (gRPC, mutual TLS)");
  session_logged_ = true;
  auto over = [&] { return stopping_ || !removed_.empty() || session->ended(); };
  std::string digest = ca_digest_;
  while (!over()) {
    lock.unlock();
    (void)session->Heartbeat();
    // berthd's answer carries a body only when it changed: the certificate's
    // renewal is checked here, with the CA digest it said last.
    RenewIfDue(digest);
    lock.lock();
    digest = ca_digest_;
    clock_.WaitUntil(lock, wake_, clock_.Now() + heartbeat_period_.load(), over);
  }
  session_.reset();
  const bool stopping = stopping_;
  wake_.notify_all();  // the sync loop asks again
  lock.unlock();
  const Status ended = session->Close();
  session_port_ = 0;  // as the next answer says (berthd may have restarted on another)
  if (stopping) return;
  Log("node session ended: " + ended.message());
  session_logged_ = false;
  if (ended.code() == StatusCode::kUnavailable) ++asked_;  // maybe not the leader any more
  TakeHeartbeat(ended);
}

void NodeAgent::SyncLoop() {
  const int read_timeout = static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(options_.poll_wait).count() + 15);
  std::unique_lock lock(mu_);
  while (!stopping_ && removed_.empty()) {
    // A session pushes the assignments: no request while it lasts.
    wake_.wait(lock, [&] { return stopping_ || !removed_.empty() || session_ == nullptr; });
    if (stopping_ || !removed_.empty()) break;
    auto client = std::make_shared<api::ApiClient>(Client(Credential(), read_timeout));
    poll_ = client;
    const auto [instance, since] = seen_;
    lock.unlock();
    Result<Json> batch = client->Call(
        "GET", "/v1/node/assignments?instance=" + instance + "&since=" + std::to_string(since) +
                   "&wait_ms=" + std::to_string(options_.poll_wait.count()));
    if (!batch.ok() && batch.status().code() == StatusCode::kUnavailable) ++asked_;
    const Duration poll_after = TakeBatch(batch);
    lock.lock();
    poll_.reset();
    if (stopping_) break;
    if (!batch.ok() || !IsBatch(*batch)) {
      Waiting(lock, std::chrono::seconds(1));  // berthd is away: try again shortly
      continue;
    }
    // berthd is busy: ask again when a heartbeat says something changed,
    // or after poll_after at the latest.
    if (poll_after.count() > 0) {
      const auto [seen_instance, seen_since] = seen_;
      clock_.WaitUntil(lock, wake_, clock_.Now() + poll_after, [&] {
        return stopping_ || news_.first != seen_instance || news_.second > seen_since;
      });
    }
  }
}

// A batch of assignments, polled or pushed: to the supervisor. Returns the
// batch's poll_after.
Duration NodeAgent::TakeBatch(Result<Json> batch) {
  if (batch.ok()) {
    if (Status current = CheckEpoch(*batch); !current.ok()) batch = current;
  }
  if (!batch.ok()) {
    if (IsRemoved(batch.status())) TakeRemoval(batch.status());
    return Duration{0};
  }
  if (!IsBatch(*batch)) {
    Log("berthd sent assignments this berth-node cannot read: " + batch->dump().substr(0, 200));
    return Duration{0};
  }
  std::lock_guard lock(mu_);
  // A poll cancelled as a session opened may answer after a push: only a
  // newer batch (or another instance's) moves what the node has seen.
  const bool newer = (*batch)["instance"] != seen_.first || (*batch)["revision"] > seen_.second;
  if (newer) seen_ = {(*batch)["instance"], (*batch)["revision"]};
  const Duration poll_after{batch->value("poll_after_ms", int64_t{0})};
  if ((*batch)["full"] || !(*batch)["tasks"].empty()) {
    batches_.push_back(std::move(*batch));
    wake_.notify_all();
  }
  return poll_after;
}

void NodeAgent::SuperviseLoop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (!removed_.empty()) {
      // berthd replaced this node's tasks elsewhere: none runs on here.
      lock.unlock();
      Log("removed from the cluster: stopping its " + std::to_string(StopAll()) +
          " running task(s); berth-node no longer calls berthd");
      if (options_.on_removed) options_.on_removed();
      return;
    }
    std::deque<Json> batches = std::exchange(batches_, {});
    lock.unlock();
    for (const Json& batch : batches) Apply(batch);
    CollectEnded();
    SendReports();
    lock.lock();
    if (batches_.empty()) Waiting(lock, options_.check_every);
  }
}

void NodeAgent::Apply(const Json& batch) {
  std::set<std::string> listed;
  for (const Json& t : batch["tasks"]) {
    const std::string id = t.value("task", "");
    if (t.value("desired_state", "") != "running") {
      StopTask(id);
      continue;
    }
    listed.insert(id);
    std::optional<executor::ProcessSpec> process;
    if (!api::DecodeProcessSpec(t.value("process", Json::object()), "process", &process).ok())
      process.reset();
    StartTask(
        id, process ? std::make_shared<const executor::ProcessSpec>(std::move(*process)) : nullptr);
  }
  if (!batch.value("full", false)) return;
  // berthd (restarted) sent everything this node should run: stop the rest,
  // and tell it again how the listed tasks stand.
  Log("took berthd's full list (" + std::to_string(listed.size()) + " tasks to run)");
  for (auto& [id, task] : tasks_) {
    if (!listed.contains(id)) {
      if (task.running) StopTask(id);
    } else if (!task.last_report.is_null()) {
      unsent_[id] = task.last_report;
    }
  }
}

void NodeAgent::StartTask(const std::string& id,
                          std::shared_ptr<const executor::ProcessSpec> process) {
  if (tasks_.contains(id)) return;  // started (or ended) before; never twice
  LocalTask& task = tasks_[id];
  task.process = std::move(process);
  task.running = true;
  const executor::TaskToRun run{id, node_, kNoRun, std::nullopt, task.process.get()};
  std::string started = executor_.Start(run, clock_.Now()).value_or("starting");
  // Never claim a limit that does not hold.
  if (task.process && task.process->HasLimits() && !limits_.enforced)
    started += "; its limits are not enforced: " + limits_.reason;
  else if (task.process && task.process->limit_pids && !limits_.pids)
    started += "; its pids limit is not enforced: " + limits_.pids_reason;
  // A task the executor refused at once (its program is missing, say) is
  // reported as it ended, never as running first.
  if (Collect(id)) return;
  Log("started task " + id + ": " + started);
  Report(id, TaskState::kRunning, started);
}

void NodeAgent::StopTask(const std::string& id) {
  auto it = tasks_.find(id);
  if (it == tasks_.end() || !it->second.running || it->second.stopping) return;
  it->second.stopping = true;
  executor_.Stop({id, node_, kNoRun, std::nullopt, it->second.process.get()});
  Log("stopping task " + id);
}

void NodeAgent::CollectEnded() {
  for (const std::string& id : executor_.TakeChanged()) Collect(id);
}

bool NodeAgent::Collect(const std::string& id) {
  LocalTask& task = tasks_[id];
  std::optional<Timestamp> due;
  std::optional<executor::Ended> ended =
      executor_.Check({id, node_, kNoRun, std::nullopt, task.process.get()}, clock_.Now(), &due);
  if (!ended) return false;
  {
    task.running = false;
    const TaskState state = task.stopping     ? TaskState::kShutdown
                            : ended->rejected ? TaskState::kRejected
                            : ended->failed   ? TaskState::kFailed
                                              : TaskState::kComplete;
    Log("task " + id + " ended: " + ended->message);
    Report(id, state, ended->message, ended->ran_ms);
    struct stat info {};
    if (::stat((executor_.LogDir(id) + "/" + kReportedFile).c_str(), &info) == 0) {
      unsent_.erase(id);  // acknowledged before this berth-node restarted
      Acknowledged(id);
    }
  }
  return true;
}

void NodeAgent::Report(const std::string& id, TaskState state, const std::string& message,
                       int64_t ran_ms) {
  Json report = {{"task", id}, {"state", ToString(state)}, {"message", api::ShownText(message)}};
  if (ran_ms > 0) report["ran_ms"] = ran_ms;
  tasks_[id].last_report = report;
  unsent_[id] = std::move(report);
}

Status NodeAgent::CheckEpoch(const Json& answer) {
  const int64_t epoch = answer.is_object() ? answer.value("epoch", int64_t{0}) : 0;
  int64_t seen = epoch_.load();
  while (epoch > seen && !epoch_.compare_exchange_weak(seen, epoch)) {
  }
  if (epoch != 0 && epoch < seen)
    return Status::Unavailable("berthd at " + Server() + " answered for epoch " +
                               std::to_string(epoch) + ", older than epoch " +
                               std::to_string(seen) + ": it no longer leads");
  return Status::Ok();
}

Result<Json> NodeAgent::Ask(const std::string& method, const std::string& path, const Json& body,
                            const std::string& token) {
  Result<Json> answer = Status::Unavailable("no berthd to ask");
  // One client per thread, kept while the replica, token and certificate
  // stay the same: its connection (and TLS session) is reused by the next
  // call, as long as berthd keeps it open (1 s idle), rather than a new
  // handshake for every heartbeat and report.
  struct Kept {
    const NodeAgent* owner = nullptr;
    std::string key;
    std::unique_ptr<api::ApiClient> client;
  };
  thread_local Kept kept;
  for (size_t tried = 0; tried < servers_.size(); ++tried) {
    const tls::Credentials now = secure_ ? tls_.credentials() : tls::Credentials{};
    const std::string key = Server() + '\n' + token + '\n' + now.cert_pem + now.trust_pem;
    if (kept.owner != this || kept.key != key || !kept.client) {
      kept.owner = this;
      kept.key = key;
      kept.client = std::make_unique<api::ApiClient>(Client(token));
    }
    answer = kept.client->Call(method, path, body);
    if (answer.ok())
      if (Status current = CheckEpoch(*answer); !current.ok()) answer = current;
    if (answer.ok() || answer.status().code() != StatusCode::kUnavailable) return answer;
    ++asked_;
  }
  return answer;
}

// One batch per pass of the supervisor; kept for the next when berthd
// cannot be reached.
void NodeAgent::SendReports() {
  if (unsent_.empty()) return;
  Json list = Json::array();
  for (const auto& [id, report] : unsent_) list.push_back(report);
  std::shared_ptr<NodeSession> session;
  {
    std::lock_guard lock(mu_);
    session = session_;
  }
  const Json body = {{"tasks", std::move(list)}};
  Result<Json> sent = session != nullptr ? session->Report(body, std::chrono::seconds(10))
                                         : Ask("POST", "/v1/node/status", body, Credential());
  if (!sent.ok() && IsRemoved(sent.status())) return TakeRemoval(sent.status());
  // Refused (tasks berthd gives another node): said once, not sent again.
  if (!sent.ok() && sent.status().code() != StatusCode::kPermissionDenied) return;
  if (!sent.ok()) Log("berthd refused a status report: " + sent.status().message());
  if (sent.ok() && !sent->value("refused", Json::array()).empty())
    Log("berthd refused reports on " + sent->value("refused", Json::array()).dump());
  for (const auto& [id, report] : unsent_)
    if (report.value("state", "") != "running") {
      (void)executor::WriteFileAtomically(executor_.LogDir(id) + "/" + kReportedFile, "");
      Acknowledged(id);
    }
  unsent_.clear();
}

// A node keeps the directories (and logs) of its last kEndedKept ended
// tasks whose end berthd acknowledged; older ones are deleted.
void NodeAgent::Acknowledged(const std::string& id) {
  acknowledged_.push_back(id);
  while (acknowledged_.size() > kEndedKept) {
    const std::string& oldest = acknowledged_.front();
    if (executor_.Remove(oldest).ok()) tasks_.erase(oldest);
    acknowledged_.pop_front();
  }
}

}  // namespace berth::node
