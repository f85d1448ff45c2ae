// Read-only views of the tasks the control loop wrote (kind "task"): list
// (optionally of one service), get, and `why`, the explanation of a task
// that is not running. A view is the stored body with what the body leaves
// to the store and the defaults (stored_task.h): its "id", "desired_state"
// "running", and the "revision". Thread-safe (the store is).
#pragma once

#include <string_view>

#include "api/json_fields.h"
#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

// {"tasks": [...]} ordered by id; only those of `service` when not empty.
Result<api::Json> ListTasks(const store::Store& store, std::string_view service);
Result<api::Json> GetTask(const store::Store& store, std::string_view id);
// {"task", "state", "node"?, "reason"}: the task's last status message, which
// for a pending task is the placement engine's explanation.
Result<api::Json> WhyTask(const store::Store& store, std::string_view id);

}  // namespace berth::daemon
