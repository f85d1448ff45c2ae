#include "daemon/ha/shared_token.h"

#include <sys/stat.h>

#include <cerrno>

#include "auth/token.h"

namespace berth::daemon {

Result<std::string> ShareToken(store::Store& store, const std::string& data_dir) {
  Result<std::optional<store::StoredObject>> stored = store.Get(kSharedTokenKind, "admin");
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) {
    Result<std::string> local = auth::LoadOrCreateToken(data_dir, auth::MissingToken::kCreate);
    if (!local.ok()) return local;
    Result<int64_t> put = store.Commit({store::Write::Create(kSharedTokenKind, "admin", *local)});
    if (put.ok()) return local;
    if (put.status().code() != StatusCode::kConflict) return put.status();
    stored = store.Get(kSharedTokenKind, "admin");  // another replica was first
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) return Status::Unavailable("the cluster's API token vanished");
  }
  const std::string& token = (*stored)->body;
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
