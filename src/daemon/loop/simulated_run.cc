#include "daemon/loop/simulated_run.h"

#include "core/names.h"

namespace berth::daemon {

Result<api::Json> ReadSimulatedRun(const api::Json& value, const std::string& path) {
  Duration duration = std::chrono::seconds(1);
  BERTH_RETURN_IF_ERROR(api::ReadField(value, "duration", path, api::ReadSeconds, &duration));
  std::string outcome = "complete";
  BERTH_RETURN_IF_ERROR(api::ReadField(value, "outcome", path, api::ReadString, &outcome));
  if (outcome != "complete" && outcome != "fail")
    return api::FieldError(api::FieldPath(path, "outcome"),
                           "expected complete or fail, got " + Quoted(outcome));
  return api::Json{
      {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(duration).count()},
      {"outcome", outcome}};
}

}  // namespace berth::daemon
