// On a shared store (etcd) every berthd replica serves one API token, kept
// in the store (kind "api_token"): the first replica stores its own (made if
// absent); the others write the stored one into their data directory's token
// file (auth/token.h). InvalidArgument when that file holds another token.
// With a CA the store keeps the token's hash and the token sealed under the
// CA's unlock key ({"hash", "sealed"}), which every replica holds; without
// (plain HTTP), the token as it is.
#pragma once

#include <string>

#include "core/status.h"
#include "daemon/ca/cluster_ca.h"
#include "store/store.h"

namespace berth::daemon {

inline constexpr const char* kSharedTokenKind = "api_token";
Result<std::string> ShareToken(store::Store& store, const std::string& data_dir,
                               const ClusterCa* ca);

}  // namespace berth::daemon
