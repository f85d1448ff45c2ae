// The API bearer token of a data directory: `<data_dir>/token`, created at
// first start with 32 random bytes (hex) and mode 0600. The CLI reads the
// same file (or BERTH_TOKEN). Called once at start-up.
#pragma once

#include <string>

#include "core/status.h"

namespace berth::daemon {

// Reads the token, creating it when absent. InvalidArgument when the file is
// readable or writable by group or others, or empty; Unavailable when it
// cannot be read or created.
Result<std::string> LoadOrCreateToken(const std::string& data_dir);

// Reads an existing token file (berthd's copy of its agents' token), with
// the same checks.
Result<std::string> ReadToken(const std::string& path);

}  // namespace berth::daemon
