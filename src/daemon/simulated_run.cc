#include "daemon/simulated_run.h"

namespace berth::daemon {

Result<api::Json> ReadSimulatedRun(const api::Json& value, const std::string& path) {
  Duration duration = std::chrono::seconds(1);
  BERTH_RETURN_IF_ERROR(api::ReadField(value, "duration", path, api::ReadSeconds, &duration));
  const std::string outcome = value.value("outcome", "complete");
  if (outcome != "complete" && outcome != "fail")
    return api::FieldError(api::FieldPath(path, "outcome"),
                           "expected complete or fail, got '" + outcome + "'");
  return api::Json{
      {"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(duration).count()},
      {"outcome", outcome}};
}

}  // namespace berth::daemon
