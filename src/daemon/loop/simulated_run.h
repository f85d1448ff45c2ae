// How the simulated executor runs a task: {"duration": seconds (default 1
// for job tasks, given for services), "outcome": "complete" | "fail"},
// stored as {"duration_ms", "outcome"}. Shared by jobs and services. Pure.
#pragma once

#include <string>

#include "api/json_fields.h"
#include "core/status.h"

namespace berth::daemon {

// Reads the "duration" and "outcome" fields of `value` (the caller checks
// for unknown fields); errors name `path`.
Result<api::Json> ReadSimulatedRun(const api::Json& value, const std::string& path);

}  // namespace berth::daemon
