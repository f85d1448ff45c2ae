#include "api/lifecycle_codec.h"

namespace berth::api {

Status ReadDuration(const Json& value, const std::string& path, Duration* out) {
  if (!value.is_string()) return TypeError(value, path, "a duration such as \"5s\"");
  Result<Duration> d = ParseDuration(value.get<std::string>());
  if (!d.ok()) return FieldError(path, d.status().message());
  *out = *d;
  return Status::Ok();
}

Status DecodeRestartPolicy(const Json& value, const std::string& path,
                           orchestrator::RestartPolicy* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"condition", "delay", "max_attempts", "window"}));
  orchestrator::RestartPolicy policy;
  if (auto it = value.find("condition"); it != value.end()) {
    std::string text;
    BERTH_RETURN_IF_ERROR(ReadString(*it, FieldPath(path, "condition"), &text));
    Result<orchestrator::RestartCondition> condition = orchestrator::ParseRestartCondition(text);
    if (!condition.ok())
      return FieldError(FieldPath(path, "condition"), condition.status().message());
    policy.condition = *condition;
  }
  if (auto it = value.find("delay"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadDuration(*it, FieldPath(path, "delay"), &policy.delay));
  if (auto it = value.find("max_attempts"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadUnsigned(*it, FieldPath(path, "max_attempts"), &policy.max_attempts));
  if (auto it = value.find("window"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadDuration(*it, FieldPath(path, "window"), &policy.window));
  *out = policy;
  return Status::Ok();
}

Json EncodeRestartPolicy(const orchestrator::RestartPolicy& policy) {
  return Json{{"condition", std::string(orchestrator::ToString(policy.condition))},
              {"delay", FormatDuration(policy.delay)},
              {"max_attempts", policy.max_attempts},
              {"window", FormatDuration(policy.window)}};
}

}  // namespace berth::api
