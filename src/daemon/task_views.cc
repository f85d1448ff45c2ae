#include "daemon/task_views.h"

#include "daemon/stored_kind.h"

namespace berth::daemon {
namespace {

api::Json TaskView(const store::StoredObject& o) {
  api::Json view = StoredKind::View(o);
  view["id"] = o.id;
  if (!view.contains("desired_state")) view["desired_state"] = "running";
  return view;
}

}  // namespace

Result<api::Json> ListTasks(const store::Store& store, std::string_view service) {
  Result<std::vector<store::StoredObject>> objects = store.List("task");
  if (!objects.ok()) return objects.status();
  api::Json tasks = api::Json::array();
  for (const store::StoredObject& o : *objects) {
    api::Json task = TaskView(o);
    if (service.empty() || task.value("service", "") == service) tasks.push_back(std::move(task));
  }
  return api::Json{{"tasks", std::move(tasks)}};
}

Result<api::Json> GetTask(const store::Store& store, std::string_view id) {
  Result<std::optional<store::StoredObject>> found = store.Get("task", id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no task '" + std::string(id) + "'");
  return TaskView(**found);
}

Result<api::Json> WhyTask(const store::Store& store, std::string_view id) {
  Result<api::Json> task = GetTask(store, id);
  if (!task.ok()) return task.status();
  api::Json why = {{"task", (*task)["id"]},
                   {"state", task->value("state", "pending")},
                   {"reason", task->value("message", "")}};
  if (task->contains("node")) why["node"] = (*task)["node"];
  return why;
}

}  // namespace berth::daemon
