#include "daemon/reconciler.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "api/cluster_codec.h"
#include "api/json_fields.h"
#include "api/plan_codec.h"
#include "core/task.h"
#include "daemon/class_registry.h"
#include "fairshare/task_choice.h"
#include "placement/scheduler.h"

namespace berth::daemon {
namespace {

using api::Json;

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

class Pass {
 public:
  // `agents`: place through them (the three-phase path); null: the full-view
  // engine.
  Pass(Timestamp now, StoredState& state, AgentPlacement* agents)
      : now_(now),
        now_text_(FormatRfc3339(now)),
        nodes_(state.nodes),
        service_by_id_(state.services),
        tasks_(state.tasks),
        task_index_(state.task_index),
        job_by_id_(state.jobs),
        durations_(state.durations),
        agents_(agents) {}
  void StartAndStop();
  void ScaleDown();
  void Admit(fairshare::Admission& admission);
  Status Place();
  void PlaceThroughAgents();
  // Tasks placed by this pass record `at` as assigned_at: just before the
  // commit that stores them, so it marks when the placement is kept.
  void StampAssigned(Timestamp at);
  std::vector<store::Write> Writes();
  // After the pass's writes are stored: outcomes it applied, bindings it let go.
  void Committed();
  PassSummary summary;

 private:
  void SetState(TaskEntry& e, const char* state, const std::string& message, bool stop = false) {
    const bool was_bound = e.bound_on_agent();
    e.json["state"] = state;
    e.json["updated_at"] = now_text_;
    e.json["message"] = message;
    if (stop) e.json["desired_state"] = "shutdown";
    e.changed = true;
    e.Sync();
    // A task that left its node gives the agent's binding back.
    if (e.facts.has_agent && (e.terminal() || e.facts.state == TaskState::kNew)) {
      if (was_bound) releases_[e.json["agent"].get<std::string>()].push_back(e.facts.id);
      e.json.erase("agent");
      e.facts.has_agent = false;
    }
  }
  TaskEntry& Entry(const api::PlannedTask& planned);
  void ApplyOutcomes();
  void GenerateReplicas();
  void GenerateGlobalTasks();
  void CountRunnable();
  std::shared_ptr<const TaskSpec> SpecOf(const TaskEntry& e);
  std::shared_ptr<const TaskSpec> SpecOf(const std::string& service);
  void RunJobTask(TaskEntry& e, bool killed, bool node_gone);
  void Start(TaskEntry& e);
  int64_t Finish(TaskEntry& e, const Json& run);
  void Requeue(TaskEntry& e, const std::string& message);
  int64_t Workers() const;
  std::optional<Duration> ExpectedDuration(const std::string& name) const;
  // Whether the engine sees the task: not if its service or node is gone,
  // nor if this pass stopped it.
  static bool Planned(const TaskEntry& e) {
    return e.in_plan && !(e.changed && e.facts.desired == TaskState::kShutdown);
  }

  Timestamp now_;
  std::string now_text_;
  // The StoredState's objects, by id; tasks and durations are edited in place.
  const std::map<std::string, Json, std::less<>>& nodes_;
  std::unordered_map<std::string, StoredService>& service_by_id_;  // counts runnable
  std::vector<TaskEntry>& tasks_;
  std::map<std::string, size_t, std::less<>>& task_index_;
  const std::map<std::string, StoredJob, std::less<>>& job_by_id_;
  std::map<std::string, Recorded, std::less<>>& durations_;
  AgentPlacement* agents_;
  std::map<std::string, std::vector<std::string>> releases_;  // task ids by agent id
  std::set<std::string, std::less<>> delivered_;              // outcomes applied
  std::vector<size_t> assigned_;                              // tasks_ placed by this pass
  std::map<std::string, std::shared_ptr<const TaskSpec>, std::less<>> service_specs_;
};

// The simulated executor, and the tasks whose service or node is gone or
// whose service has moved on to a newer spec version.
void Pass::StartAndStop() {
  for (TaskEntry& e : tasks_) {
    // A node an agent bound the task to is the agent's, not berthd's.
    const std::string& node = e.facts.node;
    const bool node_gone =
        !node.empty() && !(agents_ != nullptr && e.facts.has_agent) && !nodes_.contains(node);
    if (!e.facts.job.empty()) {
      const auto job = job_by_id_.find(e.facts.job);
      RunJobTask(e, job == job_by_id_.end() || job->second.json.value("killed", false), node_gone);
      continue;
    }
    const std::string& service = e.facts.service;
    const auto svc = service.empty() ? service_by_id_.end() : service_by_id_.find(service);
    const bool service_gone = !service.empty() && svc == service_by_id_.end();
    e.in_plan = !service_gone && !node_gone;
    if (e.terminal()) continue;
    if (service_gone) {
      SetState(e, "shutdown", "service '" + service + "' was removed", true);
      ++summary.stopped;
    } else if (node_gone) {
      SetState(e, "orphaned", "node '" + node + "' was removed");
      ++summary.stopped;
    } else if (svc != service_by_id_.end() && e.facts.spec_version < svc->second.spec_version) {
      SetState(e, "shutdown",
               "replaced by spec version " + std::to_string(svc->second.spec_version), true);
      ++summary.stopped;
    } else if (e.facts.state == TaskState::kAssigned) {
      Start(e);
    } else if (e.facts.state == TaskState::kRunning && svc != service_by_id_.end() &&
               svc->second.has_run) {
      Finish(e, svc->second.json["run"]);
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
  const TaskState state = e.facts.state;
  e.in_plan = state != TaskState::kNew && !node_gone;
  if (e.terminal()) return;
  if (killed) {
    SetState(e, "shutdown", "job was killed", true);
    e.in_plan = false;
    ++summary.stopped;
  } else if (node_gone) {
    Requeue(e, "node '" + e.facts.node + "' was removed; waiting again");
  } else if (state == TaskState::kAssigned) {
    Start(e);
  } else if (state == TaskState::kRunning) {
    const int64_t ms = Finish(e, e.json["run"]);
    if (ms < 0) return;
    Recorded& recorded = durations_[e.json.value("name", e.facts.id)];
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
  e.Sync();
  e.in_plan = false;
}

// W: every ready, active node offers its "slots" workers (default 1); with
// agents, every node of every agent offers one.
int64_t Pass::Workers() const {
  if (agents_ != nullptr) return agents_->Workers();
  int64_t workers = 0;
  for (const auto& [id, n] : nodes_)
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
  // Jobs in arrival order: by the revision of their last write (a killed
  // job moves, but it is skipped).
  std::vector<std::pair<int64_t, const std::string*>> arrival;
  for (const auto& [id, stored] : job_by_id_)
    if (!stored.json.value("killed", false)) arrival.emplace_back(stored.revision, &id);
  std::sort(arrival.begin(), arrival.end());
  std::vector<fairshare::Job> jobs;
  std::vector<std::vector<TaskEntry*>> running, waiting;
  for (const auto& [revision, id] : arrival) {
    const Json& job = job_by_id_.at(*id).json;
    fairshare::Job j{*id, job.value("requestor", ""), {}, {}};
    std::vector<TaskEntry*> r, w;
    for (int64_t i = 1; i <= job.value("tasks", int64_t{0}); ++i) {
      auto it = task_index_.find(*id + "." + std::to_string(i));
      if (it == task_index_.end()) continue;
      TaskEntry& e = tasks_[it->second];
      if (e.facts.state == TaskState::kNew) {
        w.push_back(&e);
      } else if (!e.terminal()) {
        r.push_back(&e);
        j.running.push_back(
            {e.facts.id, ParseRfc3339(e.json.value("admitted_at", now_text_)).value()});
      }
    }
    // Waiting tasks in choice order: longest expected duration first.
    std::stable_sort(w.begin(), w.end(), [&](const TaskEntry* a, const TaskEntry* b) {
      const auto da = ExpectedDuration(a->json.value("name", "")),
                 db = ExpectedDuration(b->json.value("name", ""));
      return da.has_value() && (!db.has_value() || *da > *db);
    });
    for (TaskEntry* e : w)
      j.waiting.push_back({e->facts.id, ExpectedDuration(e->json.value("name", ""))});
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

// Counts each service's tasks that the engine sees and that fill one of its
// slots (StoredService::runnable).
void Pass::CountRunnable() {
  for (auto& [id, service] : service_by_id_) service.runnable = 0;
  for (const TaskEntry& e : tasks_) {
    if (e.facts.service.empty() || !Planned(e) || !e.runnable()) continue;
    if (auto it = service_by_id_.find(e.facts.service); it != service_by_id_.end())
      ++it->second.runnable;
  }
}

// Replicated services with more active tasks than replicas stop the extra
// ones: pending tasks first, then the highest replica numbers. Leaves
// every service's count of runnable tasks up to date.
void Pass::ScaleDown() {
  // Services over their count, and their runnable tasks.
  CountRunnable();
  std::map<std::string_view, std::pair<uint64_t, std::vector<TaskEntry*>>> over;
  for (auto& [id, service] : service_by_id_) {
    if (service.runnable <= service.replicas.value_or(service.runnable)) continue;
    over[id].first = service.runnable = *service.replicas;  // after stopping the rest
  }
  if (over.empty()) return;
  for (TaskEntry& e : tasks_)
    if (auto it = over.find(e.facts.service); it != over.end() && Planned(e) && e.runnable())
      it->second.second.push_back(&e);
  for (auto& [service, counted] : over) {
    auto& [replicas, entries] = counted;
    std::sort(entries.begin(), entries.end(), [](const TaskEntry* a, const TaskEntry* b) {
      const bool a_pending = a->facts.state == TaskState::kPending;
      const bool b_pending = b->facts.state == TaskState::kPending;
      if (a_pending != b_pending) return a_pending;
      return ReplicaNumber(a->facts.id) > ReplicaNumber(b->facts.id);
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
  if (it == task_index_.end()) {
    it = task_index_.emplace(planned.task.id, tasks_.size()).first;
    tasks_.emplace_back();
  }
  TaskEntry& e = tasks_[it->second];  // keeps a reused record's revision
  e.json = std::move(task);
  e.changed = e.in_plan = true;
  e.Sync();
  return e;
}

// The placement engine, on exactly what `berth plan` would read.
Status Pass::Place() {
  Json doc = {{"now", now_text_},
              {"nodes", Json::array()},
              {"services", Json::array()},
              {"tasks", Json::array()}};
  for (const auto& [id, node] : nodes_) {
    doc["nodes"].push_back(node);
    doc["nodes"].back().erase("slots");
  }
  std::vector<const std::pair<const std::string, StoredService>*> services;
  for (const auto& entry : service_by_id_) services.push_back(&entry);
  std::sort(services.begin(), services.end(), [](auto* a, auto* b) { return a->first < b->first; });
  for (const auto* entry : services) {  // by id, as `berth plan` reads them
    doc["services"].push_back(entry->second.json);
    doc["services"].back().erase("run");
  }
  for (const TaskEntry& e : tasks_) {
    if (!Planned(e)) continue;
    Json task = e.json;
    for (const char* berthd_only :
         {"message", "job", "name", "run", "admitted_at", "started_at", "assigned_at", "agent"})
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
    assigned_.push_back(static_cast<size_t>(&e - tasks_.data()));
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

// The three-phase path: outcomes that arrived since the last pass are
// applied, missing replicas are created, and every pending task is handed to
// the agents' scheduler (which ignores those it already has); the decisions
// that come within `decide_within` are applied before the commit.
void Pass::PlaceThroughAgents() {
  ApplyOutcomes();
  GenerateReplicas();
  GenerateGlobalTasks();
  const size_t assigned_before = assigned_.size();
  bool submitted = false;
  for (TaskEntry& e : tasks_) {
    if (!Planned(e) || e.facts.state != TaskState::kPending || !e.runnable()) continue;
    ++summary.pending;
    std::shared_ptr<const TaskSpec> spec = SpecOf(e);
    // A pending task with an agent is a global service's, pinned to its node.
    agent::PlacementTask task{e.facts.id, 0, std::move(spec), {}, {}, {}};
    if (e.facts.has_agent) {
      task.pinned_agent = e.json["agent"].get<std::string>();
      task.pinned_node = e.facts.node;
    }
    if (task.spec == nullptr || !agents_->Submit(std::move(task))) continue;
    submitted = true;
    static const std::string kWaiting = "waiting for a node from the cluster agents";
    if (e.json.value("message", "") == kWaiting) continue;
    e.json["message"] = kWaiting;
    e.changed = true;
  }
  if (!submitted) return;
  agents_->WaitIdle(agents_->options().decide_within);
  ApplyOutcomes();
  summary.pending -= static_cast<int>(assigned_.size() - assigned_before);
}

// A bound task becomes assigned to the agent's node, unless it stopped
// meanwhile (then the binding is given back); a failed one keeps pending with
// the last attempt's reason.
void Pass::ApplyOutcomes() {
  for (auto& [id, outcome] : agents_->Outcomes()) {
    if (!delivered_.insert(id).second) continue;  // applied earlier in this pass
    auto it = task_index_.find(id);
    TaskEntry* e = it == task_index_.end() ? nullptr : &tasks_[it->second];
    if (e == nullptr || !Planned(*e) || e->facts.state != TaskState::kPending) {
      if (outcome.bound) releases_[outcome.agent_id].push_back(id);
      continue;
    }
    if (outcome.bound) {
      e->json["node"] = outcome.node_id;
      SetState(*e, "assigned", placement::kAssignedMessage);
      e->json["agent"] = outcome.agent_id;
      e->Sync();
      assigned_.push_back(it->second);
      continue;
    }
    const std::string message = "no cluster agent could place the task: " + outcome.reason;
    if (e->json.value("message", "") == message) continue;
    e->json["message"] = message;
    e->changed = true;
  }
}

// Missing replicas of replicated services become pending tasks
// "<service>.<n>", lowest free n first, as the placement document's decoder
// does for the full-view engine (docs/plan.md), counting from ScaleDown's
// counts.
void Pass::GenerateReplicas() {
  // By id, so tasks are made in a fixed order.
  std::map<std::string_view, StoredService*> short_of;
  for (auto& [id, service] : service_by_id_)
    if (service.runnable < service.replicas.value_or(0)) short_of.emplace(id, &service);
  for (auto& [id, service] : short_of) {
    for (uint64_t n = 1; service->runnable < *service->replicas; ++n) {
      api::PlannedTask planned;
      planned.task.id = std::string(id) + "." + std::to_string(n);
      if (auto it = task_index_.find(planned.task.id);
          it != task_index_.end() && Planned(tasks_[it->second]))
        continue;
      planned.task.service_id = id;
      planned.task.spec_version = service->spec_version;
      Entry(planned);
      ++service->runnable;
    }
  }
}

// A global service gets a pending task "<service>.<node>" pinned to each
// node of the agents where it may run (AgentPlacement::EligibleNodes) and
// that has no runnable task of the service, as the full-view path does for
// berthd's own nodes; an id already in use is skipped, as there.
void Pass::GenerateGlobalTasks() {
  std::set<std::string, std::less<>> global;
  for (const auto& [id, service] : service_by_id_)
    if (!service.replicas.has_value()) global.insert(id);
  agents_->KeepEligible(global);
  std::map<std::string_view, std::set<std::string_view>> covered;  // nodes, by service
  for (const TaskEntry& e : tasks_)
    if (global.contains(e.facts.service) && Planned(e) && e.runnable() && !e.facts.node.empty())
      covered[e.facts.service].insert(e.facts.node);
  for (const std::string& id : global) {
    const StoredService& service = service_by_id_.at(id);
    std::shared_ptr<const TaskSpec> spec = SpecOf(id);
    if (spec == nullptr) continue;
    const auto& eligible = agents_->EligibleNodes(id, service.spec_version, *spec);
    for (size_t slot = 0; slot < eligible.size(); ++slot) {
      for (const std::string& node : eligible[slot]) {
        if (covered[id].contains(node)) continue;
        api::PlannedTask planned;
        planned.task.id = id + "." + node;
        if (auto it = task_index_.find(planned.task.id);
            it != task_index_.end() && Planned(tasks_[it->second]))
          continue;
        planned.task.service_id = id;
        planned.task.spec_version = service.spec_version;
        planned.task.node_id = node;
        TaskEntry& e = Entry(planned);
        e.json["agent"] = agents_->agent_id(slot);
        e.Sync();
      }
    }
  }
}

// A service task runs its service's template, a job's task its own copy.
std::shared_ptr<const TaskSpec> Pass::SpecOf(const TaskEntry& e) {
  if (!e.facts.service.empty()) return SpecOf(e.facts.service);
  auto spec = std::make_shared<TaskSpec>();
  if (!api::DecodeTaskSpec(e.json.value("task", Json::object()), "task", spec.get()).ok())
    return nullptr;
  return spec;
}

std::shared_ptr<const TaskSpec> Pass::SpecOf(const std::string& service) {
  if (auto cached = service_specs_.find(service); cached != service_specs_.end())
    return cached->second;
  auto spec = std::make_shared<TaskSpec>();
  if (!api::DecodeTaskSpec(service_by_id_.at(service).json["task"], "task", spec.get()).ok())
    spec = nullptr;
  service_specs_[service] = spec;
  return spec;
}

void Pass::StampAssigned(Timestamp at) {
  const std::string text = FormatRfc3339(at);
  for (size_t i : assigned_) tasks_[i].json["assigned_at"] = text;
  summary.assigned = static_cast<int>(assigned_.size());
}

void Pass::Committed() {
  if (agents_ == nullptr) return;
  agents_->Delivered({delivered_.begin(), delivered_.end()});
  agents_->Release(releases_);
}

std::vector<store::Write> Pass::Writes() {
  std::vector<store::Write> writes;
  for (const TaskEntry& e : tasks_) {
    if (!e.changed) continue;
    store::Write w = store::Write::Put("task", e.facts.id, e.json.dump());
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

// The state was just read from the store, which no one else writes tasks to.
void Reconciler::CheckAgentBindings() {
  agents_->CheckBindings([this](const std::string& agent_id, const std::string& task_id) {
    auto it = state_.task_index.find(task_id);
    if (it == state_.task_index.end()) return false;
    const TaskEntry& e = state_.tasks[it->second];
    return e.bound_on_agent() && e.json["agent"] == agent_id;
  });
}

// A pass edits the StoredState as it goes; if it fails, the store does not
// have its edits, so the state is read again.
Result<PassSummary> Reconciler::RunPass(Timestamp now) {
  BERTH_RETURN_IF_ERROR(LoadClasses());
  BERTH_RETURN_IF_ERROR(state_.Refresh(store_));
  if (agents_ != nullptr && agents_->BindingsUnchecked()) CheckAgentBindings();
  Pass pass(now, state_, agents_);
  pass.StartAndStop();
  pass.ScaleDown();
  pass.Admit(admission_);
  if (agents_ != nullptr) {
    pass.PlaceThroughAgents();
  } else if (Status placed = pass.Place(); !placed.ok()) {
    state_.Invalidate();
    return placed;
  }
  pass.StampAssigned(clock_ != nullptr ? clock_->Now() : now);
  std::vector<store::Write> writes = pass.Writes();
  if (!writes.empty()) {
    Result<int64_t> committed = store_.Commit(writes);
    if (!committed.ok()) {
      state_.Invalidate();
      return committed.status();
    }
    state_.Committed(*committed);
    pass.summary.wrote = true;
  }
  pass.Committed();
  pass.summary.waiting = agents_ != nullptr && agents_->Busy();
  return pass.summary;
}

}  // namespace berth::daemon
