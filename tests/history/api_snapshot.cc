#include "history/api_snapshot.h"

#include <map>

#include "core/quantity.h"
#include "orchestrator/orchestrator.h"

namespace berth::history {
namespace {

using Json = nlohmann::json;
using Owners = std::map<std::string, const Json*, std::less<>>;

Result<int64_t> MilliCpu(const Json& value) {
  if (value.is_null()) return int64_t{0};
  if (value.is_number()) return MilliCpuFromNumber(value.get<double>());
  return ParseMilliCpu(value.get<std::string>());
}

Result<int64_t> Bytes(const Json& value) {
  if (value.is_null()) return int64_t{0};
  // Exact below 2^63, where a double would round.
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number()) return BytesFromNumber(value.get<double>());
  return ParseBytes(value.get<std::string>());
}

// `object`'s "resources" {"cpu", "memory"} (a node's, or a template's).
Result<Resources> ResourcesIn(const Json& object) {
  const Json resources = object.value("resources", Json::object());
  Result<int64_t> cpu = MilliCpu(resources.value("cpu", Json()));
  if (!cpu.ok()) return cpu.status().WithContext("resources.cpu");
  Result<int64_t> memory = Bytes(resources.value("memory", Json()));
  if (!memory.ok()) return memory.status().WithContext("resources.memory");
  return Resources{*cpu, *memory};
}

Owners ById(const Json& answer, const char* list) {
  Owners owners;
  for (const Json& owner : answer.at(list)) owners[owner.at("id").get<std::string>()] = &owner;
  return owners;
}

// What `task` reserves by its owner's template (see the header).
Result<Resources> ReservedBy(const Json& task, const Owners& services, const Owners& jobs) {
  const bool of_job = task.contains("job");
  const Owners& owners = of_job ? jobs : services;
  const auto owner = owners.find(task.value(of_job ? "job" : "service", ""));
  if (owner == owners.end()) return Resources{};
  const Json& o = *owner->second;
  if (!of_job &&
      orchestrator::SerialOf(task.at("id").get<std::string>()) < o.value("incarnation", int64_t{0}))
    return Resources{};
  const bool older = task.value("spec_version", uint64_t{0}) < o.value("spec_version", uint64_t{0});
  const bool previous = older && o.contains("previous_task");
  return ResourcesIn(o.value(previous ? "previous_task" : "task", Json::object()));
}

Result<ObservedTask> TaskOf(const Json& task, const Owners& services, const Owners& jobs) {
  Result<TaskState> state = ParseTaskState(task.value("state", "new"));
  if (!state.ok()) return state.status();
  Result<Resources> reserved = ReservedBy(task, services, jobs);
  if (!reserved.ok()) return reserved.status();
  return ObservedTask{task.at("id"),
                      task.value("service", ""),
                      task.value("slot", uint64_t{0}),
                      task.value("node", ""),
                      *state,
                      *reserved};
}

Result<Snapshot> Translate(const ApiAnswers& answers, const std::string& client, int64_t time_ms) {
  Snapshot s{client, time_ms, answers.revision, {}, {}, {}, {}};
  const Owners services = ById(answers.services, "services"), jobs = ById(answers.jobs, "jobs");
  // As listed, not from the maps: a duplicate must stay visible to rule 1.
  for (const Json& service : answers.services.at("services"))
    s.services.push_back(service.at("id"));
  for (const Json& job : answers.jobs.at("jobs")) s.jobs.push_back(job.at("id"));
  for (const Json& task : answers.tasks.at("tasks")) {
    Result<ObservedTask> t = TaskOf(task, services, jobs);
    if (!t.ok()) return t.status().WithContext("task " + task.at("id").get<std::string>());
    s.tasks.push_back(std::move(*t));
  }
  for (const Json& node : answers.nodes.at("nodes")) {
    Result<Resources> capacity = ResourcesIn(node);
    if (!capacity.ok())
      return capacity.status().WithContext("node " + node.at("id").get<std::string>());
    s.nodes.push_back({node.at("id"), *capacity});
  }
  return s;
}

}  // namespace

Result<Snapshot> SnapshotFromApi(const ApiAnswers& answers, const std::string& client,
                                 int64_t time_ms) {
  try {
    return Translate(answers, client, time_ms);
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(std::string("unexpected answer from berthd: ") + e.what());
  }
}

}  // namespace berth::history
