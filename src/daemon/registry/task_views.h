// Read-only views of the tasks the control loop wrote (kind "task"): list
// (optionally of one service), get, and `why`, the explanation of a task
// that is not running. A view is the stored body with what the body leaves
// to the store and the defaults (stored_task.h): its "id", "desired_state"
// "running", and the "revision"; a service's task also gets its "name", as
// `docker service ps` shows it: "<service>.<slot>" or "<service>.<node>".
//
// A task is found by its id or by its name: a name means the newest task of
// that slot or node (the highest serial, orchestrator::TaskId), so `task why
// web.1` follows slot 1 of web across restarts and updates.
//
// Thread-safe (the store is).
#pragma once

#include <string>
#include <string_view>

#include "api/json_fields.h"
#include "core/resources.h"
#include "core/status.h"
#include "store/store.h"

namespace berth::daemon {

// Which tasks a list shows; an empty field does not filter.
struct TaskFilter {
  std::string service;  // not those of an earlier service of the same name
  std::string node;
  std::string state;          // a task state ("running"); checked
  std::string desired_state;  // "running", "shutdown", "complete"; checked
  std::string job;            // a job's tasks
};
// {"tasks": [...]} ordered by id. InvalidArgument: an unknown state.
Result<api::Json> ListTasks(const store::Store& store, const TaskFilter& filter);
inline Result<api::Json> ListTasks(const store::Store& store, std::string_view service) {
  return ListTasks(store, TaskFilter{std::string(service), "", "", "", ""});
}
// By id or name.
Result<api::Json> GetTask(const store::Store& store, std::string_view id_or_name);
// {"task", "name"?, "state", "node"?, "reason"}: the task's last status
// message, which for a pending task is the placement engine's explanation.
Result<api::Json> WhyTask(const store::Store& store, std::string_view id_or_name);
// {"tasks": N, "allocated": {"cpu", "memory"}, "free": {"cpu", "memory"}}:
// what the node's placed tasks that hold their reservations (assigned to
// running, not ended) reserve, by their version's template, and what is
// left of `node`'s resources (a node view). CPUs as "<milli>m", memory in
// bytes (api::NodeUseOf). Reads every task: for `node inspect`, not for a loop.
Result<api::Json> NodeUsage(const store::Store& store, const api::Json& node);

}  // namespace berth::daemon
