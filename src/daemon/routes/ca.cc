// The CA's admin routes (docs/api.md, "Certificates"): `berth ca rotate`.
// GET /v1/ca, which anyone may read, is a node route (nodes/node_routes.cc).
#include "daemon/daemon.h"

namespace berth::daemon {

using api::ApiRequest;
using api::ApiResponse;
using api::Json;

void Daemon::AddCaRoutes() {
  // Rotation happens on the leader, which signs nodes' certificates.
  server_->Route("POST", "/v1/ca/rotate", [this](const ApiRequest& r) -> Result<ApiResponse> {
    if (!leading()) return NotLeading();
    if (!tls_)
      return Status::InvalidArgument("berthd serves plain HTTP (--insecure-http): no CA to rotate");
    const bool finish = r.Query("finish") == "true";
    BERTH_RETURN_IF_ERROR(finish ? ca_->FinishRotation() : ca_->Rotate());
    // A token carries the digest of the root nodes check; once the old root
    // is gone, tokens with its digest cannot join, so the token changes.
    if (finish) BERTH_RETURN_IF_ERROR(dispatcher_->RotateJoinToken().status());
    return ApiResponse{200, Json::parse(ca_->Describe()), "", ""};
  });
}

}  // namespace berth::daemon
