#include "daemon/registry/job_registry.h"

#include <algorithm>
#include <map>

#include "api/cluster_codec.h"
#include "core/task.h"
#include "daemon/loop/simulated_run.h"

namespace berth::daemon {
namespace {

using api::Json;

// Checks one entry of "tasks" and returns its stored "run" part.
Result<Json> ReadRun(const Json& task, const std::string& path) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(task, path, {"name", "duration", "outcome"}));
  std::string name;
  BERTH_RETURN_IF_ERROR(api::ReadField(task, "name", path, api::ReadName, &name));
  return ReadSimulatedRun(task, path);
}

Status Validate(const Json& job) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(job, "", {"id", "requestor", "task", "tasks"}));
  std::string id, requestor;
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "id", "", api::ReadId, &id));
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "requestor", "", api::ReadText, &requestor));
  if (job.contains("task")) {
    TaskSpec spec;
    BERTH_RETURN_IF_ERROR(api::DecodeTaskSpec(job["task"], "task", &spec));
    BERTH_RETURN_IF_ERROR(api::RefuseIngressPorts(job["task"], "task"));
  }
  if (!job.contains("tasks")) return api::FieldError("", "missing field 'tasks'");
  BERTH_RETURN_IF_ERROR(api::CheckArray(job["tasks"], "tasks"));
  if (job["tasks"].empty() || job["tasks"].size() > kMaxTasksPerJob)
    return api::FieldError("tasks", "expected 1 to " + std::to_string(kMaxTasksPerJob) + " tasks");
  return Status::Ok();
}

}  // namespace

Result<Json> JobRegistry::Submit(const Json& job) {
  BERTH_RETURN_IF_ERROR(Validate(job));
  const std::string id = job["id"];
  const std::string now = FormatRfc3339(clock_.Now());
  std::vector<store::Write> writes;
  Json stored = {{"id", id},
                 {"requestor", job["requestor"]},
                 {"tasks", job["tasks"].size()},
                 {"submitted_at", now}};
  if (job.contains("task")) stored["task"] = job["task"];
  writes.push_back(store::Write::Create("job", id, stored.dump()));
  writes.push_back(ClaimWorkloadName(id, "job"));
  for (size_t i = 0; i < job["tasks"].size(); ++i) {
    const std::string path = api::IndexPath("tasks", i);
    Result<Json> run = ReadRun(job["tasks"][i], path);
    if (!run.ok()) return run.status();
    const std::string task_id = id + "." + std::to_string(i + 1);
    Json task = {{"id", task_id},
                 {"job", id},
                 {"name", job["tasks"][i].value("name", task_id)},
                 {"state", "new"},
                 {"desired_state", "running"},
                 {"run", *run},
                 {"updated_at", now},
                 {"message", "waiting for admission"}};
    writes.push_back(store::Write::Create("task", task_id, task.dump()));
  }
  Result<int64_t> committed = store_.Commit(writes);
  if (!committed.ok()) return committed.status();
  stored["revision"] = *committed;
  return stored;
}

Result<Json> JobRegistry::Get(std::string_view id) const {
  Result<Json> job = jobs_.Get(id);
  if (!job.ok()) return job.status();
  Result<std::vector<store::StoredObject>> tasks = store_.List("task");
  if (!tasks.ok()) return tasks.status();
  std::map<std::string, int> states;
  for (const store::StoredObject& t : *tasks) {
    if (!t.id.starts_with(std::string(id) + ".")) continue;
    const Json task = Json::parse(t.body);
    if (task.value("job", "") == id) ++states[task.value("state", "new")];
  }
  (*job)["states"] = states;
  return job;
}

Result<Json> JobRegistry::List() const {
  Result<std::vector<store::StoredObject>> objects = store_.List("job");
  if (!objects.ok()) return objects.status();
  std::sort(objects->begin(), objects->end(),
            [](const auto& a, const auto& b) { return a.revision < b.revision; });
  Json jobs = Json::array();
  for (const store::StoredObject& o : *objects) jobs.push_back(StoredKind::View(o));
  return Json{{"jobs", std::move(jobs)}};
}

Result<Json> JobRegistry::Kill(std::string_view id) {
  Result<store::StoredObject> found = jobs_.Load(id);
  if (!found.ok()) return found.status();
  Json job = Json::parse(found->body);
  job["killed"] = true;
  return jobs_.Replace(*found, job);
}

}  // namespace berth::daemon
