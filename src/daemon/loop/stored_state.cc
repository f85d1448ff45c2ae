#include "daemon/loop/stored_state.h"

#include <algorithm>
#include <bit>
#include <tuple>

#include "api/cluster_codec.h"
#include "api/lifecycle_codec.h"
#include "api/process_codec.h"
#include "daemon/registry/class_registry.h"
#include "daemon/registry/job_parts.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/node_registry.h"

namespace berth::daemon {
namespace {

using api::Json;

// A job's parts before the job (its record names them: job_parts.h).
constexpr const char* kKinds[] = {"node", "service",  "task",   kJobTasksKind,
                                  "job",  "duration", "update", ClassRegistry::kKind};

Result<Json> Parse(const std::string& kind, const std::string& id, const std::string& body) {
  Json json = Json::parse(body, nullptr, false);
  if (json.is_discarded())
    return Status::Internal("the stored " + kind + " '" + id + "' is not JSON");
  return json;
}

// A task template ("task" of a service or job; absent: the defaults), or
// null when it does not decode.
std::shared_ptr<const TaskSpec> TemplateOf(const Json& json) {
  auto spec = std::make_shared<TaskSpec>();
  if (auto it = json.find("task");
      it != json.end() && !api::DecodeTaskSpec(*it, "task", spec.get()).ok())
    return nullptr;
  return spec;
}

// A template's process (api/process_codec.h), or null.
std::shared_ptr<const executor::ProcessSpec> ProcessOf(const Json& task) {
  std::optional<executor::ProcessSpec> process;
  if (!task.is_object() || !api::DecodeProcessSpec(task, "task", &process).ok() || !process)
    return nullptr;
  return std::make_shared<const executor::ProcessSpec>(std::move(*process));
}

StoredService ToService(const Json& json) {
  StoredService s;
  if (json.value("mode", "replicated") == "replicated" && json.contains("replicas"))
    s.replicas = json["replicas"].get<uint64_t>();
  s.spec_version = json.value("spec_version", uint64_t{0});
  for (auto [key, out] : {std::pair{"run", &s.run}, {"previous_run", &s.previous_run}})
    if (auto run = json.find(key); run != json.end() && run->is_object())
      *out = SimulatedRun{run->value("duration_ms", int64_t{0}),
                          run->value("outcome", "complete") == "fail"};
  s.incarnation = json.value("incarnation", int64_t{0});
  s.rolling_back = json.value("update_kind", "") == "rollback";
  s.rebalancing = json.value("update_kind", "") == "rebalance";
  s.templates = api::TemplateVersionsOf(json);
  s.rebalance_on_join = json.value("rebalance", "manual") == "on-join";
  if (auto it = json.find("update_config"); it != json.end())
    (void)api::DecodeUpdateConfig(*it, "", &s.update);
  if (auto it = json.find("rollback_config"); it != json.end())
    (void)api::DecodeUpdateConfig(*it, "", &s.rollback);
  if (auto it = json.find("restart_policy"); it != json.end())
    (void)api::DecodeRestartPolicy(*it, "restart_policy", &s.restart);  // the API checked it
  s.spec = TemplateOf(json);
  s.process = ProcessOf(json.value("task", Json::object()));
  if (auto previous = json.find("previous_task"); previous != json.end()) {
    s.previous_spec = TemplateOf(Json{{"task", *previous}});
    s.previous_process = ProcessOf(*previous);
  }
  if (s.spec) {
    Result<std::vector<constraint::Constraint>> parsed = constraint::ParseAll(s.spec->constraints);
    if (parsed.ok()) s.constraints = std::move(*parsed);
  }
  return s;
}

// Whether an update of a node may concern the tasks on it: what the pass
// enforces (availability, state, what constraints read), not its resources.
bool ConcernsTasks(const Node& was, const Node& now) {
  return was.availability != now.availability || was.state != now.state ||
         was.labels != now.labels || was.engine_labels != now.engine_labels ||
         was.hostname != now.hostname || was.role != now.role || was.platform != now.platform ||
         was.address != now.address;
}

// A job with per-task "commands": its template's placement part, and the
// process fields its tasks share (the registry checked both; should they
// not decode, the job has no process and its tasks are simulated). The
// lines themselves are in the job's parts (AddUnrecordedTasks), or in the
// record of a job stored before there were parts.
void ReadPerTaskCommands(const Json& json, StoredJob* j) {
  const Json task = json.value("task", Json::object());
  auto commands = std::make_shared<std::vector<std::vector<std::string>>>();
  executor::ProcessSpec shared;
  if ((json.contains("commands") &&
       !api::DecodeCommands(json["commands"], "commands", commands.get()).ok()) ||
      !api::DecodeSharedProcess(task, "task", &shared).ok())
    return;
  if (std::shared_ptr<const TaskSpec> placement =
          TemplateOf(Json{{"task", api::WithoutProcessFields(task)}})) {
    auto spec = std::make_shared<TaskSpec>(*placement);
    // The limits filter's input, which the placement part alone lacks.
    spec->has_limits = shared.limit_cpu || shared.limit_memory;
    j->spec = std::move(spec);
  }
  j->process = std::make_shared<const executor::ProcessSpec>(std::move(shared));
  j->commands = std::move(commands);
}

StoredJob ToJob(const Json& json, int64_t revision) {
  StoredJob j;
  j.requestor = json.value("requestor", "");
  j.tasks = json.value("tasks", int64_t{0});
  j.killed = json.value("killed", false);
  if (const auto it = json.find("submission"); it != json.end() && it->is_string())
    j.submission = *it;
  const auto per_task = json.find("per_task_commands");
  if (json.contains("commands") ||
      (per_task != json.end() && per_task->is_boolean() && *per_task)) {
    ReadPerTaskCommands(json, &j);
  } else {
    j.spec = TemplateOf(json);
    j.process = ProcessOf(json.value("task", Json::object()));
  }
  j.indexed = j.process && api::HasIndexTemplate(*j.process);
  j.max_retries = json.value("max_retries", int64_t{0});  // the registry stores the default
  j.revision = revision;
  return j;
}

// A stored node's body (api.md's node, and berthd's "slots"), decoded.
StoredNode ToNode(Json json, const std::string& id) {
  StoredNode n;
  n.slots = json.value("slots", int64_t{1});
  if (Status decoded = DecodeStoredNode(std::move(json), id, &n.node); !decoded.ok())
    n.error = decoded.message();
  return n;
}

// A commit's job parts before its job, which names them: etcd hands out a
// transaction's writes in key order, where "job" comes before "job_tasks".
std::vector<store::Change> PartsFirst(std::vector<store::Change> changes) {
  for (auto from = changes.begin(); from != changes.end();) {
    const auto to = std::find_if(
        from, changes.end(), [&](const store::Change& c) { return c.revision != from->revision; });
    std::stable_partition(from, to, [](const store::Change& c) { return c.kind == kJobTasksKind; });
    from = to;
  }
  return changes;
}

Recorded ToRecorded(const Json& body, int64_t revision) {
  return {body.value("count", int64_t{0}), body.value("total_ms", int64_t{0}), revision, false};
}

}  // namespace

Status StoredState::Refresh(store::WatchedStore& store) {
  Status status = Status::Ok();
  if (loaded_ && store.lost()) loaded_ = false;  // a shared store's feed broke: list again
  if (loaded_) {
    for (const store::Change& change : PartsFirst(store.TakeChanges()))
      if (!Apply(change).ok()) {
        loaded_ = false;
        break;
      }
  }
  if (!loaded_) status = Load(store);
  // Read after the changes: a pass that sees a service starts from a
  // revision above the one that created it.
  revision_ = store.revision();
  return status;
}

Status StoredState::Load(store::WatchedStore& store) {
  const uint64_t layout = layout_generation_;
  const bool track = track_pending_;
  // What a pass still has to do about nodes that joined outlives a reload.
  std::set<std::string> due = std::move(rollouts_.rebalance_due());
  const bool joined = nodes_joined_;
  *this = StoredState();
  track_pending_ = track;
  layout_generation_ = layout + 1;
  rollouts_.rebalance_due() = std::move(due);
  nodes_joined_ = joined;
  Result<std::vector<std::vector<store::StoredObject>>> all =
      store.Watch({std::begin(kKinds), std::end(kKinds)});
  if (!all.ok()) return all.status();
  for (const std::vector<store::StoredObject>& kind : *all)
    for (const store::StoredObject& object : kind)
      BERTH_RETURN_IF_ERROR(
          Apply({store::Write::Op::kPut, object.kind, object.id, object.body, object.revision}));
  loaded_ = true;
  visit_all_ = true;
  return Status::Ok();
}

Status StoredState::Apply(const store::Change& change) {
  const bool put = change.op == store::Write::Op::kPut;
  std::optional<Json> json;
  if (put) {
    Result<Json> parsed = Parse(change.kind, change.id, change.body);
    if (!parsed.ok()) return parsed.status();
    json = std::move(*parsed);
  }
  if (change.kind == "node") {
    const auto old = nodes_.find(change.id);
    const int64_t old_workers = old != nodes_.end() ? WorkersOf(old->second) : 0;
    workers_ -= old_workers;
    if (put) {
      StoredNode updated = ToNode(std::move(*json), change.id);
      if (old != nodes_.end() && ConcernsTasks(old->second.node, updated.node))
        check_nodes_.insert(change.id);
      // A node joins when it starts to take tasks (WorkersOf: ready, active).
      if (loaded_ && old_workers == 0 && WorkersOf(updated) > 0) nodes_joined_ = true;
      if (updated.node.state == NodeState::kReady) not_ready_.Forget(change.id);
      StoredNode& node = nodes_[change.id] = std::move(updated);
      counts_.PutNode(change.id, std::make_shared<const Node>(node.node), node.error);
      workers_ += WorkersOf(node);
      node_ids_.insert(change.id);
      changed_nodes_.push_back(change.id);  // a new one may take a global service's task
    } else {
      ++layout_generation_;
      visit_all_ = true;  // the tasks on it leave the engine's view
      nodes_.erase(change.id);
      counts_.RemoveNode(change.id);
      node_ids_.erase(change.id);
      not_ready_.Forget(change.id);
    }
  } else if (change.kind == "service") {
    ApplyService(change.id, std::move(json));
    if (auto it = services_.find(change.id); it != services_.end()) {
      it->second.body = change.body;
      it->second.revision = change.revision;
    }
  } else if (change.kind == "job") {
    ApplyJob(change.id, std::move(json), change.revision);
  } else if (change.kind == kJobTasksKind) {
    if (put)
      parts_[change.id] = change.body;
    else
      parts_.erase(change.id);
  } else if (change.kind == "update") {
    rollouts_.Apply(change.id, json, change.body);
  } else if (change.kind == ClassRegistry::kKind) {
    if (change.id == ClassRegistry::kId)
      classes_ = put ? std::optional<store::StoredObject>(store::StoredObject{
                           change.kind, change.id, change.body, change.revision})
                     : std::nullopt;
  } else if (change.kind == "duration") {
    if (put)
      durations_[change.id] = ToRecorded(*json, change.revision);
    else
      durations_.erase(change.id);
  } else if (change.kind == "task") {
    if (put) {
      PutTask(change.id, *json, change.revision);
    } else if (auto it = task_index_.find(change.id); it != task_index_.end()) {
      EraseTask(it->second);
    }
  }
  return Status::Ok();
}

// A new service, or a change of its replica count only, concerns no task
// yet (the pass compares its tally with its count); anything else (removal,
// a new spec version, a new template or run) concerns all its tasks.
void StoredState::ApplyService(const std::string& id, std::optional<Json> json) {
  dirty_services_.insert(id);
  auto it = services_.find(id);
  if (!json) {
    if (it != services_.end()) services_.erase(it);
    counts_.RemoveService(id);
    global_services_.erase(id);
    visit_all_ = true;
    return;
  }
  StoredService service = ToService(*json);
  if (service.replicas.has_value())
    global_services_.erase(id);
  else
    global_services_.insert(id);
  // The API gives a new template a new spec version. A service created
  // again under the name concerns the earlier one's tasks.
  if (it != services_.end() &&
      (it->second.replicas.has_value() != service.replicas.has_value() ||
       it->second.spec_version != service.spec_version || it->second.run != service.run ||
       it->second.incarnation != service.incarnation))
    visit_all_ = true;
  if (auto tally = tallies_.find(id); tally != tallies_.end())
    tally->second.global = !service.replicas.has_value();
  counts_.PutService(id, {service.replicas, service.spec_version, service.templates});
  services_[id] = std::move(service);
}

// A job's tasks are visited when it changes (killed, or removed). A new
// job's tasks without a record are made from its parts; a killed job's are
// dropped (the views show them shut down, job_parts.h), so that killing a
// large job writes only the tasks that had started.
void StoredState::ApplyJob(const std::string& id, std::optional<Json> json, int64_t revision) {
  auto it = jobs_.find(id);
  if (it != jobs_.end()) QueueJobTasks(id, it->second.tasks);
  if (!json) {
    if (it != jobs_.end()) jobs_.erase(it);
    counts_.RemoveJob(id);
    return;
  }
  StoredJob job = ToJob(*json, revision);
  if (it != jobs_.end() && it->second.submission == job.submission && !job.submission.empty())
    job.commands = it->second.commands;  // the parts were read when it arrived
  else if (!job.submission.empty())
    AddUnrecordedTasks(id, *json, &job);
  if (job.killed) DropUnrecordedTasks(id, job.tasks);
  const int64_t tasks = job.tasks;
  counts_.PutJob(id, job.requestor, job.tasks, job.killed);
  jobs_[id] = std::move(job);
  QueueJobTasks(id, tasks);
}

// Takes the job's parts out of parts_ (those of another submission of the
// name too: nothing names them).
void StoredState::AddUnrecordedTasks(const std::string& id, const Json& json, StoredJob* job) {
  const std::string prefix = PartsPrefix(id, job->submission);
  std::vector<store::StoredObject> parts;
  const std::string of_name = id + "/";
  for (auto p = parts_.lower_bound(of_name); p != parts_.end() && p->first.starts_with(of_name);) {
    if (p->first.starts_with(prefix))
      parts.push_back({kJobTasksKind, p->first, std::move(p->second), 0});
    p = parts_.erase(p);
  }
  // The registry's bound, should the stored count be corrupt.
  const auto count = static_cast<size_t>(std::clamp<int64_t>(job->tasks, 0, kMaxTasksPerJob));
  auto commands = std::make_shared<std::vector<std::vector<std::string>>>();
  if (job->commands) commands->resize(count);
  ReserveTasks(tasks_.size() + count);
  (void)ForEachPartTask(parts, [&](int64_t index, const Json& entry, const Json* command) {
    if (index > static_cast<int64_t>(count)) return;
    if (command != nullptr && job->commands && command->is_array())
      for (const Json& word : *command)  // checked when the job was submitted
        if (word.is_string()) (*commands)[static_cast<size_t>(index - 1)].push_back(word);
    std::string task_id = id + "." + std::to_string(index);
    if (job->killed || task_index_.contains(task_id)) return;
    const uint32_t position = NewEntry(task_id);
    task_index_.emplace(std::move(task_id), position);
    TaskEntry& e = tasks_[position];
    e.task = DecodeStoredTask(UnrecordedTaskBody(id, json, index, entry), e.task.id);
    e.in_plan = false;  // waiting for admission
    Recount(e);
  });
  if (job->commands) job->commands = std::move(commands);
}

void StoredState::DropUnrecordedTasks(const std::string& job, int64_t tasks) {
  for (int64_t i = 1; i <= tasks; ++i)
    if (auto it = task_index_.find(job + "." + std::to_string(i));
        it != task_index_.end() && tasks_[it->second].revision == 0)
      EraseTask(it->second);
}

void StoredState::QueueJobTasks(const std::string& job, int64_t tasks) {
  for (int64_t i = 1; i <= tasks; ++i)
    if (auto it = task_index_.find(job + "." + std::to_string(i)); it != task_index_.end())
      Queue(static_cast<uint32_t>(it->second));
}

void StoredState::PutTask(const std::string& id, const Json& body, int64_t revision) {
  auto it = task_index_.find(id);
  if (it == task_index_.end()) it = task_index_.emplace(id, NewEntry(id)).first;
  TaskEntry& e = tasks_[it->second];
  Uncount(e);
  e.task = DecodeStoredTask(body, id);
  e.revision = revision;
  Recount(e);
  Queue(static_cast<uint32_t>(it->second));
}

TaskEntry* StoredState::FindTask(std::string_view id) {
  const auto it = task_index_.find(std::string(id));
  return it == task_index_.end() ? nullptr : &tasks_[it->second];
}

TaskEntry& StoredState::EntryFor(std::string id) {
  auto [it, added] = task_index_.try_emplace(std::move(id), 0);
  if (added) it->second = NewEntry(it->first);
  return tasks_[it->second];
}

// Powers of two: a reserve of exactly what one service needs would move
// every entry for the next small service. The index grows with the entries.
void StoredState::ReserveTasks(size_t count) {
  if (tasks_.capacity() >= count) return;
  tasks_.reserve(std::bit_ceil(count));
  task_index_.reserve(tasks_.capacity());
}

uint32_t StoredState::NewEntry(const std::string& id) {
  tasks_.emplace_back().task.id = id;
  return static_cast<uint32_t>(tasks_.size() - 1);
}

// A ready, active node offers its "slots" workers (default 1).
int64_t StoredState::WorkersOf(const StoredNode& node) {
  if (!node.error.empty() || node.node.state != NodeState::kReady ||
      node.node.availability != NodeAvailability::kActive)
    return 0;
  return node.slots;
}

void StoredState::Forget(TaskEntry& e) {
  Uncount(e);
  counts_.Uncount(e.counted);
}

void StoredState::Retire(TaskEntry& e) {
  Forget(e);
  if (e.terminal() && !e.task.service.empty()) history_.MarkStale(HistoryGroupOf(e));
}

void StoredState::EraseTask(size_t i, bool in_history) {
  TaskEntry& e = tasks_[i];
  if (in_history)
    Retire(e);
  else
    Forget(e);
  task_index_.erase(e.task.id);
  e = TaskEntry();
  e.in_plan = false;
  ++free_entries_;
}

void StoredState::Queue(uint32_t position) {
  if (std::exchange(tasks_[position].queued, true)) return;
  queued_.push_back(position);
}

void StoredState::QueueTask(const std::string& id) {
  if (auto it = task_index_.find(id); it != task_index_.end())
    Queue(static_cast<uint32_t>(it->second));
}

void StoredState::CheckAt(uint32_t position, Timestamp due) {
  timers_.push({due, position, tasks_[position].task.id});
}

std::optional<Timestamp> StoredState::NextTimer() const {
  if (timers_.empty()) return std::nullopt;
  return timers_.top().due;
}

std::vector<uint32_t> StoredState::TakeVisit(Timestamp now, bool* all) {
  if (free_entries_ > (tasks_.size() - free_entries_) / 2 + 1024) Compact();
  while (!timers_.empty() && timers_.top().due <= now) {
    const Timer& t = timers_.top();
    if (t.position < tasks_.size() && tasks_[t.position].task.id == t.id) Queue(t.position);
    timers_.pop();
  }
  // One scan of the tasks for the nodes that changed in a way that concerns
  // them since the last pass (rare: a drain, a state change, new labels); an
  // index by node would cost something on every task placed.
  if (!check_nodes_.empty() && !visit_all_)
    for (uint32_t p = 0; p < tasks_.size(); ++p)
      if (!tasks_[p].task.node.empty() && check_nodes_.contains(tasks_[p].task.node)) Queue(p);
  check_nodes_.clear();
  std::vector<uint32_t> visit = std::move(queued_);
  queued_.clear();
  for (uint32_t p : visit) tasks_[p].queued = false;
  *all = std::exchange(visit_all_, false);
  if (!*all) {
    std::sort(visit.begin(), visit.end());
    return visit;
  }
  Rebuild();
  visit.clear();
  for (uint32_t p = 0; p < tasks_.size(); ++p)
    if (tasks_[p].live()) visit.push_back(p);
  return visit;
}

// Moves the live entries together, in order; the engine's indices of them
// are stale (layout_generation_), and the next pass visits everything.
void StoredState::Compact() {
  std::erase_if(tasks_, [](const TaskEntry& e) { return !e.live(); });
  task_index_.clear();
  for (size_t i = 0; i < tasks_.size(); ++i) {
    task_index_.emplace(tasks_[i].task.id, i);
    tasks_[i].queued = false;
  }
  queued_.clear();
  timers_ = {};
  free_entries_ = 0;
  ++layout_generation_;
  visit_all_ = true;
}

void StoredState::Rebuild() {
  tallies_.clear();
  pending_.clear();
  for (TaskEntry& e : tasks_) {
    e.tally = 0;
    e.counted_in = nullptr;
    if (e.live()) Recount(e);
  }
  for (const auto& [id, service] : services_) dirty_services_.insert(id);
  // History: ended tasks of services_, by (revision, replica number).
  history_.Clear();
  std::vector<std::tuple<int64_t, int64_t, uint32_t>> ended;
  for (uint32_t p = 0; p < tasks_.size(); ++p)
    if (tasks_[p].live() && tasks_[p].terminal() && !tasks_[p].task.service.empty())
      ended.emplace_back(tasks_[p].revision, SlotOf(tasks_[p]), p);
  std::sort(ended.begin(), ended.end());
  for (const auto& [revision, number, p] : ended)
    history_.Add(HistoryGroupOf(tasks_[p]), {p, revision});
}

// A removed service's tasks are grouped as a replicated service's.
std::string StoredState::HistoryGroupOf(const TaskEntry& e) const {
  const auto svc = services_.find(e.task.service);
  if (svc != services_.end() && !svc->second.replicas)
    return TaskHistory::GroupKey(e.task.service, e.task.node);
  return TaskHistory::GroupKey(e.task.service, std::to_string(std::max(SlotOf(e), 0)));
}

// A task's slot: its own, or for a task of an older version without one,
// n of its id "<service>.<n>" (-1: none).
int32_t StoredState::SlotOf(const TaskEntry& e) {
  if (e.task.slot != 0 && e.task.slot < orchestrator::NumberSet::kLimit)
    return static_cast<int32_t>(e.task.slot);
  const std::optional<uint64_t> n = orchestrator::NumberIn(e.task.service, e.task.id);
  return n ? static_cast<int32_t>(*n) : -1;
}

void StoredState::Uncount(TaskEntry& e) {
  const uint8_t was = std::exchange(e.tally, 0);
  if (was & kListed) pending_.erase(PositionOf(e));
  orchestrator::ServiceTally* tally = std::exchange(e.counted_in, nullptr);
  if (tally == nullptr) return;
  tally->Remove({static_cast<uint8_t>(was & ~kListed), e.number, PositionOf(e)}, e.task.node);
  MarkDirty(e.task.service, *tally);
}

void StoredState::MarkDirty(const std::string& service, orchestrator::ServiceTally& tally) {
  if (std::exchange(tally.dirty, true)) return;
  dirty_services_.insert(service);
}

void StoredState::Recount(TaskEntry& e) {
  CountForViews(e);
  const bool planned = e.planned();
  uint8_t now = 0;
  if (track_pending_ && planned && e.runnable() && e.task.state == TaskState::kPending)
    now |= kListed;
  orchestrator::ServiceTally* tally = e.counted_in;
  if (!e.task.service.empty() && planned) {
    if (tally == nullptr) tally = &TallyFor(e.task.service);
    now |= tally->FlagsOf(e.task.state, e.task.desired, !e.task.node.empty());
  }
  if (now == e.tally) return;
  Uncount(e);
  e.tally = now;
  if (now & kListed) pending_.insert(PositionOf(e));
  const auto counted = static_cast<uint8_t>(now & ~kListed);
  if (counted == 0) return;
  e.counted_in = tally;
  e.number = SlotOf(e);
  tally->Add({counted, e.number, PositionOf(e)}, e.task.node);
  MarkDirty(e.task.service, *tally);
}

void StoredState::CountForViews(TaskEntry& e) {
  if (!e.live()) return;
  const StoredTask& t = e.task;
  CountedTask task{t.service,
                   t.job,
                   t.node,
                   t.message,
                   t.state,
                   t.desired,
                   t.spec_version.value_or(0),
                   e.runnable(),
                   t.state == TaskState::kNew && t.restart_at.has_value(),
                   !t.job.empty() && !e.in_plan && t.state == TaskState::kNew,
                   nullptr};
  if (HoldsReservations(t.state, t.node)) {
    // A version's template never changes: the one counted still holds.
    if (e.counted.spec && e.counted.version == task.version) {
      task.spec = e.counted.spec;
    } else if (!t.job.empty()) {
      if (auto job = jobs_.find(t.job); job != jobs_.end()) task.spec = job->second.spec;
    } else if (auto svc = services_.find(t.service); svc != services_.end()) {
      task.spec =
          svc->second.RunsPrevious(t.spec_version) ? svc->second.previous_spec : svc->second.spec;
    }
  }
  counts_.Count(task, e.counted);
}

std::shared_ptr<const CountsSnapshot> StoredState::PublishCounts(int64_t revision) {
  for (const auto& [service, update] : rollouts_)
    counts_.SetRollout(service, update.state, update.message);
  return counts_.Publish(revision, admission_status_);
}

// A service's tally, made when its first task counts: global if the
// service has no replica count (a removed service's tasks count nowhere
// once they stop; until then, as replicated).
orchestrator::ServiceTally& StoredState::TallyFor(const std::string& service) {
  auto [it, added] = tallies_.try_emplace(service);
  if (added) {
    const auto svc = services_.find(service);
    it->second.global = svc != services_.end() && !svc->second.replicas;
  }
  return it->second;
}

const orchestrator::ServiceTally* StoredState::TallyOf(const std::string& service) const {
  static const orchestrator::ServiceTally kEmpty;
  auto it = tallies_.find(service);
  return it == tallies_.end() ? &kEmpty : &it->second;
}

std::set<std::string> StoredState::TakeDirtyServices() {
  for (const std::string& id : dirty_services_)
    if (auto it = tallies_.find(id); it != tallies_.end()) it->second.dirty = false;
  return std::exchange(dirty_services_, {});
}

// Ended tasks join their history group in the order pruning needs: by
// revision (a commit's share one, unless it went in parts), then by replica
// number.
void StoredState::EndPass(const std::vector<uint32_t>& touched,
                          const std::vector<std::string>& recorded, int64_t revision,
                          const PartRevisions& parts) {
  const auto revision_of = [&](uint32_t p) {
    const auto it = std::lower_bound(parts.tasks.begin(), parts.tasks.end(), p,
                                     [](const auto& t, uint32_t q) { return t.first < q; });
    return it != parts.tasks.end() && it->first == p ? it->second : revision;
  };
  std::vector<std::tuple<int64_t, int64_t, uint32_t>> ended;  // (revision, slot, position)
  for (uint32_t p : touched) {
    TaskEntry& e = tasks_[p];
    e.touched = false;
    if (e.pruned) {
      EraseTask(p, false);  // TaskHistory::Trim took it out
      continue;
    }
    if (!e.changed) continue;
    e.changed = false;
    e.revision = revision_of(p);
    Recount(e);  // a task this pass stopped is no longer excluded (planned)
    Queue(p);
    if (e.terminal() && !e.task.service.empty()) ended.emplace_back(e.revision, SlotOf(e), p);
  }
  std::sort(ended.begin(), ended.end());
  for (const auto& [at, number, p] : ended) history_.Add(HistoryGroupOf(tasks_[p]), {p, at});
  for (size_t i = 0; i < recorded.size(); ++i) {
    Recorded& r = durations_.at(recorded[i]);
    r.changed = false;
    r.revision = parts.durations.empty() ? revision : parts.durations[i];
  }
}

}  // namespace berth::daemon
