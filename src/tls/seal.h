// Seal and Open: a secret kept where others can read it (the CA's key in
// the store) is encrypted with AES-256-GCM under a key the berthd replicas
// hold (docs/security.md, "Secrets at rest"), as Swarm's autolock keeps
// its raft data. The sealed text is "v1:" and base64 of nonce (12 bytes),
// ciphertext and tag (16 bytes); the tag makes a changed text or a wrong
// key fail to open instead of giving garbage.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace berth::tls {

// key: 64 hex characters (32 bytes), as auth::NewSecret() makes.
Result<std::string> Seal(std::string_view plaintext, std::string_view key);
// InvalidArgument when the key is not the one it was sealed with, or the
// text was changed.
Result<std::string> Open(std::string_view sealed, std::string_view key);

// SHA-256 of `secret` as 64 hex characters: what is kept of a secret that
// is only ever checked (node credentials, join tokens, the admin token).
// The secrets are 256-bit random values, so no salt or slow hash is needed:
// there is nothing to guess.
std::string HashSecret(std::string_view secret);

}  // namespace berth::tls
