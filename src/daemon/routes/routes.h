// What every route file of berthd shares: the API types they name, and
// the answer the DELETE routes give.
#pragma once

#include <string>

#include "api/http_server.h"
#include "api/json_fields.h"
#include "core/status.h"

namespace berth::daemon {

using api::Answer;
using api::ApiRequest;
using api::ApiResponse;
using api::Json;
using api::WithBody;

// {"removed": id}, or why the removal failed.
inline Result<api::Json> Removed(const Status& status, const std::string& id) {
  if (!status.ok()) return status;
  return api::Json{{"removed", id}};
}

}  // namespace berth::daemon
