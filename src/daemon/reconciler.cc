#include "daemon/reconciler.h"

#include <algorithm>
#include <map>
#include <set>

#include "api/json_fields.h"
#include "api/plan_codec.h"
#include "core/task.h"
#include "daemon/class_registry.h"
#include "fairshare/task_choice.h"
#include "placement/scheduler.h"

namespace berth::daemon {
namespace {

using api::Json;

struct TaskEntry {
  Json json;
  int64_t revision = 0;  // 0: created by this pass
  bool changed = false;
  bool in_plan = true;  // handed to the placement engine
};

bool IsTerminal(const Json& task) {
  Result<TaskState> state = ParseTaskState(task.value("state", "pending"));
  return state.ok() && *state > TaskState::kRunning;
}

// The replica number of "<service>.<n>", or -1.
int64_t ReplicaNumber(const std::string& id) {
  const size_t dot = id.rfind('.');
  if (dot == std::string::npos || dot + 1 == id.size()) return -1;
  int64_t n = 0;
  for (size_t i = dot + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9' || n > 1'000'000'000) return -1;
    n = n * 10 + (id[i] - '0');
  }
  return n;
}

struct Recorded {  // durations recorded for one task name
  int64_t count = 0, total_ms = 0, revision = 0;
  bool changed = false;
};

class Pass {
 public:
  Pass(Timestamp now) : now_(now), now_text_(FormatRfc3339(now)) {}
  Status Load(const store::Store& store);
  void StartAndStop();
  void ScaleDown();
  void Admit(fairshare::Admission& admission);
  Status Place();
  std::vector<store::Write> Writes();
  PassSummary summary;

 private:
  void SetState(TaskEntry& e, const char* state, const std::string& message, bool stop = false) {
    e.json["state"] = state;
    e.json["updated_at"] = now_text_;
    e.json["message"] = message;
    if (stop) e.json["desired_state"] = "shutdown";
    e.changed = true;
  }
  TaskEntry& Entry(const api::PlannedTask& planned);
  void RunJobTask(TaskEntry& e, bool killed, bool node_gone);
  void Start(TaskEntry& e);
  int64_t Finish(TaskEntry& e, const Json& run);
  void Requeue(TaskEntry& e, const std::string& message);
  int64_t Workers() const;
  std::optional<Duration> ExpectedDuration(const std::string& name) const;
  // Whether the engine sees the task: not if its service or node is gone,
  // nor if this pass stopped it.
  static bool Planned(const TaskEntry& e) {
    return e.in_plan && !(e.changed && e.json.value("desired_state", "") == "shutdown");
  }

  Timestamp now_;
  std::string now_text_;
  Json nodes_ = Json::array(), services_ = Json::array();
  std::set<std::string, std::less<>> node_ids_;
  std::map<std::string, Json, std::less<>> service_by_id_;
  std::vector<TaskEntry> tasks_;
  std::map<std::string, size_t, std::less<>> task_index_;
  std::vector<store::StoredObject> jobs_;  // arrival (revision) order
  std::map<std::string, Json, std::less<>> job_by_id_;
  std::map<std::string, Recorded, std::less<>> durations_;
};

Status Pass::Load(const store::Store& store) {
  Result<std::vector<store::StoredObject>> nodes = store.List("node");
  Result<std::vector<store::StoredObject>> services = store.List("service");
  Result<std::vector<store::StoredObject>> tasks = store.List("task");
  for (const Status& s : {nodes.status(), services.status(), tasks.status()})
    if (!s.ok()) return s;
  for (const auto& n : *nodes) {
    nodes_.push_back(Json::parse(n.body));
    node_ids_.insert(n.id);
  }
  for (const auto& s : *services) {
    services_.push_back(Json::parse(s.body));
    service_by_id_[s.id] = services_.back();
  }
  for (const auto& t : *tasks) {
    task_index_[t.id] = tasks_.size();
    tasks_.push_back({Json::parse(t.body), t.revision});
  }
  Result<std::vector<store::StoredObject>> jobs = store.List("job");
  Result<std::vector<store::StoredObject>> durations = store.List("duration");
  if (!jobs.ok()) return jobs.status();
  if (!durations.ok()) return durations.status();
  jobs_ = std::move(*jobs);
  std::sort(jobs_.begin(), jobs_.end(),
            [](const auto& a, const auto& b) { return a.revision < b.revision; });
  for (const auto& j : jobs_) job_by_id_[j.id] = Json::parse(j.body);
  for (const auto& d : *durations) {
    const Json body = Json::parse(d.body);
    durations_[d.id] = {body.value("count", int64_t{0}), body.value("total_ms", int64_t{0}),
                        d.revision};
  }
  return Status::Ok();
}

// The simulated executor, and the tasks whose service or node is gone or
// whose service has moved on to a newer spec version.
void Pass::StartAndStop() {
  for (TaskEntry& e : tasks_) {
    const std::string node = e.json.value("node", "");
    const bool node_gone = !node.empty() && !node_ids_.contains(node);
    if (e.json.contains("job")) {
      const auto job = job_by_id_.find(e.json["job"].get<std::string>());
      RunJobTask(e, job == job_by_id_.end() || job->second.value("killed", false), node_gone);
      continue;
    }
    const std::string service = e.json.value("service", "");
    const auto svc = service_by_id_.find(service);
    const bool service_gone = !service.empty() && svc == service_by_id_.end();
    e.in_plan = !service_gone && !node_gone;
    if (IsTerminal(e.json)) continue;
    if (service_gone) {
      SetState(e, "shutdown", "service '" + service + "' was removed", true);
      ++summary.stopped;
    } else if (node_gone) {
      SetState(e, "orphaned", "node '" + node + "' was removed");
      ++summary.stopped;
    } else if (svc != service_by_id_.end() && e.json.value("spec_version", uint64_t{0}) <
                                                  svc->second["spec_version"].get<uint64_t>()) {
      SetState(e, "shutdown", "replaced by spec version " + svc->second["spec_version"].dump(),
               true);
      ++summary.stopped;
    } else if (e.json.value("state", "") == "assigned") {
      Start(e);
    } else if (e.json.value("state", "") == "running" && svc != service_by_id_.end() &&
               svc->second.contains("run")) {
      Finish(e, svc->second["run"]);
    }
  }
}

void Pass::Start(TaskEntry& e) {
  SetState(e, "running", "started by the simulated executor");
  e.json["started_at"] = now_text_;
  ++summary.started;
}

// Ends a running task once `run`'s duration has passed since it started:
// complete, or failed when `run` says so. Returns the time it ran, or -1
// while it still runs. A failed service task is a failure on its node for
// the placement engine's faulty-node rule (through its state and updated_at).
int64_t Pass::Finish(TaskEntry& e, const Json& run) {
  const Duration ran = now_ - ParseRfc3339(e.json.value("started_at", now_text_)).value();
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(ran).count();
  if (ms < run.value("duration_ms", int64_t{0})) return -1;
  const bool fail = run.value("outcome", "complete") == "fail";
  SetState(e, fail ? "failed" : "complete",
           std::string(fail ? "failed" : "completed") + " after " + std::to_string(ms) +
               " ms (simulated)");
  return ms;
}

// A task of a batch job: stopped when its job is killed, back to waiting
// when its node is gone, and run by the simulated executor: assigned ->
// running -> complete or failed once its duration has passed since it
// started, recording the duration under the task's name.
void Pass::RunJobTask(TaskEntry& e, bool killed, bool node_gone) {
  const std::string state = e.json.value("state", "new");
  e.in_plan = state != "new" && !node_gone;
  if (IsTerminal(e.json)) return;
  if (killed) {
    SetState(e, "shutdown", "job was killed", true);
    e.in_plan = false;
    ++summary.stopped;
  } else if (node_gone) {
    Requeue(e, "node '" + e.json.value("node", "") + "' was removed; waiting again");
  } else if (state == "assigned") {
    Start(e);
  } else if (state == "running") {
    const int64_t ms = Finish(e, e.json["run"]);
    if (ms < 0) return;
    Recorded& recorded = durations_[e.json.value("name", e.json["id"].get<std::string>())];
    ++recorded.count;
    recorded.total_ms += ms;
    recorded.changed = true;
  }
}

void Pass::Requeue(TaskEntry& e, const std::string& message) {
  SetState(e, "new", message);
  e.json.erase("node");
  e.json.erase("admitted_at");
  e.json.erase("assigned_at");
  e.json.erase("started_at");
  e.in_plan = false;
}

// W: every ready, active node offers its "slots" workers (default 1).
int64_t Pass::Workers() const {
  int64_t workers = 0;
  for (const Json& n : nodes_)
    if (n.value("state", "ready") == "ready" && n.value("availability", "active") == "active")
      workers += n.value("slots", int64_t{1});
  return workers;
}

std::optional<Duration> Pass::ExpectedDuration(const std::string& name) const {
  auto it = durations_.find(name);
  if (it == durations_.end() || it->second.count == 0) return std::nullopt;
  return std::chrono::milliseconds(it->second.total_ms / it->second.count);
}

// One fair-share iteration (spec/fairshare.md) over the jobs that are not
// killed: admitted tasks become pending (the placement engine places them),
// tasks stopped by rebalancing go back to waiting. An admitted task counts as
// running from admission on, so a task the engine cannot place yet keeps its
// worker instead of letting admission start more.
void Pass::Admit(fairshare::Admission& admission) {
  std::vector<fairshare::Job> jobs;
  std::vector<std::vector<TaskEntry*>> running, waiting;
  for (const store::StoredObject& stored : jobs_) {
    const Json& job = job_by_id_[stored.id];
    if (job.value("killed", false)) continue;
    fairshare::Job j{stored.id, job.value("requestor", ""), {}, {}};
    std::vector<TaskEntry*> r, w;
    for (int64_t i = 1; i <= job.value("tasks", int64_t{0}); ++i) {
      auto it = task_index_.find(stored.id + "." + std::to_string(i));
      if (it == task_index_.end()) continue;
      TaskEntry& e = tasks_[it->second];
      const std::string state = e.json.value("state", "new");
      if (state == "new") {
        w.push_back(&e);
      } else if (!IsTerminal(e.json)) {
        r.push_back(&e);
        j.running.push_back(
            {e.json["id"], ParseRfc3339(e.json.value("admitted_at", now_text_)).value()});
      }
    }
    // Waiting tasks in choice order: longest expected duration first.
    std::stable_sort(w.begin(), w.end(), [&](const TaskEntry* a, const TaskEntry* b) {
      const auto da = ExpectedDuration(a->json.value("name", "")),
                 db = ExpectedDuration(b->json.value("name", ""));
      return da.has_value() && (!db.has_value() || *da > *db);
    });
    for (TaskEntry* e : w)
      j.waiting.push_back({e->json["id"], ExpectedDuration(e->json.value("name", ""))});
    jobs.push_back(std::move(j));
    running.push_back(std::move(r));
    waiting.push_back(std::move(w));
  }
  const fairshare::IterationResult result = admission.Iterate(Workers(), jobs, now_);
  for (const fairshare::TaskRef& ref : result.start_tasks) {
    TaskEntry& e = *waiting[ref.job][ref.task];
    SetState(e, "pending", "admitted for requestor '" + jobs[ref.job].requestor + "'");
    e.json["admitted_at"] = now_text_;
    e.in_plan = true;
    ++summary.admitted;
  }
  for (const fairshare::TaskRef& ref : result.stop_tasks) {
    Requeue(*running[ref.job][ref.task], "stopped by rebalancing; waiting again");
    ++summary.stopped;
  }
}

// Replicated services with more active tasks than replicas stop the extra
// ones: pending tasks first, then the highest replica numbers.
void Pass::ScaleDown() {
  std::map<std::string, std::vector<TaskEntry*>, std::less<>> active;
  for (TaskEntry& e : tasks_)
    if (e.in_plan && !IsTerminal(e.json) && e.json.value("desired_state", "running") == "running" &&
        e.json.contains("service"))
      active[e.json["service"].get<std::string>()].push_back(&e);
  for (auto& [service, entries] : active) {
    const Json& svc = service_by_id_[service];
    if (svc.value("mode", "replicated") != "replicated" || !svc.contains("replicas")) continue;
    const size_t replicas = svc["replicas"].get<size_t>();
    if (entries.size() <= replicas) continue;
    std::sort(entries.begin(), entries.end(), [](const TaskEntry* a, const TaskEntry* b) {
      const bool a_pending = a->json.value("state", "") == "pending";
      const bool b_pending = b->json.value("state", "") == "pending";
      if (a_pending != b_pending) return a_pending;
      return ReplicaNumber(a->json["id"]) > ReplicaNumber(b->json["id"]);
    });
    for (size_t i = 0; i < entries.size() - replicas; ++i) {
      SetState(*entries[i], "shutdown", "scaled down to " + std::to_string(replicas) + " replicas",
               true);
      ++summary.stopped;
    }
  }
}

// The entry of a task the engine decided on. An id the engine generated may
// belong to a stored task it was not shown (stopped in this pass, or on a
// removed node); that record is reused for the new task.
TaskEntry& Pass::Entry(const api::PlannedTask& planned) {
  auto it = task_index_.find(planned.task.id);
  if (it != task_index_.end() && Planned(tasks_[it->second])) return tasks_[it->second];
  Json task = {{"id", planned.task.id}, {"state", "pending"}, {"desired_state", "running"}};
  if (!planned.task.service_id.empty()) task["service"] = planned.task.service_id;
  if (planned.task.spec_version) task["spec_version"] = *planned.task.spec_version;
  if (!planned.task.node_id.empty()) task["node"] = planned.task.node_id;
  ++summary.created;
  if (it != task_index_.end()) {
    TaskEntry& reused = tasks_[it->second];
    reused.json = std::move(task);
    reused.changed = reused.in_plan = true;
    return reused;
  }
  task_index_[planned.task.id] = tasks_.size();
  tasks_.push_back({std::move(task), 0, true, true});
  return tasks_.back();
}

// The placement engine, on exactly what `berth plan` would read.
Status Pass::Place() {
  Json doc = {
      {"now", now_text_}, {"nodes", nodes_}, {"services", services_}, {"tasks", Json::array()}};
  for (Json& node : doc["nodes"]) node.erase("slots");
  for (Json& service : doc["services"]) service.erase("run");
  for (const TaskEntry& e : tasks_) {
    if (!Planned(e)) continue;
    Json task = e.json;
    for (const char* berthd_only :
         {"message", "job", "name", "run", "admitted_at", "started_at", "assigned_at"})
      task.erase(berthd_only);
    doc["tasks"].push_back(std::move(task));
  }
  Result<api::PlacementPlan> plan = api::PlanPlacement(doc, now_);
  if (!plan.ok())
    return Status::Internal("the stored state is not a valid placement document: " +
                            plan.status().message());
  std::map<std::string, const api::PlannedTask*, std::less<>> planned;
  for (const api::PlannedTask& p : plan->input.tasks) planned[p.task.id] = &p;
  for (const auto& a : plan->output["assignments"]) {
    const api::PlannedTask& p = *planned.at(a["task"].get<std::string>());
    TaskEntry& e = Entry(p);
    e.json["node"] = a["node"];
    SetState(e, "assigned",
             p.preassigned ? placement::kConfirmedMessage : placement::kAssignedMessage);
    e.json["assigned_at"] = now_text_;
    ++summary.assigned;
  }
  for (const auto& pending : plan->output["pending"]) {
    TaskEntry& e = Entry(*planned.at(pending["task"].get<std::string>()));
    ++summary.pending;
    if (e.json.value("message", "") == pending["reason"]) continue;
    e.json["message"] = pending["reason"];
    if (!e.json.contains("updated_at")) e.json["updated_at"] = now_text_;
    e.changed = true;
  }
  return Status::Ok();
}

std::vector<store::Write> Pass::Writes() {
  std::vector<store::Write> writes;
  for (const TaskEntry& e : tasks_) {
    if (!e.changed) continue;
    store::Write w = store::Write::Put("task", e.json["id"].get<std::string>(), e.json.dump());
    w.IfRevision(e.revision);
    writes.push_back(std::move(w));
  }
  for (const auto& [name, recorded] : durations_) {
    if (!recorded.changed) continue;
    store::Write w = store::Write::Put(
        "duration", name, Json{{"count", recorded.count}, {"total_ms", recorded.total_ms}}.dump());
    w.IfRevision(recorded.revision);
    writes.push_back(std::move(w));
  }
  return writes;
}

}  // namespace

// The class configuration changes rarely; the Admission (and its rebalance
// timer) lives across passes and takes a new configuration when the stored
// one changes.
Status Reconciler::LoadClasses() {
  Result<std::optional<store::StoredObject>> stored = ClassRegistry::Stored(store_);
  if (!stored.ok()) return stored.status();
  const int64_t revision = stored->has_value() ? (*stored)->revision : 0;
  if (revision == classes_revision_) return Status::Ok();
  fairshare::Config config;
  if (stored->has_value()) {
    Result<fairshare::Config> decoded = ClassRegistry::ToConfig(Json::parse((*stored)->body));
    if (!decoded.ok()) return decoded.status();
    config = std::move(*decoded);
  }
  admission_.mutable_config() = std::move(config);
  classes_revision_ = revision;
  return Status::Ok();
}

Result<PassSummary> Reconciler::RunPass(Timestamp now) {
  BERTH_RETURN_IF_ERROR(LoadClasses());
  Pass pass(now);
  BERTH_RETURN_IF_ERROR(pass.Load(store_));
  pass.StartAndStop();
  pass.ScaleDown();
  pass.Admit(admission_);
  BERTH_RETURN_IF_ERROR(pass.Place());
  std::vector<store::Write> writes = pass.Writes();
  if (!writes.empty()) {
    Result<int64_t> committed = store_.Commit(writes);
    if (!committed.ok()) return committed.status();
    pass.summary.wrote = true;
  }
  return pass.summary;
}

}  // namespace berth::daemon
