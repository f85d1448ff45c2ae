// The service fields of the task lifecycle (docs/api.md, "service"):
// restart_policy, as `docker service create --restart-*` sets it, and
// update_config / rollback_config, as `--update-*` / `--rollback-*`.
//
//   "restart_policy": {"condition": "none" | "on-failure" | "any",
//                      "delay": "5s", "max_attempts": 0, "window": "0s"}
//   "update_config":  {"parallelism": 1, "delay": "0s",
//                      "failure_action": "pause" | "continue" | "rollback",
//                      "monitor": "5s", "max_failure_ratio": 0,
//                      "order": "stop-first" | "start-first"}
//   "rebalance":      "manual" | "on-join"
//
// Every field may be left out: the Decode functions change only the fields
// given in *out (start from a default-made value for the defaults of
// orchestrator/restart_policy.h and update_config.h, or from a stored one to
// apply a partial change), and nothing when they refuse.
// Durations are Docker's flag values (ParseDuration of core/time.h).
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <string>

#include "api/json_fields.h"
#include "core/status.h"
#include "orchestrator/restart_policy.h"
#include "orchestrator/template_versions.h"
#include "orchestrator/update_config.h"

namespace berth::api {

Status DecodeRestartPolicy(const Json& value, const std::string& path,
                           orchestrator::RestartPolicy* out);
// Every field, durations in their shortest form.
Json EncodeRestartPolicy(const orchestrator::RestartPolicy& policy);

Status DecodeUpdateConfig(const Json& value, const std::string& path,
                          orchestrator::UpdateConfig* out);
Json EncodeUpdateConfig(const orchestrator::UpdateConfig& config);

// A service's rebalance setting (docs/placement.md, "Rebalancing"):
// "manual" (the default: only `berth service rebalance`) or "on-join" (also
// when a node joins or becomes able to take tasks).
Status CheckRebalanceSetting(const Json& value, const std::string& path);

// The first spec version of a stored service whose tasks run its current
// template ("template_version"; absent: its spec_version). A rebalance
// makes a new spec version without a new template, so tasks of versions
// from this one on run the current template and older ones previous_task.
uint64_t TemplateVersionOf(const Json& service);

// The versions of a stored service that run its current template
// (orchestrator/template_versions.h): "template_version" (TemplateVersionOf)
// and "template_earlier", a list of [from, to) ranges below it.
orchestrator::TemplateVersions TemplateVersionsOf(const Json& service);
// Writes "template_version" and "template_earlier" (none when empty).
void PutTemplateVersions(const orchestrator::TemplateVersions& versions, Json* service);

// A duration field as Docker's flags write it ("5s", "1m30s").
Status ReadDuration(const Json& value, const std::string& path, Duration* out);

}  // namespace berth::api
