#include "daemon/stored_state.h"

#include "api/cluster_codec.h"

namespace berth::daemon {
namespace {

using api::Json;

constexpr const char* kKinds[] = {"node", "service", "task", "job", "duration"};

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

StoredService ToService(Json json) {
  StoredService s;
  if (json.value("mode", "replicated") == "replicated" && json.contains("replicas"))
    s.replicas = json["replicas"].get<uint64_t>();
  s.spec_version = json.value("spec_version", uint64_t{0});
  if (auto run = json.find("run"); run != json.end() && run->is_object())
    s.run = SimulatedRun{run->value("duration_ms", int64_t{0}),
                         run->value("outcome", "complete") == "fail"};
  s.spec = TemplateOf(json);
  s.json = std::move(json);
  return s;
}

StoredJob ToJob(Json json, int64_t revision) {
  StoredJob j;
  j.killed = json.value("killed", false);
  j.spec = TemplateOf(json);
  j.json = std::move(json);
  j.revision = revision;
  return j;
}

Recorded ToRecorded(const Json& body, int64_t revision) {
  return {body.value("count", int64_t{0}), body.value("total_ms", int64_t{0}), revision, false};
}

}  // namespace

Status StoredState::Refresh(store::WatchedStore& store) {
  if (!loaded_) return Load(store);
  for (const store::Change& change : store.TakeChanges())
    if (!Apply(change).ok()) return Load(store);
  return Status::Ok();
}

Status StoredState::Load(store::WatchedStore& store) {
  const uint64_t generation = nodes_generation;
  *this = StoredState();
  nodes_generation = generation + 1;
  Result<std::vector<std::vector<store::StoredObject>>> all =
      store.Watch({std::begin(kKinds), std::end(kKinds)});
  if (!all.ok()) return all.status();
  for (const std::vector<store::StoredObject>& kind : *all)
    for (const store::StoredObject& object : kind)
      BERTH_RETURN_IF_ERROR(
          Apply({store::Write::Op::kPut, object.kind, object.id, object.body, object.revision}));
  loaded_ = true;
  return Status::Ok();
}

Status StoredState::Apply(const store::Change& change) {
  const bool put = change.op == store::Write::Op::kPut;
  Json json;
  if (put) {
    Result<Json> parsed = Parse(change.kind, change.id, change.body);
    if (!parsed.ok()) return parsed.status();
    json = std::move(*parsed);
  }
  if (change.kind == "node") {
    ++nodes_generation;
    if (put) {
      nodes[change.id] = std::move(json);
      node_ids_.insert(change.id);
    } else {
      nodes.erase(change.id);
      node_ids_.erase(change.id);
    }
  } else if (change.kind == "service") {
    if (put)
      services[change.id] = ToService(std::move(json));
    else
      services.erase(change.id);
  } else if (change.kind == "job") {
    if (put)
      jobs[change.id] = ToJob(std::move(json), change.revision);
    else
      jobs.erase(change.id);
  } else if (change.kind == "duration") {
    if (put)
      durations[change.id] = ToRecorded(json, change.revision);
    else
      durations.erase(change.id);
  } else if (change.kind == "task") {
    if (put) {
      PutTask(change.id, json, change.revision);
    } else if (auto it = task_index.find(change.id); it != task_index.end()) {
      EraseTask(it->second);
    }
  }
  return Status::Ok();
}

void StoredState::PutTask(const std::string& id, const Json& body, int64_t revision) {
  auto [it, added] = task_index.try_emplace(id, tasks.size());
  if (added) tasks.emplace_back();
  TaskEntry& e = tasks[it->second];
  e.task = DecodeStoredTask(body);
  e.task.id = id;  // the store's name for it, whatever the body says
  e.revision = revision;
}

int64_t StoredState::Workers() {
  if (workers_generation_ == nodes_generation) return workers_;
  workers_ = 0;
  for (const auto& [id, n] : nodes)
    if (n.value("state", "ready") == "ready" && n.value("availability", "active") == "active")
      workers_ += n.value("slots", int64_t{1});
  workers_generation_ = nodes_generation;
  return workers_;
}

void StoredState::EraseTask(size_t i) {
  task_index.erase(tasks[i].task.id);
  if (i + 1 != tasks.size()) {
    tasks[i] = std::move(tasks.back());
    task_index[tasks[i].task.id] = i;
  }
  tasks.pop_back();
}

void StoredState::Committed(int64_t revision) {
  for (size_t i = tasks.size(); i-- > 0;)
    if (tasks[i].pruned) EraseTask(i);
  for (TaskEntry& e : tasks)
    if (std::exchange(e.changed, false)) e.revision = revision;
  for (auto& [name, recorded] : durations)
    if (std::exchange(recorded.changed, false)) recorded.revision = revision;
}

}  // namespace berth::daemon
