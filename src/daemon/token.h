// The API bearer token of a data directory: `<data_dir>/token`, created at
// first start with 32 random bytes (64 hex characters) and mode 0600. The
// CLI reads the same file (or BERTH_TOKEN). Called once at start-up.
//
// A token is 32 to 1024 characters of the RFC 6750 token alphabet (letters,
// digits and - . _ ~ + / =). A token file must be a regular file that only
// its owner can read.
#pragma once

#include <string>

#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

inline constexpr size_t kMinTokenLength = 32;
inline constexpr size_t kMaxTokenLength = 1024;

// What LoadOrCreateToken may do when the token file is absent.
enum class MissingToken {
  kCreate,  // make a new token (a fresh data directory, or the operator asked)
  kRefuse,  // InvalidArgument: the data directory holds data whose clients
            // have the old token, so a new one would lock them out silently
};

// Reads the token, or creates it when absent and `missing` allows.
// InvalidArgument when the file is not a regular file, is readable or
// writable by group or others, or holds no valid token (each message says
// what to do); Unavailable when it cannot be read or created.
Result<std::string> LoadOrCreateToken(const std::string& data_dir,
                                      MissingToken missing = MissingToken::kCreate);

// On a shared store (etcd) every berthd replica serves one token, kept in
// the store (kind "api_token"): the first replica stores its own (made if
// absent); the others write the stored one into their data directory's
// token file. InvalidArgument when that file holds another token.
inline constexpr const char* kSharedTokenKind = "api_token";
Result<std::string> ShareToken(store::Store& store, const std::string& data_dir);

// A new secret: `bytes` random bytes (from /dev/urandom) as hex.
std::string NewSecret(size_t bytes = 32);

// Reads an existing token file (berthd's copy of its agents' token), with
// the same checks.
Result<std::string> ReadToken(const std::string& path);

}  // namespace berth::daemon
