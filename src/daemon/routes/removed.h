// The answer the DELETE routes give: {"removed": id}, or why it failed.
#pragma once

#include <string>

#include "api/json_fields.h"
#include "core/status.h"

namespace berth::daemon {

inline Result<api::Json> Removed(const Status& status, const std::string& id) {
  if (!status.ok()) return status;
  return api::Json{{"removed", id}};
}

}  // namespace berth::daemon
