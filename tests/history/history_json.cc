#include "history/history_json.h"

#include <nlohmann/json.hpp>

namespace berth::history {
namespace {

using Json = nlohmann::json;

Json ResourcesJson(const Resources& r) {
  return {{"milli_cpu", r.milli_cpu}, {"memory_bytes", r.memory_bytes}};
}

Resources ResourcesOf(const Json& j) {
  return {j.value("milli_cpu", int64_t{0}), j.value("memory_bytes", int64_t{0})};
}

Json TaskJson(const ObservedTask& t) {
  Json j = {{"id", t.id}, {"state", ToString(t.state)}};
  if (!t.service.empty()) j["service"] = t.service;
  if (t.slot != 0) j["slot"] = t.slot;
  if (!t.node.empty()) j["node"] = t.node;
  if (t.reservations != Resources{}) j["reserves"] = ResourcesJson(t.reservations);
  return j;
}

// Throws (caught by ReadJsonLines) on a wrong type or a missing id.
Result<ObservedTask> TaskOf(const Json& j) {
  Result<TaskState> state = ParseTaskState(j.value("state", "new"));
  if (!state.ok()) return state.status();
  return ObservedTask{j.at("id"),
                      j.value("service", ""),
                      j.value("slot", uint64_t{0}),
                      j.value("node", ""),
                      *state,
                      ResourcesOf(j.value("reserves", Json::object()))};
}

Result<Snapshot> SnapshotOf(const Json& j) {
  Snapshot s{j.at("client"), j.value("time_ms", int64_t{0}), j.at("revision"), {}, {}, {}, {}};
  for (const Json& task : j.value("tasks", Json::array())) {
    Result<ObservedTask> t = TaskOf(task);
    if (!t.ok()) return t.status();
    s.tasks.push_back(std::move(*t));
  }
  for (const Json& node : j.value("nodes", Json::array()))
    s.nodes.push_back({node.at("id"), ResourcesOf(node.value("capacity", Json::object()))});
  s.services = j.value("services", std::vector<std::string>{});
  s.jobs = j.value("jobs", std::vector<std::string>{});
  return s;
}

Result<Write> WriteOf(const Json& j) {
  Result<ObjectKind> kind = ParseObjectKind(j.at("kind").get<std::string>());
  if (!kind.ok()) return kind.status();
  return Write{j.at("client"), j.value("time_ms", int64_t{0}), *kind,
               j.at("id"),     j.at("acknowledged"),           j.value("error", "")};
}

// Adds the event of one line to `history`.
Status AddEvent(const Json& j, History& history) {
  const std::string type = j.at("type");
  if (type == "write") {
    Result<Write> write = WriteOf(j);
    if (!write.ok()) return write.status();
    history.writes.push_back(std::move(*write));
    return Status::Ok();
  }
  if (type != "read" && type != "final")
    return Status::InvalidArgument("unknown event type '" + type + "'");
  Result<Snapshot> read = SnapshotOf(j);
  if (!read.ok()) return read.status();
  if (type == "read") {
    history.reads.push_back(std::move(*read));
  } else {
    if (history.final_state) return Status::InvalidArgument("a second final state");
    history.final_state = std::move(*read);
  }
  return Status::Ok();
}

}  // namespace

std::string ToJsonLine(const Write& w) {
  Json j = {{"type", "write"},          {"client", w.client}, {"time_ms", w.time_ms},
            {"kind", ToString(w.kind)}, {"id", w.id},         {"acknowledged", w.acknowledged}};
  if (!w.error.empty()) j["error"] = w.error;
  return j.dump();
}

std::string ToJsonLine(const Snapshot& s, bool final) {
  Json tasks = Json::array(), nodes = Json::array();
  for (const ObservedTask& t : s.tasks) tasks.push_back(TaskJson(t));
  for (const ObservedNode& n : s.nodes)
    nodes.push_back({{"id", n.id}, {"capacity", ResourcesJson(n.capacity)}});
  return Json{{"type", final ? "final" : "read"},
              {"client", s.client},
              {"time_ms", s.time_ms},
              {"revision", s.revision},
              {"tasks", std::move(tasks)},
              {"nodes", std::move(nodes)},
              {"services", s.services},
              {"jobs", s.jobs}}
      .dump();
}

void WriteJsonLines(const History& history, std::ostream& out) {
  for (const Write& w : history.writes) out << ToJsonLine(w) << '\n';
  for (const Snapshot& s : history.reads) out << ToJsonLine(s) << '\n';
  if (history.final_state) out << ToJsonLine(*history.final_state, true) << '\n';
}

Result<History> ReadJsonLines(std::istream& in) {
  History history;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Status added;
    try {
      added = AddEvent(Json::parse(line), history);
    } catch (const Json::exception& e) {
      added = Status::InvalidArgument(e.what());
    }
    if (!added.ok()) return added.WithContext("line " + std::to_string(number));
  }
  return history;
}

}  // namespace berth::history
