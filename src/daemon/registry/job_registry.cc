#include "daemon/registry/job_registry.h"

#include <algorithm>
#include <map>

#include "api/cluster_codec.h"
#include "api/process_codec.h"
#include "core/task.h"
#include "daemon/loop/simulated_run.h"
#include "daemon/registry/job_parts.h"

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

// Every task's args and env must expand (the first task's as well as any:
// the template is the same but for the index).
Status CheckIndexTemplate(const Json& task) {
  std::optional<executor::ProcessSpec> process;
  BERTH_RETURN_IF_ERROR(api::DecodeProcessSpec(task, "task", &process));
  if (!process) return Status::Ok();
  return api::ExpandProcessIndex(*process, "task", 1).status();
}

// The template: its placement part, and its process. With per-task
// "commands" the template's process fields are only what the tasks share
// (env, workdir, stop grace, limits); env values may still hold {{.Index}}.
Status CheckTemplate(const Json& task, bool per_task_commands) {
  TaskSpec spec;
  if (!per_task_commands) {
    BERTH_RETURN_IF_ERROR(api::DecodeTaskSpec(task, "task", &spec));
    BERTH_RETURN_IF_ERROR(api::RefuseIngressPorts(task, "task"));
    return CheckIndexTemplate(task);
  }
  executor::ProcessSpec shared;
  BERTH_RETURN_IF_ERROR(api::DecodeSharedProcess(task, "task", &shared));
  BERTH_RETURN_IF_ERROR(api::DecodeTaskSpec(api::WithoutProcessFields(task), "task", &spec));
  BERTH_RETURN_IF_ERROR(api::RefuseIngressPorts(task, "task"));
  return api::ExpandProcessIndex(shared, "task", 1).status();
}

// "commands", when given: one command line per entry of "tasks" (checked
// first, so the count is known to be in range).
Status CheckCommands(const Json& job) {
  const auto it = job.find("commands");
  if (it == job.end()) return Status::Ok();
  BERTH_RETURN_IF_ERROR(api::CheckArray(*it, "commands"));
  if (it->size() != job["tasks"].size())
    return api::FieldError("commands", "expected one command line per task (" +
                                           std::to_string(job["tasks"].size()) + "), got " +
                                           std::to_string(it->size()));
  std::vector<std::vector<std::string>> commands;
  return api::DecodeCommands(*it, "commands", &commands);
}

Status Validate(const Json& job) {
  BERTH_RETURN_IF_ERROR(
      api::CheckObject(job, "", {"id", "requestor", "task", "tasks", "max_retries", "commands"}));
  std::string id, requestor;
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "id", "", api::ReadId, &id));
  BERTH_RETURN_IF_ERROR(api::RequireField(job, "requestor", "", api::ReadText, &requestor));
  if (job.contains("task"))
    BERTH_RETURN_IF_ERROR(CheckTemplate(job["task"], job.contains("commands")));
  if (auto it = job.find("max_retries");
      it != job.end() &&
      (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxRetries))
    return api::FieldError("max_retries", "expected an integer from 0 to " +
                                              std::to_string(kMaxRetries) + ", got " + it->dump());
  if (!job.contains("tasks")) return api::FieldError("", "missing field 'tasks'");
  BERTH_RETURN_IF_ERROR(api::CheckArray(job["tasks"], "tasks"));
  if (job["tasks"].empty() || job["tasks"].size() > kMaxTasksPerJob)
    return api::FieldError("tasks", "expected 1 to " + std::to_string(kMaxTasksPerJob) + " tasks");
  return CheckCommands(job);
}

// Counts the job tasks among `tasks` by job and state.
void CountStates(const std::vector<store::StoredObject>& tasks,
                 std::map<std::string, std::map<std::string, int>>* states) {
  for (const store::StoredObject& t : tasks) {
    const Json task = Json::parse(t.body, nullptr, false);
    if (!task.is_object() || !task.contains("job")) continue;
    ++(*states)[task.value("job", "")][task.value("state", "new")];
  }
}

// The job's "states" and "state", derived from its tasks'.
void AddProgress(const std::map<std::string, int>& states, Json* job) {
  (*job)["states"] = states;
  (*job)["state"] =
      JobStateOf((*job)["states"], job->value("tasks", int64_t{0}), job->value("killed", false));
}

// The revision of job `id` if `submission` stored it.
std::optional<int64_t> StoredBy(const store::Store& store, const std::string& id,
                                const std::string& submission) {
  Result<std::optional<store::StoredObject>> stored = store.Get("job", id);
  if (!stored.ok() || !stored->has_value()) return std::nullopt;
  const Json job = Json::parse((*stored)->body, nullptr, false);
  const std::string* by = SubmissionOf(job);
  if (by == nullptr || *by != submission) return std::nullopt;
  return (*stored)->revision;
}

}  // namespace

Result<Json> JobRegistry::Submit(const Json& job) {
  BERTH_RETURN_IF_ERROR(Validate(job));
  for (size_t i = 0; i < job["tasks"].size(); ++i)
    BERTH_RETURN_IF_ERROR(ReadRun(job["tasks"][i], api::IndexPath("tasks", i)).status());
  const std::string id = job["id"];
  const std::string submission = NewSubmission();
  Json stored = {{"id", id},
                 {"requestor", job["requestor"]},
                 {"tasks", job["tasks"].size()},
                 {"max_retries", job.value("max_retries", kDefaultMaxRetries)},
                 {"submitted_at", FormatRfc3339(clock_.Now())},
                 {"submission", submission}};
  if (job.contains("task")) stored["task"] = job["task"];
  // The template then holds only what the tasks share; their lines are in
  // the parts.
  if (job.contains("commands")) stored["per_task_commands"] = true;
  const Json* commands = job.contains("commands") ? &job["commands"] : nullptr;
  const std::vector<store::Write> parts = EncodeParts(id, submission, job["tasks"], commands);
  const std::vector<store::Write> record = {store::Write::Create("job", id, stored.dump()),
                                            ClaimWorkloadName(id, "job")};
  Result<int64_t> committed = CommitJob(submission, parts, record);
  if (!committed.ok()) return committed.status();
  stored["revision"] = *committed;
  return stored;
}

// In one commit when the store takes it; else the parts first, in as many
// commits as it needs, and the job record last (job_parts.h, "Atomicity").
Result<int64_t> JobRegistry::CommitJob(const std::string& submission,
                                       const std::vector<store::Write>& parts,
                                       const std::vector<store::Write>& record) {
  const store::Store::BatchLimits limits = store_.batch_limits();
  std::vector<store::Write> all = parts;
  all.insert(all.end(), record.begin(), record.end());
  if (store::SplitBatch(all, limits).size() == 1) return store_.Commit(all);
  std::vector<store::Write> written;
  Result<int64_t> committed = int64_t{0};
  for (const std::vector<store::Write>& batch : store::SplitBatch(parts, limits)) {
    committed = store_.Commit(batch);
    if (!committed.ok()) break;
    for (const store::Write& w : batch) written.push_back(store::Write::Delete(w.kind, w.id));
  }
  if (committed.ok()) committed = store_.Commit(record);
  if (committed.ok()) return committed;
  const StatusCode code = committed.status().code();
  // A resent record (etcd's unknown outcome) finds the first one applied.
  if (code == StatusCode::kConflict)
    if (std::optional<int64_t> ours = StoredBy(store_, record[0].id, submission)) return *ours;
  // Parts that no job names are never read, only kept: they are taken back
  // (best effort) unless the record's commit may have applied (an unknown
  // outcome is Unavailable; a refusal, Conflict or InvalidArgument).
  const bool record_sent = written.size() == parts.size();
  if (!record_sent || code == StatusCode::kConflict || code == StatusCode::kInvalidArgument)
    for (const std::vector<store::Write>& batch : store::SplitBatch(written, limits))
      (void)store_.Commit(batch);
  return committed;
}

Result<Json> JobRegistry::Get(std::string_view id) const {
  Result<Json> job = jobs_.Get(id);
  if (!job.ok()) return job.status();
  Result<std::vector<store::StoredObject>> tasks = ListTaskRecords(store_, id);
  if (!tasks.ok()) return tasks.status();
  std::map<std::string, std::map<std::string, int>> states;
  CountStates(*tasks, &states);
  AddProgress(states[std::string(id)], &*job);
  if (const std::string* submission = SubmissionOf(*job);
      submission != nullptr && job->contains("per_task_commands")) {
    Result<Json> commands = ReadCommands(store_, id, *submission);
    if (!commands.ok()) return commands.status();
    (*job)["commands"] = std::move(*commands);
  }
  return job;
}

Result<Json> JobRegistry::List() const {
  Result<std::vector<store::StoredObject>> objects = store_.List("job");
  if (!objects.ok()) return objects.status();
  Result<std::vector<store::StoredObject>> tasks = ListTaskRecords(store_, "");
  if (!tasks.ok()) return tasks.status();
  std::map<std::string, std::map<std::string, int>> states;
  CountStates(*tasks, &states);
  std::sort(objects->begin(), objects->end(),
            [](const auto& a, const auto& b) { return a.revision < b.revision; });
  Json jobs = Json::array();
  for (const store::StoredObject& o : *objects) {
    Json job = StoredKind::View(o);
    AddProgress(states[o.id], &job);
    jobs.push_back(std::move(job));
  }
  return Json{{"jobs", std::move(jobs)}};
}

Result<Json> JobRegistry::Kill(std::string_view id) {
  Result<store::StoredObject> found = jobs_.Load(id);
  if (!found.ok()) return found.status();
  Json job = Json::parse(found->body);
  job["killed"] = true;
  return jobs_.Replace(*found, job);
}

const char* JobStateOf(const Json& states, int64_t tasks, bool killed) {
  if (killed) return "killed";
  int64_t ended = 0;
  for (const char* state : {"complete", "failed", "rejected", "shutdown"})
    ended += states.value(state, int64_t{0});
  if (ended < tasks) return "active";
  return states.contains("failed") || states.contains("rejected") ? "failed" : "complete";
}

}  // namespace berth::daemon
