// The cluster at one revision, from the control loop's counts: GET
// /v1/snapshot (docs/api.md, "Snapshot"), what the dashboard draws.
#include "daemon/daemon.h"
#include "daemon/routes/routes.h"
#include "daemon/views/count_views.h"

namespace berth::daemon {

void Daemon::AddSnapshotRoutes() {
  server_->Route("GET", "/v1/snapshot", [this](const ApiRequest&) -> Result<ApiResponse> {
    if (!leading()) return NotLeading();
    std::shared_ptr<const CountsSnapshot> counts = Counts();
    // Only before the loop's first pass, which starts with berthd.
    if (!counts && loop_->WaitSettled(std::chrono::seconds(5))) counts = Counts();
    if (!counts) return Status::Unavailable("the control loop has not finished a pass yet");
    Json leader;
    if (leadership_ != nullptr) {
      const Leadership::View view = leadership_->view();
      leader = {{"id", view.leader_id}, {"epoch", view.epoch}};
    }
    return ApiResponse{200, nullptr, SnapshotText(*counts, leader), "application/json"};
  });
}

}  // namespace berth::daemon
