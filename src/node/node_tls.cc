#include "node/node_tls.h"

#include <httplib.h>
#include <sys/stat.h>

#include "api/api_client.h"
#include "api/json_fields.h"
#include "executor/task_dir.h"
#include "tls/certificate.h"

namespace berth::node {
namespace {

constexpr const char* kTrustFile = "ca.pem";
constexpr const char* kKeyFile = "node-key.pem";
constexpr const char* kCertFile = "node-cert.pem";
constexpr std::string_view kTokenPrefix = "BERTH-1-";

Timestamp SystemNow() {
  // Certificates live on the machine's clock, whatever clock the node's
  // loops are given.
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

// The digest of the bundle's last root: the current one (a rotation puts
// the new root after the old).
std::string CurrentRoot(const std::string& trust_pem) {
  Result<std::vector<std::string>> roots = tls::SplitBundle(trust_pem);
  if (!roots.ok()) return "";
  Result<std::string> digest = tls::CertificateDigest(roots->back());
  return digest.ok() ? *digest : "";
}

}  // namespace

std::string JoinTokenDigest(const std::string& token) {
  if (token.rfind(kTokenPrefix, 0) != 0 || token.size() < kTokenPrefix.size() + 65) return "";
  return token.substr(kTokenPrefix.size(), 64);
}

Result<bool> NodeTls::Load() {
  const std::string trust = executor::ReadSmallFile(dir_ + "/" + kTrustFile).value_or("");
  const std::string cert = executor::ReadSmallFile(dir_ + "/" + kCertFile).value_or("");
  const std::string key = executor::ReadSmallFile(dir_ + "/" + kKeyFile).value_or("");
  std::lock_guard lock(mu_);
  current_.trust_pem = trust;
  if (cert.empty() || key.empty()) return false;
  if (Status s = tls::CheckCredentials({cert, key, trust}, true); !s.ok())
    return Status::InvalidArgument(dir_ + ": the node's certificate files are damaged (" +
                                   s.message() + "); remove node-cert.pem and node-key.pem to " +
                                   "join anew with the join token");
  current_.cert_pem = cert;
  current_.key_pem = key;
  digest_ = CurrentRoot(trust);
  ScheduleRenewal();
  return true;
}

Status NodeTls::TrustFrom(const std::string& server, const std::string& digest) {
  const std::string url = api::WithScheme(server, true);
  httplib::Client client(url);
  client.enable_server_certificate_verification(false);  // the digest checks it instead
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  httplib::Result r = client.Get("/v1/ca");
  if (!r)
    return Status::Unavailable("cannot read the CA of berthd at " + url + ": " +
                               api::DescribeHttpError(r.error()));
  const api::Json answer = api::Json::parse(r->body, nullptr, false);
  const std::string bundle =
      answer.is_object() && answer.value("cert", api::Json()).is_string() ? answer["cert"] : "";
  Result<std::vector<std::string>> roots = tls::SplitBundle(bundle);
  if (r->status != 200 || !roots.ok())
    return Status::Unavailable("berthd at " + url + " sent no CA certificate (HTTP " +
                               std::to_string(r->status) + ")");
  for (const std::string& root : *roots)
    if (tls::CertificateDigest(root).value() == digest) {
      std::lock_guard lock(mu_);
      current_.trust_pem = bundle;
      return executor::WriteFileAtomically(dir_ + "/" + kTrustFile, bundle, 0644);
    }
  return Status::PermissionDenied(
      "the server at " + url + " is not the cluster the join token is for: its CA's digest is " +
      tls::CertificateDigest(roots->back()).value() + ", the token's " + digest +
      " (a wrong address, a CA that was rotated since the token was made, or someone in between)");
}

Result<std::string> NodeTls::NewCsr(const std::string& node) {
  Result<tls::KeyAndCsr> made = tls::NewKeyAndCsr(node);
  if (!made.ok()) return made.status();
  std::lock_guard lock(mu_);
  pending_key_ = made->key_pem;
  return made->csr_pem;
}

Status NodeTls::Accept(const std::string& cert_pem, const std::string& trust_pem) {
  std::lock_guard lock(mu_);
  const tls::Credentials next{cert_pem, pending_key_, trust_pem};
  if (Status s = tls::CheckCredentials(next, true); !s.ok())
    return Status::InvalidArgument("berthd's certificate for this node: " + s.message());
  current_ = next;
  pending_key_.clear();
  digest_ = CurrentRoot(trust_pem);
  ScheduleRenewal();
  return Save();
}

Status NodeTls::Save() const {
  // The key first: a certificate on disk without its key would be damaged.
  BERTH_RETURN_IF_ERROR(
      executor::WriteFileAtomically(dir_ + "/" + kKeyFile, current_.key_pem, 0600));
  BERTH_RETURN_IF_ERROR(
      executor::WriteFileAtomically(dir_ + "/" + kCertFile, current_.cert_pem, 0644));
  return executor::WriteFileAtomically(dir_ + "/" + kTrustFile, current_.trust_pem, 0644);
}

// From now, not from the certificate's start: its start is backdated for
// clocks that differ, which for a short life would make it due at once.
void NodeTls::ScheduleRenewal() {
  Result<tls::CertificateInfo> info = tls::ParseCertificate(current_.cert_pem);
  if (!info.ok()) return;
  const Timestamp now = SystemNow();
  std::uniform_real_distribution<double> point(0.5, 0.8);
  renew_at_ = now + std::chrono::duration_cast<Duration>((info->not_after - now) * point(random_));
}

tls::Credentials NodeTls::credentials() const {
  std::lock_guard lock(mu_);
  return current_;
}

bool NodeTls::has_trust() const {
  std::lock_guard lock(mu_);
  return !current_.trust_pem.empty();
}

bool NodeTls::has_certificate() const {
  std::lock_guard lock(mu_);
  return !current_.cert_pem.empty();
}

std::string NodeTls::root_digest() const {
  std::lock_guard lock(mu_);
  return digest_;
}

bool NodeTls::Due(const std::string& ca_digest) const {
  std::lock_guard lock(mu_);
  if (current_.cert_pem.empty()) return false;
  return SystemNow() >= renew_at_ || (!ca_digest.empty() && ca_digest != digest_);
}

}  // namespace berth::node
