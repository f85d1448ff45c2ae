// On a shared store (etcd) every berthd replica serves one API token, kept
// in the store (kind "api_token"): the first replica stores its own (made if
// absent); the others write the stored one into their data directory's token
// file (auth/token.h). InvalidArgument when that file holds another token.
#pragma once

#include <string>

#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

inline constexpr const char* kSharedTokenKind = "api_token";
Result<std::string> ShareToken(store::Store& store, const std::string& data_dir);

}  // namespace berth::daemon
