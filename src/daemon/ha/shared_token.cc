#include "daemon/ha/shared_token.h"

#include <sys/stat.h>

#include <cerrno>

#include "api/json_fields.h"
#include "auth/token.h"
#include "tls/seal.h"

namespace berth::daemon {

namespace {

// What the store keeps of the token.
Result<std::string> Record(const std::string& token, const ClusterCa* ca) {
  if (ca == nullptr) return token;
  Result<std::string> sealed = ca->Seal(token);
  if (!sealed.ok()) return sealed.status();
  return api::Json{{"hash", tls::HashSecret(token)}, {"sealed", *sealed}}.dump();
}

// The token a stored record holds.
Result<std::string> TokenOf(const std::string& body, const ClusterCa* ca) {
  const api::Json record = api::Json::parse(body, nullptr, false);
  if (!record.is_object()) return body;  // an older berthd's (or plain HTTP's) token as it is
  if (ca == nullptr)
    return Status::InvalidArgument(
        "the cluster's API token is sealed under the CA's unlock key: this replica needs TLS "
        "(drop --insecure-http)");
  Result<std::string> token = ca->Unseal(record.value("sealed", ""));
  if (!token.ok())
    return Status::InvalidArgument("the cluster's API token: " + token.status().message());
  return token;
}

}  // namespace

Result<std::string> ShareToken(store::Store& store, const std::string& data_dir,
                               const ClusterCa* ca) {
  Result<std::optional<store::StoredObject>> stored = store.Get(kSharedTokenKind, "admin");
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    Result<std::string> local = auth::LoadOrCreateToken(data_dir, auth::MissingToken::kCreate);
    if (!local.ok()) return local;
    Result<std::string> record = Record(*local, ca);
    if (!record.ok()) return record.status();
    Result<int64_t> put = store.Commit({store::Write::Create(kSharedTokenKind, "admin", *record)});
    if (put.ok()) return local;
    if (put.status().code() != StatusCode::kConflict) return put.status();
    stored = store.Get(kSharedTokenKind, "admin");  // another replica was first
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) return Status::Unavailable("the cluster's API token vanished");
  }
  Result<std::string> shared = TokenOf((*stored)->body, ca);
  if (!shared.ok()) return shared;
  const std::string& token = *shared;
  const std::string path = data_dir + "/token";
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 && errno == ENOENT)
    return auth::CreateTokenFile(path, token);
  Result<std::string> local = auth::ReadToken(path);
  if (!local.ok()) return local;
  if (*local != token)
    return Status::InvalidArgument(path +
                                   " holds another token than the cluster's (kept in etcd): "
                                   "remove the file, and berthd writes the cluster's token there");
  return token;
}

}  // namespace berth::daemon
