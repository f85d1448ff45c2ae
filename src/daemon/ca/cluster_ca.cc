#include "daemon/ca/cluster_ca.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "api/json_fields.h"
#include "auth/token.h"
#include "tls/seal.h"

namespace berth::daemon {
namespace {

using api::Json;

Timestamp Now() {
  // Certificates are checked against the machine's clock by every TLS
  // peer, so they are made on it too, never on an injected test clock.
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

// Writes `text` to `path` through a temporary file renamed over it, so a
// reader never sees half of it.
Status WriteFileAtomically(const std::string& path, const std::string& text, mode_t mode) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::Unavailable("cannot write " + tmp);
  }
  ::chmod(tmp.c_str(), mode);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::Unavailable("cannot write " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

// A rotation whose write lost to another replica's change of the root.
Status Conflicting(Status persisted) {
  if (persisted.code() != StatusCode::kConflict) return persisted;
  return Status::Conflict("another berthd replica changed the CA meanwhile: try again");
}

std::string Field(const Json& body, const char* name) {
  return body.contains(name) && body[name].is_string() ? body[name].get<std::string>() : "";
}

}  // namespace

std::vector<std::string> LocalNames() {
  std::vector<std::string> names = {"localhost", "127.0.0.1", "::1"};
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0 && host[0] != '\0') names.emplace_back(host);
  ifaddrs* addresses = nullptr;
  if (::getifaddrs(&addresses) == 0) {
    for (ifaddrs* a = addresses; a != nullptr; a = a->ifa_next) {
      if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_UP) == 0) continue;
      char text[INET6_ADDRSTRLEN] = {};
      const int family = a->ifa_addr->sa_family;
      if (family == AF_INET)
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text,
                  sizeof text);
      else if (family == AF_INET6 &&
               !IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr))
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text,
                  sizeof text);
      if (text[0] != '\0') names.emplace_back(text);
    }
    ::freeifaddrs(addresses);
  }
  std::sort(names.begin() + 3, names.end());
  names.erase(std::unique(names.begin() + 3, names.end()), names.end());
  names.erase(std::remove_if(names.begin() + 3, names.end(),
                             [](const std::string& n) {
                               return n == "localhost" || n == "127.0.0.1" || n == "::1";
                             }),
              names.end());
  return names;
}

ClusterCa::ClusterCa(store::Store& store, ClusterCaOptions options, std::string unlock_key)
    : store_(store), options_(std::move(options)), unlock_key_(std::move(unlock_key)) {}

Result<std::unique_ptr<ClusterCa>> ClusterCa::Open(store::Store& store, ClusterCaOptions options) {
  if (options.unlock_key_file.empty())
    options.unlock_key_file = options.data_dir + "/ca-unlock-key";
  Result<std::optional<store::StoredObject>> stored = store.Get(kCaKind, "root");
  if (!stored.ok()) return stored.status();
  struct stat info {};
  const bool have_key = ::lstat(options.unlock_key_file.c_str(), &info) == 0;
  if (stored->has_value() && !have_key)
    return Status::InvalidArgument(
        "the store's CA key is sealed, and " + options.unlock_key_file +
        " is missing: copy the ca-unlock-key file of the replica that made the CA there (or give "
        "--ca-unlock-key-file)");
  Result<std::string> key = have_key ? auth::ReadToken(options.unlock_key_file)
                                     : auth::CreateTokenFile(options.unlock_key_file);
  if (!key.ok()) return key.status();
  std::unique_ptr<ClusterCa> ca(new ClusterCa(store, std::move(options), std::move(*key)));
  BERTH_RETURN_IF_ERROR(ca->Load());
  return ca;
}

Status ClusterCa::Load() {
  Result<std::optional<store::StoredObject>> stored = store_.Get(kCaKind, "root");
  if (!stored.ok()) return stored.status();
  std::optional<tls::CertificateAuthority> given;
  if (!options_.ca_cert_file.empty()) {
    Result<std::string> cert = tls::ReadPemFile(options_.ca_cert_file);
    if (!cert.ok()) return cert.status();
    Result<std::string> key = tls::ReadPemFile(options_.ca_key_file, /*secret=*/true);
    if (!key.ok()) return key.status();
    Result<tls::CertificateAuthority> ca = tls::CertificateAuthority::Load(*cert, *key);
    if (!ca.ok()) return Status::InvalidArgument("--ca-cert/--ca-key: " + ca.status().message());
    given = std::move(*ca);
  }
  if (!stored->has_value()) {
    cluster_ = auth::NewSecret(8);
    Result<tls::CertificateAuthority> root =
        given ? std::move(*given) : tls::CertificateAuthority::Create(cluster_, Now());
    if (!root.ok()) return root.status();
    if (Status s = Persist(*root, nullptr, 0); s.code() == StatusCode::kConflict)
      return Load();  // another replica made the root first
    else if (!s.ok())
      return s;
    return Adopt(std::move(*root), nullptr);
  }
  return AdoptStored(**stored, given ? &*given : nullptr);
}

Status ClusterCa::AdoptStored(const store::StoredObject& stored,
                              const tls::CertificateAuthority* given) {
  const Json body = Json::parse(stored.body, nullptr, false);
  Result<std::string> key = tls::Open(Field(body, "key"), unlock_key_);
  if (!key.ok())
    return Status::InvalidArgument("cannot unseal the store's CA key with " +
                                   options_.unlock_key_file + ": " + key.status().message());
  Result<tls::CertificateAuthority> root =
      tls::CertificateAuthority::Load(Field(body, "cert"), *key);
  if (!root.ok()) return Status::InvalidArgument("the stored CA: " + root.status().message());
  if (given != nullptr && given->digest() != root->digest())
    return Status::InvalidArgument(
        "--ca-cert is not the cluster's CA, which the store holds already (berth ca rotate "
        "changes it)");
  std::unique_ptr<tls::CertificateAuthority> previous;
  if (!Field(body, "previous").empty()) {
    Result<std::string> previous_key = tls::Open(Field(body, "previous_key"), unlock_key_);
    Result<tls::CertificateAuthority> old =
        previous_key.ok() ? tls::CertificateAuthority::Load(Field(body, "previous"), *previous_key)
                          : Result<tls::CertificateAuthority>(previous_key.status());
    if (!old.ok()) return Status::InvalidArgument("the stored old CA: " + old.status().message());
    previous = std::make_unique<tls::CertificateAuthority>(std::move(*old));
  }
  {
    std::lock_guard lock(mu_);  // Sign and IssueOwn read it under mu_
    cluster_ = Field(body, "cluster");
  }
  revision_ = stored.revision;
  return Adopt(std::move(*root), std::move(previous));
}

Status ClusterCa::Sync() {
  std::lock_guard changing(change_mu_);
  return SyncLocked();
}

Status ClusterCa::SyncLocked() {
  Result<std::optional<store::StoredObject>> stored = store_.Get(kCaKind, "root");
  if (!stored.ok()) return stored.status();
  if (!stored->has_value() || (*stored)->revision == revision_) return Status::Ok();
  return AdoptStored(**stored, nullptr);
}

Status ClusterCa::Persist(const tls::CertificateAuthority& root,
                          const tls::CertificateAuthority* previous, int64_t expected_revision) {
  Result<std::string> sealed = tls::Seal(root.key_pem(), unlock_key_);
  if (!sealed.ok()) return sealed.status();
  Json body = {{"cluster", cluster_}, {"cert", root.cert_pem()}, {"key", *sealed}};
  if (previous != nullptr) {
    Result<std::string> previous_key = tls::Seal(previous->key_pem(), unlock_key_);
    if (!previous_key.ok()) return previous_key.status();
    body["previous"] = previous->cert_pem();
    body["previous_key"] = *previous_key;
  }
  store::Write write = store::Write::Put(kCaKind, "root", body.dump());
  write.IfRevision(expected_revision);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  revision_ = *committed;
  return Status::Ok();
}

Status ClusterCa::Adopt(tls::CertificateAuthority root,
                        std::unique_ptr<tls::CertificateAuthority> previous) {
  {
    std::lock_guard lock(mu_);
    root_ = std::make_unique<tls::CertificateAuthority>(std::move(root));
    previous_ = std::move(previous);
  }
  BERTH_RETURN_IF_ERROR(WriteBundle());
  return IssueOwn();
}

Status ClusterCa::IssueOwn() {
  std::vector<std::string> names = LocalNames();
  for (const std::string& n : options_.names)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  std::lock_guard lock(mu_);
  // During a rotation berthd keeps a certificate of the old root, which the
  // nodes that have not moved yet still verify it with.
  const tls::CertificateAuthority& signer = previous_ ? *previous_ : *root_;
  Result<tls::KeyAndCert> own =
      signer.Issue({{options_.id, options_.role, cluster_}, names, Now(), options_.cert_life});
  if (!own.ok()) return own.status();
  own_ = std::move(*own);
  // Renewed at a random point between 50% and 80% of its life, so that the
  // replicas of a cluster do not all renew at once.
  const Duration life = options_.cert_life;
  std::random_device seed;
  own_renewal_ = Now() + std::chrono::duration_cast<Duration>(
                             life * std::uniform_real_distribution<double>(0.5, 0.8)(seed));
  wake_.notify_all();
  // For the node session server, which reads its credentials from files.
  if (options_.server_files) {
    BERTH_RETURN_IF_ERROR(WriteFileAtomically(key_file(), own_.key_pem, 0600));
    BERTH_RETURN_IF_ERROR(WriteFileAtomically(cert_file(), own_.cert_pem, 0644));
  }
  const tls::Credentials credentials{own_.cert_pem, own_.key_pem,
                                     BundleLocked() + options_.client_trust_pem};
  if (!server_tls_) {
    Result<std::shared_ptr<tls::ServerTls>> made = tls::ServerTls::Make(credentials);
    if (!made.ok()) return made.status();
    server_tls_ = std::move(*made);
    return Status::Ok();
  }
  return server_tls_->Update(credentials);
}

void ClusterCa::Start(const Clock& clock) {
  renewer_ = std::thread([this, &clock] {
    Timestamp next_sync = clock.Now() + options_.sync_interval;
    std::unique_lock lock(mu_);
    while (!stopping_) {
      // The renewal point is on the machine's clock; `clock` waits for it.
      const Timestamp renewal = clock.Now() + (own_renewal_ - Now());
      clock.WaitUntil(lock, wake_, std::min(renewal, next_sync),
                      [&] { return stopping_ || Now() >= own_renewal_; });
      if (stopping_) break;
      lock.unlock();
      if (clock.Now() >= next_sync) {
        next_sync = clock.Now() + options_.sync_interval;
        if (Status synced = Sync(); !synced.ok())
          std::fprintf(stderr, "cannot read the cluster's CA from the store: %s\n",
                       synced.message().c_str());
      }
      lock.lock();
      if (Now() < own_renewal_) continue;  // not due, or renewed by Sync
      lock.unlock();
      if (Status renewed = IssueOwn(); !renewed.ok())
        std::fprintf(stderr, "cannot renew this host's certificate: %s\n",
                     renewed.message().c_str());
      lock.lock();
    }
  });
}

void ClusterCa::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

Status ClusterCa::WriteBundle() const {
  return WriteFileAtomically(options_.data_dir + "/ca.pem", trust_pem(), 0644);
}

std::string ClusterCa::BundleLocked() const {
  return (previous_ ? previous_->cert_pem() : "") + root_->cert_pem();
}

tls::Credentials ClusterCa::client_credentials() const {
  std::lock_guard lock(mu_);
  return {own_.cert_pem, own_.key_pem, BundleLocked()};
}

std::string ClusterCa::trust_pem() const {
  std::lock_guard lock(mu_);
  return BundleLocked();
}

std::string ClusterCa::digest() const {
  std::lock_guard lock(mu_);
  return root_->digest();
}

std::string ClusterCa::Describe() const {
  std::lock_guard lock(mu_);
  Result<tls::CertificateInfo> info = tls::ParseCertificate(root_->cert_pem());
  return Json{{"digest", root_->digest()},
              {"cert", BundleLocked()},
              {"rotating", previous_ != nullptr},
              {"not_after", info.ok() ? FormatRfc3339(info->not_after) : ""}}
      .dump();
}

// The leaf made for a CSR that names another id is dropped: it was never
// handed out.
Result<tls::SignedLeaf> ClusterCa::Sign(std::string_view csr_pem, const std::string& id,
                                        const std::string& role,
                                        std::vector<std::string> names) const {
  Result<tls::SignedLeaf> leaf = [&] {
    std::lock_guard lock(mu_);
    return root_->Sign(csr_pem,
                       {{id, role, cluster_}, std::move(names), Now(), options_.cert_life});
  }();
  if (leaf.ok() && !leaf->asked.empty() && leaf->asked != id)
    return Status::PermissionDenied("the certificate signing request names '" + leaf->asked +
                                    "', but this credential is " + role + " '" + id + "''s");
  return leaf;
}

Result<std::string> ClusterCa::Seal(std::string_view secret) const {
  return tls::Seal(secret, unlock_key_);
}

Result<std::string> ClusterCa::Unseal(std::string_view sealed) const {
  return tls::Open(sealed, unlock_key_);
}

// Both start from the stored root, so that a replica that leads since
// another one's rotation carries it on.
Status ClusterCa::Rotate() {
  std::lock_guard changing(change_mu_);
  BERTH_RETURN_IF_ERROR(SyncLocked());
  std::unique_ptr<tls::CertificateAuthority> old;
  {
    std::lock_guard lock(mu_);
    if (previous_)
      return Status::Conflict(
          "a rotation is under way: finish it first (berth ca rotate --finish)");
    Result<tls::CertificateAuthority> copy =
        tls::CertificateAuthority::Load(root_->cert_pem(), root_->key_pem());
    if (!copy.ok()) return copy.status();
    old = std::make_unique<tls::CertificateAuthority>(std::move(*copy));
  }
  Result<tls::CertificateAuthority> root = tls::CertificateAuthority::Create(cluster_, Now());
  if (!root.ok()) return root.status();
  BERTH_RETURN_IF_ERROR(Conflicting(Persist(*root, old.get(), revision_)));
  return Adopt(std::move(*root), std::move(old));
}

Status ClusterCa::FinishRotation() {
  std::lock_guard changing(change_mu_);
  BERTH_RETURN_IF_ERROR(SyncLocked());
  std::unique_ptr<tls::CertificateAuthority> root;
  {
    std::lock_guard lock(mu_);
    if (!previous_) return Status::Conflict("no CA rotation is under way");
    Result<tls::CertificateAuthority> copy =
        tls::CertificateAuthority::Load(root_->cert_pem(), root_->key_pem());
    if (!copy.ok()) return copy.status();
    root = std::make_unique<tls::CertificateAuthority>(std::move(*copy));
  }
  BERTH_RETURN_IF_ERROR(Conflicting(Persist(*root, nullptr, revision_)));
  return Adopt(std::move(*root), nullptr);
}

}  // namespace berth::daemon
