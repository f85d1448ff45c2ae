#include "daemon/nodes/node_dispatcher.h"

#include <mutex>

#include "auth/token.h"
#include "tls/certificate.h"
#include "tls/seal.h"

namespace berth::daemon {
namespace {

using api::Json;

constexpr const char* kCredentialKind = "node_credential";  // id: the node
constexpr const char* kJoinTokenKind = "node_token";        // id "join"
// A removed berth-node's denied identity: {"node", "hash" (of its
// credential), "serials", "removed_at"}; id: its machine.
// Secrets at rest (docs/security.md): a node's credential is kept as its
// hash ({"hash", "serials"}, kind node_credential), and the join token as
// its hash and sealed under the CA's unlock key (berthd shows it again);
// records of an older berthd, with the secret itself, are read too.
constexpr const char* kRemovedKind = "node_removed";

// What a machine tells of itself when it registers (docs/api.md,
// "POST /v1/node/register").
struct Registration {
  Json node;  // the node object to store, "berth_node" included
  std::string machine;
};

// A text field of a stored body; "" when the body or field is damaged.
std::string StoredField(const std::string& body, const char* field) {
  const Json json = Json::parse(body, nullptr, false);
  if (!json.is_object() || !json.value(field, Json()).is_string()) return "";
  return json[field];
}

// Compares secrets in time that depends on their lengths only.
bool SameSecret(std::string_view a, std::string_view b) {
  unsigned char differ = a.size() != b.size();
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

// The hash of the credential a stored record holds: its "hash", or the
// hash of the "credential" an older berthd stored as it was.
std::string StoredHash(const std::string& body) {
  if (std::string hash = StoredField(body, "hash"); !hash.empty()) return hash;
  const std::string credential = StoredField(body, "credential");
  return credential.empty() ? "" : tls::HashSecret(credential);
}

// A list of text fields of a stored body; empty when absent or damaged.
std::vector<std::string> StoredList(const std::string& body, const char* field) {
  const Json json = Json::parse(body, nullptr, false);
  std::vector<std::string> out;
  if (!json.is_object() || !json.value(field, Json()).is_array()) return out;
  for (const Json& v : json[field])
    if (v.is_string()) out.push_back(v);
  return out;
}

// How many certificate serials a node's record keeps: a node renews at 50-80%
// of a certificate's life, so at most two of its certificates are valid at
// once; four leave room for renewals that failed half-way.
constexpr size_t kSerialsKept = 4;

// The machine id of a stored node that a berth-node registered; "" for
// others (and a damaged body).
std::string MachineOf(const std::string& body) {
  const Json node = Json::parse(body, nullptr, false);
  if (!node.is_object() || !node.value("berth_node", Json()).is_object()) return "";
  const Json& machine = node["berth_node"].value("machine", Json());
  return machine.is_string() ? machine.get<std::string>() : "";
}

Result<Registration> ReadRegistration(const Json& body) {
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(body, "",
                       {"hostname", "machine", "resources", "platform", "address", "endpoint",
                        "engine_labels", "limits", "version", "csr"}));
  std::string hostname, machine, endpoint, version;
  BERTH_RETURN_IF_ERROR(api::RequireField(body, "hostname", "", api::ReadId, &hostname));
  BERTH_RETURN_IF_ERROR(api::RequireField(body, "machine", "", api::ReadId, &machine));
  BERTH_RETURN_IF_ERROR(api::ReadField(body, "endpoint", "", api::ReadText, &endpoint));
  BERTH_RETURN_IF_ERROR(api::ReadField(body, "version", "", api::ReadText, &version));
  Json limits = body.value("limits", Json{{"enforced", false}});
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(limits, "limits", {"enforced", "reason", "cgroup", "pids", "pids_reason"}));
  bool enforced = false, pids = false;
  BERTH_RETURN_IF_ERROR(api::ReadField(limits, "enforced", "limits", api::ReadBool, &enforced));
  // Whether pids limits hold too (the pids controller); absent: a
  // berth-node from before pids limits, which does not hold them.
  BERTH_RETURN_IF_ERROR(api::ReadField(limits, "pids", "limits", api::ReadBool, &pids));
  std::string reason, pids_reason;
  BERTH_RETURN_IF_ERROR(api::ReadField(limits, "reason", "limits", api::ReadShownText, &reason));
  BERTH_RETURN_IF_ERROR(
      api::ReadField(limits, "pids_reason", "limits", api::ReadShownText, &pids_reason));
  // Which cgroup version holds them: "v1" or "v2", "" when not enforced.
  std::string cgroup;
  BERTH_RETURN_IF_ERROR(api::ReadField(limits, "cgroup", "limits", api::ReadShownText, &cgroup));
  Json node = {{"id", hostname}, {"hostname", hostname}, {"state", "ready"}};
  for (const char* field : {"resources", "platform", "address", "engine_labels"})
    if (body.contains(field)) node[field] = body[field];
  node["berth_node"] = {{"machine", machine},
                        {"endpoint", endpoint},
                        {"version", version},
                        {"limits_enforced", enforced},
                        {"limits", reason},
                        {"limits_cgroup", cgroup},
                        {"limits_pids", enforced && pids},
                        {"limits_pids_reason", pids_reason}};
  BERTH_RETURN_IF_ERROR(NodeRegistry::Validate(node));
  return Registration{std::move(node), std::move(machine)};
}

}  // namespace

NodeDispatcher::NodeDispatcher(store::Store& store, NodeRegistry& nodes, NodeExecutor& executor,
                               const Clock& clock, std::function<void()> notify,
                               NodeDispatcherOptions options, const ClusterCa* ca)
    : store_(store),
      nodes_(nodes),
      executor_(executor),
      clock_(clock),
      notify_(std::move(notify)),
      options_(options),
      ca_(ca) {}

Status NodeDispatcher::Load() {
  Result<std::optional<store::StoredObject>> join = store_.Get(kJoinTokenKind, "join");
  if (!join.ok()) return join.status();
  if (join->has_value()) {
    const std::string& body = (*join)->body;
    join_hash_ = StoredHash(body);
    if (std::string sealed = StoredField(body, "sealed"); !sealed.empty() && ca_ != nullptr) {
      Result<std::string> token = ca_->Unseal(sealed);
      if (!token.ok())
        return Status::InvalidArgument("the node join token: " + token.status().message());
      join_token_ = *token;
    } else {
      join_token_ = StoredField(body, "token");  // no CA, or an older berthd's record
    }
    if (join_hash_.empty() && !join_token_.empty()) join_hash_ = tls::HashSecret(join_token_);
  }
  Result<std::vector<store::StoredObject>> credentials = store_.List(kCredentialKind);
  if (!credentials.ok()) return credentials.status();
  const Timestamp now = clock_.Now();
  for (const store::StoredObject& c : *credentials) {
    const std::string credential = StoredHash(c.body);
    if (credential.empty()) continue;  // damaged: that node joins again with the token
    node_by_credential_[credential] = c.id;
    credential_by_node_[c.id] = credential;
    serials_by_node_[c.id] = StoredList(c.body, "serials");
    last_heartbeat_[c.id] = now;  // a fresh grace period for every node
    executor_.SetNode(c.id, true);
    Result<Json> node = nodes_.Get(c.id);
    if (node.ok() && node->value("state", "") == "down") down_.insert(c.id);
  }
  Result<std::vector<store::StoredObject>> removed = store_.List(kRemovedKind);
  if (!removed.ok()) return removed.status();
  for (const store::StoredObject& r : *removed) {
    const std::string node = StoredField(r.body, "node");
    if (const std::string credential = StoredHash(r.body); !credential.empty())
      removed_by_credential_[credential] = node;
    for (const std::string& serial : StoredList(r.body, "serials"))
      removed_by_serial_[serial] = node;
  }
  return Status::Ok();
}

std::string NodeDispatcher::RemovedMessage(const std::string& node) {
  return "node '" + node +
         "' was removed from the cluster (berth node rm): berthd refuses its credential and its "
         "machine. To join this machine again, as a new node, delete node.json from its "
         "berth-node data directory and start berth-node with the node join token "
         "(--token-file)";
}

void NodeDispatcher::Start() {
  monitor_ = std::thread([this] { Monitor(); });
}

void NodeDispatcher::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (monitor_.joinable()) monitor_.join();
}

std::optional<api::Principal> NodeDispatcher::Authenticate(std::string_view token,
                                                           api::Peer peer) const {
  std::shared_lock lock(credentials_mu_);
  if (peer != nullptr && peer->identity.role == tls::kRoleNode)
    if (auto it = removed_by_serial_.find(peer->serial); it != removed_by_serial_.end())
      return api::Principal{api::Principal::Kind::kRemovedNode, it->second,
                            RemovedMessage(it->second)};
  const std::string hash = tls::HashSecret(token);
  if (!join_hash_.empty() && SameSecret(hash, join_hash_))
    return api::Principal{api::Principal::Kind::kNodeJoin, ""};
  if (auto it = node_by_credential_.find(hash); it != node_by_credential_.end())
    return api::Principal{api::Principal::Kind::kNode, it->second};
  if (auto it = removed_by_credential_.find(hash); it != removed_by_credential_.end())
    return api::Principal{api::Principal::Kind::kRemovedNode, it->second,
                          RemovedMessage(it->second)};
  return std::nullopt;
}

Result<std::string> NodeDispatcher::JoinToken() {
  std::lock_guard rotating(rotate_mu_);  // two first calls make one token
  {
    std::shared_lock lock(credentials_mu_);
    if (!join_token_.empty()) return join_token_;
  }
  return Rotate();
}

Result<std::string> NodeDispatcher::RotateJoinToken() {
  std::lock_guard rotating(rotate_mu_);
  return Rotate();
}

// Under rotate_mu_, so the store and memory hold the same token.
Result<std::string> NodeDispatcher::Rotate() {
  // With a CA the token carries its digest (docs/security.md), so that a
  // joining machine checks whom it talks to before it sends the secret.
  std::string token = ca_ == nullptr
                          ? auth::NewSecret()
                          : std::string(kJoinTokenPrefix) + ca_->digest() + "-" + auth::NewSecret();
  Json record = {{"hash", tls::HashSecret(token)}};
  if (ca_ != nullptr) {
    Result<std::string> sealed = ca_->Seal(token);
    if (!sealed.ok()) return sealed.status();
    record["sealed"] = *sealed;
  } else {
    record["token"] = token;  // plain HTTP on loopback: no unlock key to seal it with
  }
  Result<int64_t> committed =
      store_.Commit({store::Write::Put(kJoinTokenKind, "join", record.dump())});
  if (!committed.ok()) return committed.status();
  std::unique_lock lock(credentials_mu_);
  join_token_ = token;
  join_hash_ = record["hash"];
  return token;
}

Result<Json> NodeDispatcher::Register(const Json& body, const api::Principal& who,
                                      bool* machine_removed) {
  constexpr int kAttempts = 5;
  for (int attempt = 1;; ++attempt) {
    bool raced = false;
    Result<Json> answer = RegisterOnce(body, who, machine_removed, &raced);
    if (!raced || attempt == kAttempts) return answer;
  }
}

Result<Json> NodeDispatcher::RegisterOnce(const Json& body, const api::Principal& who,
                                          bool* machine_removed, bool* raced) {
  Result<Registration> registration = ReadRegistration(body);
  if (!registration.ok()) return registration.status();
  Json& node = registration->node;
  const std::string id = node["id"];
  if (who.kind == api::Principal::Kind::kNode && who.node != id)
    return Status::PermissionDenied("node '" + who.node + "' may not register node '" + id + "'");
  // A removed node's machine stays out, whatever token it comes with (its
  // own credential does not get here: Authenticate refuses it).
  auto removed = [&]() -> Status {
    Result<std::optional<store::StoredObject>> denied =
        store_.Get(kRemovedKind, registration->machine);
    if (!denied.ok()) return denied.status();
    if (!denied->has_value()) return Status::Ok();
    if (machine_removed != nullptr) *machine_removed = true;
    const std::string was = StoredField((*denied)->body, "node");
    return Status::PermissionDenied(RemovedMessage(was.empty() ? id : was));
  };
  BERTH_RETURN_IF_ERROR(removed());
  Result<std::optional<store::StoredObject>> stored = store_.Get("node", id);
  if (!stored.ok()) return stored.status();
  // A removal committed meanwhile fails this registration.
  std::vector<store::Write> writes = {store::Write::Check(kRemovedKind, registration->machine, 0)};
  std::string credential;
  if (stored->has_value()) {
    const Json old = Json::parse((*stored)->body, nullptr, false);
    if (!old.is_object()) return Status::Internal("the stored node '" + id + "' is not JSON");
    const std::string machine = old.value("berth_node", Json::object()).value("machine", "");
    if (machine.empty())
      return Status::Conflict("node '" + id +
                              "' exists and was not registered by berth-node; remove it or "
                              "start berth-node with another --hostname");
    if (machine != registration->machine)
      return Status::Conflict("node '" + id +
                              "' is held by another machine; start berth-node with another "
                              "--hostname");
    // Only the node's own credential registers it again: the join token
    // would otherwise hand any holder of the machine id its credential.
    if (who.kind != api::Principal::Kind::kNode)
      return Status::Conflict("node '" + id +
                              "' has joined already; a restarted berth-node uses the credential "
                              "in its data directory (node.json). To join anew, remove the node "
                              "first (berth node rm " +
                              id + ")");
    // The admin's settings stay: labels, availability, slots.
    for (const char* kept : {"labels", "availability", "slots"})
      if (old.contains(kept)) node[kept] = old[kept];
    writes.push_back(store::Write::Put("node", id, node.dump()).IfRevision((*stored)->revision));
    std::shared_lock lock(credentials_mu_);
    if (auto it = credential_by_node_.find(id); it != credential_by_node_.end())
      credential = it->second;
  } else {
    writes.push_back(store::Write::Create("node", id, node.dump()));
  }
  // `credential` is the hash of the node's credential: a node registering
  // again keeps the one it has, and only a new one is answered.
  Json answer = {{"node", id}, {"heartbeat_period", FormatDuration(options_.heartbeat_period)}};
  if (credential.empty()) {
    const std::string fresh = auth::NewSecret();
    credential = tls::HashSecret(fresh);
    answer["credential"] = fresh;
  }
  BERTH_RETURN_IF_ERROR(Certify(id, credential, body, answer, writes));
  if (ca_ == nullptr)
    writes.push_back(store::Write::Put(kCredentialKind, id, CredentialRecord(id, credential, "")));
  {
    // The node is ready in the store and in memory at once: the monitor
    // does not decide between the two (StateLockOf).
    std::lock_guard state(StateLockOf(id));
    Result<int64_t> committed = store_.Commit(writes);
    if (!committed.ok() && committed.status().code() == StatusCode::kConflict) {
      BERTH_RETURN_IF_ERROR(removed());
      *raced = true;
    }
    if (!committed.ok()) return committed.status();
    std::lock_guard lock(mu_);
    last_heartbeat_[id] = clock_.Now();
    down_.erase(id);
  }
  {
    std::unique_lock lock(credentials_mu_);
    node_by_credential_[credential] = id;
    credential_by_node_[id] = credential;
    if (answer.contains("serial")) {
      std::vector<std::string>& serials = serials_by_node_[id];
      serials.push_back(answer["serial"]);
      if (serials.size() > kSerialsKept) serials.erase(serials.begin());
      answer.erase("serial");
    }
  }
  executor_.SetNode(id, true);
  notify_();
  return answer;
}

std::string NodeDispatcher::CredentialRecord(const std::string& node, const std::string& credential,
                                             const std::string& serial) const {
  std::vector<std::string> serials;
  {
    std::shared_lock lock(credentials_mu_);
    if (auto it = serials_by_node_.find(node); it != serials_by_node_.end()) serials = it->second;
  }
  if (!serial.empty()) serials.push_back(serial);
  if (serials.size() > kSerialsKept) serials.erase(serials.begin());
  return Json{{"hash", credential}, {"serials", serials}}.dump();
}

Status NodeDispatcher::Certify(const std::string& id, const std::string& credential_hash,
                               const Json& body, Json& answer, std::vector<store::Write>& writes) {
  if (ca_ == nullptr) return Status::Ok();
  const Json csr = body.value("csr", Json());
  if (!csr.is_string())
    return Status::InvalidArgument(
        "csr: a certificate signing request is required (PEM text): this cluster speaks mutual "
        "TLS, and a node's certificate is made from it");
  // The node's address, as its registration or its stored node says: berthd
  // checks it when it reads the node's logs.
  std::string address = body.value("address", Json()).is_string() ? body["address"] : "";
  if (address.empty())
    if (Result<Json> node = nodes_.Get(id); node.ok()) address = node->value("address", "");
  std::vector<std::string> names;
  for (const std::string& name : {id, address})
    if (!name.empty() &&
        name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789-.:") == std::string::npos &&
        (names.empty() || names[0] != name))
      names.push_back(name);
  Result<tls::SignedLeaf> leaf = ca_->Sign(csr.get<std::string>(), id, tls::kRoleNode, names);
  if (!leaf.ok()) return Status::InvalidArgument("csr: " + leaf.status().message());
  answer["certificate"] = leaf->cert_pem;
  answer["ca"] = ca_->trust_pem();
  answer["serial"] = leaf->serial;
  writes.push_back(
      store::Write::Put(kCredentialKind, id, CredentialRecord(id, credential_hash, leaf->serial)));
  return Status::Ok();
}

Result<Json> NodeDispatcher::Renew(const std::string& node, const Json& body) {
  if (ca_ == nullptr) return Status::InvalidArgument("this host issues no certificates");
  BERTH_RETURN_IF_ERROR(api::CheckObject(body, "", {"csr"}));
  std::optional<std::string> credential = CredentialHashOf(node);
  if (!credential) return Status::NotFound("no node '" + node + "'");
  Json answer;
  std::vector<store::Write> writes;
  BERTH_RETURN_IF_ERROR(Certify(node, *credential, body, answer, writes));
  Result<int64_t> committed = store_.Commit(writes);
  if (!committed.ok()) return committed.status();
  std::unique_lock lock(credentials_mu_);
  std::vector<std::string>& serials = serials_by_node_[node];
  serials.push_back(answer["serial"]);
  if (serials.size() > kSerialsKept) serials.erase(serials.begin());
  return Json{{"certificate", answer["certificate"]}, {"ca", answer["ca"]}};
}

// A heartbeat and the monitor decide a node's state in turn (StateLockOf),
// each deciding on what the other left under mu_, so a heartbeat that
// races a "down" always ends with the node ready.
Result<Json> NodeDispatcher::Heartbeat(const std::string& node) {
  bool was_down = false;
  {
    std::lock_guard lock(mu_);
    auto last = last_heartbeat_.find(node);
    if (last == last_heartbeat_.end()) return Status::NotFound("no node '" + node + "'");
    last->second = clock_.Now();
    was_down = down_.contains(node);
  }
  ++heartbeats_;
  if (was_down) {
    std::lock_guard state(StateLockOf(node));
    {
      std::lock_guard lock(mu_);
      was_down = down_.contains(node);  // still: no other heartbeat brought it back
    }
    if (was_down) {
      BERTH_RETURN_IF_ERROR(SetState(node, "ready"));
      std::lock_guard lock(mu_);
      down_.erase(node);
    }
  }
  Json answer = {{"heartbeat_period", FormatDuration(options_.heartbeat_period)},
                 {"assignments_revision", executor_.ChangedFor(node)},
                 {"instance", executor_.instance()}};
  if (ca_ != nullptr) answer["ca_digest"] = ca_->digest();
  return answer;
}

std::optional<std::string> NodeDispatcher::CredentialHashOf(const std::string& node) const {
  std::shared_lock lock(credentials_mu_);
  auto it = credential_by_node_.find(node);
  if (it == credential_by_node_.end()) return std::nullopt;
  return it->second;
}

Status NodeDispatcher::Remove(const std::string& node, bool force) {
  Result<store::StoredObject> loaded = nodes_.Load(node);
  if (!loaded.ok()) return loaded.status();
  const std::string machine = MachineOf(loaded->body);
  std::vector<store::Write> also;
  std::string credential;
  std::vector<std::string> serials;
  {
    std::shared_lock lock(credentials_mu_);
    if (auto it = credential_by_node_.find(node); it != credential_by_node_.end()) {
      credential = it->second;
      also.push_back(store::Write::Delete(kCredentialKind, node));
    }
    if (auto it = serials_by_node_.find(node); it != serials_by_node_.end()) serials = it->second;
  }
  // The node's identity is denied from this commit on: its credential and
  // its machine (docs/agent.md, "Removing a node").
  if (!machine.empty())
    also.push_back(store::Write::Put(kRemovedKind, machine,
                                     Json{{"node", node},
                                          {"hash", credential},
                                          {"serials", serials},
                                          {"removed_at", FormatRfc3339(clock_.Now())}}
                                         .dump()));
  BERTH_RETURN_IF_ERROR(nodes_.Remove(*loaded, force, std::move(also)));
  if (credential.empty()) return Status::Ok();
  {
    std::unique_lock lock(credentials_mu_);
    node_by_credential_.erase(credential);
    credential_by_node_.erase(node);
    removed_by_credential_[credential] = node;
    for (const std::string& serial : serials) removed_by_serial_[serial] = node;
    serials_by_node_.erase(node);
  }
  executor_.SetNode(node, false);
  {
    std::lock_guard lock(mu_);
    last_heartbeat_.erase(node);
    down_.erase(node);
  }
  if (on_removed_) on_removed_(node);
  return Status::Ok();
}

std::mutex& NodeDispatcher::StateLockOf(const std::string& node) {
  return state_mu_[std::hash<std::string>{}(node) % state_mu_.size()];
}

Status NodeDispatcher::SetState(const std::string& node, const char* state) {
  Result<Json> updated = nodes_.Update(node, Json{{"state", state}});
  if (!updated.ok()) return updated.status();
  notify_();
  return Status::Ok();
}

// One scan of every node per heartbeat period at most: 100,000 nodes cost
// a few milliseconds each time (docs/benchmarks.md).
Timestamp NodeDispatcher::MarkSilentDown(Timestamp now) {
  std::vector<std::string> silent;
  Timestamp next = now + options_.heartbeat_period;
  {
    std::lock_guard lock(mu_);
    for (const auto& [node, last] : last_heartbeat_) {
      if (down_.contains(node)) continue;
      if (last + grace() <= now)
        silent.push_back(node);
      else
        next = std::min(next, last + grace());
    }
  }
  for (const std::string& node : silent) {
    std::lock_guard state(StateLockOf(node));
    {
      std::lock_guard lock(mu_);
      auto last = last_heartbeat_.find(node);
      if (last == last_heartbeat_.end() || last->second + grace() > now || down_.contains(node))
        continue;  // a heartbeat came meanwhile (or the node was forgotten)
      down_.insert(node);
    }
    if (!SetState(node, "down").ok()) {  // a concurrent change: the next scan tries again
      std::lock_guard lock(mu_);
      down_.erase(node);
    }
  }
  // Heartbeats spread over a period put the next expiry always a moment
  // away: scanning every node then (2,000 scans a second with 10,000
  // nodes, docs/benchmarks.md "Node sessions") made the monitor cost grow
  // with the square of the nodes. A node goes down at most a tenth of a
  // period after its grace instead.
  return std::max(next, now + monitor_tick());
}

void NodeDispatcher::Monitor() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    const Timestamp next = MarkSilentDown(clock_.Now());
    lock.lock();
    clock_.WaitUntil(lock, wake_, next, [this] { return stopping_; });
  }
}

}  // namespace berth::daemon
