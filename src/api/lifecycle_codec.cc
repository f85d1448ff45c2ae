#include "api/lifecycle_codec.h"

namespace berth::api {

Status ReadDuration(const Json& value, const std::string& path, Duration* out) {
  if (!value.is_string()) return TypeError(value, path, "a duration such as \"5s\"");
  Result<Duration> d = ParseDuration(value.get<std::string>());
  if (!d.ok()) return FieldError(path, d.status().message());
  *out = *d;
  return Status::Ok();
}

namespace {

// A field naming one value of an enum, read with `parse`.
template <typename Enum>
Status ReadNamed(const Json& value, const std::string& path,
                 Result<Enum> (*parse)(std::string_view), Enum* out) {
  std::string text;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &text));
  Result<Enum> parsed = parse(text);
  if (!parsed.ok()) return FieldError(path, parsed.status().message());
  *out = *parsed;
  return Status::Ok();
}

}  // namespace

Status DecodeRestartPolicy(const Json& value, const std::string& path,
                           orchestrator::RestartPolicy* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(value, path, {"condition", "delay", "max_attempts", "window"}));
  orchestrator::RestartPolicy policy = *out;
  if (auto it = value.find("condition"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadNamed(*it, FieldPath(path, "condition"),
                                    &orchestrator::ParseRestartCondition, &policy.condition));
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

Status DecodeUpdateConfig(const Json& value, const std::string& path,
                          orchestrator::UpdateConfig* out) {
  BERTH_RETURN_IF_ERROR(CheckObject(
      value, path,
      {"parallelism", "delay", "failure_action", "monitor", "max_failure_ratio", "order"}));
  orchestrator::UpdateConfig config = *out;
  if (auto it = value.find("parallelism"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadUnsigned(*it, FieldPath(path, "parallelism"), &config.parallelism));
  if (auto it = value.find("delay"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadDuration(*it, FieldPath(path, "delay"), &config.delay));
  if (auto it = value.find("monitor"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadDuration(*it, FieldPath(path, "monitor"), &config.monitor));
  if (auto it = value.find("max_failure_ratio"); it != value.end()) {
    if (!it->is_number() || it->get<double>() < 0 || it->get<double>() > 1)
      return FieldError(FieldPath(path, "max_failure_ratio"),
                        "expected a number from 0 to 1, got " + Brief(*it));
    config.max_failure_ratio = it->get<double>();
  }
  if (auto it = value.find("failure_action"); it != value.end())
    BERTH_RETURN_IF_ERROR(ReadNamed(*it, FieldPath(path, "failure_action"),
                                    &orchestrator::ParseFailureAction, &config.failure_action));
  if (auto it = value.find("order"); it != value.end())
    BERTH_RETURN_IF_ERROR(
        ReadNamed(*it, FieldPath(path, "order"), &orchestrator::ParseUpdateOrder, &config.order));
  *out = config;
  return Status::Ok();
}

Json EncodeUpdateConfig(const orchestrator::UpdateConfig& config) {
  return Json{{"parallelism", config.parallelism},
              {"delay", FormatDuration(config.delay)},
              {"failure_action", std::string(orchestrator::ToString(config.failure_action))},
              {"monitor", FormatDuration(config.monitor)},
              {"max_failure_ratio", config.max_failure_ratio},
              {"order", std::string(orchestrator::ToString(config.order))}};
}

Status CheckRebalanceSetting(const Json& value, const std::string& path) {
  std::string text;
  BERTH_RETURN_IF_ERROR(ReadString(value, path, &text));
  if (text != "manual" && text != "on-join")
    return FieldError(path, "rebalance '" + text + "' is not one of manual, on-join");
  return Status::Ok();
}

uint64_t TemplateVersionOf(const Json& service) {
  const uint64_t version = service.value("spec_version", uint64_t{0});
  const auto it = service.find("template_version");
  return it != service.end() && it->is_number_unsigned() ? it->get<uint64_t>() : version;
}

orchestrator::TemplateVersions TemplateVersionsOf(const Json& service) {
  orchestrator::TemplateVersions versions{TemplateVersionOf(service), {}};
  const auto it = service.find("template_earlier");
  if (it == service.end() || !it->is_array()) return versions;
  for (const Json& range : *it)
    if (range.is_array() && range.size() == 2 && range[0].is_number_unsigned() &&
        range[1].is_number_unsigned())
      versions.earlier.emplace_back(range[0].get<uint64_t>(), range[1].get<uint64_t>());
  return versions;
}

void PutTemplateVersions(const orchestrator::TemplateVersions& versions, Json* service) {
  (*service)["template_version"] = versions.since;
  service->erase("template_earlier");
  if (versions.earlier.empty()) return;
  Json ranges = Json::array();
  for (const auto& [from, to] : versions.earlier) ranges.push_back({from, to});
  (*service)["template_earlier"] = ranges;
}

}  // namespace berth::api
