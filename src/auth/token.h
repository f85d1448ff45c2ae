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

namespace berth::auth {

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

// A new secret: `bytes` random bytes (from /dev/urandom) as hex.
std::string NewSecret(size_t bytes = 32);

// Creates the token file `path` (mode 0600, fsynced) holding `token`;
// Unavailable when it exists or cannot be written.
Result<std::string> CreateTokenFile(const std::string& path,
                                    const std::string& token = NewSecret());

// Reads an existing token file (berthd's copy of its agents' token), with
// the same checks.
Result<std::string> ReadToken(const std::string& path);

}  // namespace berth::auth
