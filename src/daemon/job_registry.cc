#include "daemon/job_registry.h"

#include <algorithm>
#include <map>

#include "api/cluster_codec.h"
#include "core/task.h"

namespace berth::daemon {
namespace {

using api::Json;

// Checks one entry of "tasks" and returns its stored "run" part.
Result<Json> ReadRun(const Json& task, const std::string& path) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(task, path, {"name", "duration", "outcome"}));
  std::string name;
  BERTH_RETURN_IF_ERROR(api::ReadField(task, "name", path, api::ReadId, &name));
  Duration duration = std::chrono::seconds(1);
  BERTH_RETURN_IF_ERROR(api::ReadField(task, "duration", path, api::ReadSeconds, &duration));
  const std::string outcome = task.value("outcome", "complete");
  if (outcome != "complete" && outcome != "fail")
    return api::FieldError(api::FieldPath(path, "outcome"), "expected complete or fail, got '" + outcome + "'");
  return Json{{"duration_ms", std::chrono::duration_cast<std::chrono::milliseconds>(duration).count()},
              {"outcome", outcome}};
}

Status Validate(const Json& job) {
  BERTH_RETURN_IF_ERROR(api::CheckObject(job, "", {"id", "requestor", "task", "tasks"}));
  std::string id, requestor;
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "id", "", api::ReadId, &id));
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "requestor", "", api::ReadString, &requestor));
  if (job.contains("task")) {
    TaskSpec spec;
    BERTH_RETURN_IF_ERROR(api::DecodeTaskSpec(job["task"], "task", &spec));
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
  Json stored = {{"id", id}, {"requestor", job["requestor"]}, {"tasks", job["tasks"].size()}, {"submitted_at", now}};
  if (job.contains("task")) stored["task"] = job["task"];
  writes.push_back(store::Write::Create("job", id, stored.dump()));
  for (size_t i = 0; i < job["tasks"].size(); ++i) {
    const std::string path = api::IndexPath("tasks", i);
    Result<Json> run = ReadRun(job["tasks"][i], path);
    if (!run.ok()) return run.status();
    const std::string task_id = id + "." + std::to_string(i + 1);
    Json task = {{"id", task_id}, {"job", id}, {"name", job["tasks"][i].value("name", task_id)},
                 {"state", "new"}, {"desired_state", "running"}, {"run", *run},
                 {"updated_at", now}, {"message", "waiting for admission"},
                 {"task", job.value("task", Json::object())}};
    writes.push_back(store::Write::Create("task", task_id, task.dump()));
  }
  Result<int64_t> committed = store_.Commit(writes);
  if (!committed.ok()) return committed.status();
  stored["revision"] = *committed;
  return stored;
}

Result<Json> JobRegistry::Get(std::string_view id) const {
  Result<std::optional<store::StoredObject>> found = store_.Get("job", id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no job '" + std::string(id) + "'");
  Json job = Json::parse((*found)->body);
  job["revision"] = (*found)->revision;
  Result<std::vector<store::StoredObject>> tasks = store_.List("task");
  if (!tasks.ok()) return tasks.status();
  std::map<std::string, int> states;
  for (const store::StoredObject& t : *tasks) {
    if (!t.id.starts_with(std::string(id) + ".")) continue;
    const Json task = Json::parse(t.body);
    if (task.value("job", "") == id) ++states[task.value("state", "new")];
  }
  job["states"] = states;
  return job;
}

Result<Json> JobRegistry::List() const {
  Result<std::vector<store::StoredObject>> objects = store_.List("job");
  if (!objects.ok()) return objects.status();
  std::sort(objects->begin(), objects->end(),
            [](const auto& a, const auto& b) { return a.revision < b.revision; });
  Json jobs = Json::array();
  for (const store::StoredObject& o : *objects) {
    Json job = Json::parse(o.body);
    job["revision"] = o.revision;
    jobs.push_back(std::move(job));
  }
  return Json{{"jobs", std::move(jobs)}};
}

Result<Json> JobRegistry::Kill(std::string_view id) {
  Result<std::optional<store::StoredObject>> found = store_.Get("job", id);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return Status::NotFound("no job '" + std::string(id) + "'");
  Json job = Json::parse((*found)->body);
  job["killed"] = true;
  store::Write write = store::Write::Put("job", (*found)->id, job.dump());
  write.IfRevision((*found)->revision);
  Result<int64_t> committed = store_.Commit({write});
  if (!committed.ok()) return committed.status();
  job["revision"] = *committed;
  return job;
}

}  // namespace berth::daemon
