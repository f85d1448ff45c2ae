#include "daemon/views/count_views.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/cluster_codec.h"
#include "api/json_writer.h"
#include "daemon/registry/job_registry.h"
#include "daemon/registry/task_views.h"

namespace berth::daemon {
namespace {

using api::Json;

std::string Cpu(int64_t milli_cpu) { return std::to_string(milli_cpu) + "m"; }

Json States(const StateCounts& counts) {
  Json states = Json::object();
  for (size_t s = 0; s < counts.size(); ++s)
    if (counts[s] != 0) states[std::string(ToString(static_cast<TaskState>(s)))] = counts[s];
  return states;
}

Json Reasons(const std::array<uint64_t, kPendingReasons>& counts) {
  Json reasons = Json::object();
  for (size_t r = 0; r < counts.size(); ++r)
    if (counts[r] != 0) reasons[std::string(ToString(static_cast<PendingReason>(r)))] = counts[r];
  return reasons;
}

template <class Row>
std::vector<const Row*> ById(std::vector<const Row*> rows) {
  std::sort(rows.begin(), rows.end(), [](const Row* a, const Row* b) { return a->id < b->id; });
  return rows;
}

// Written directly: a snapshot holds every node (10,000 nodes: 3 MB).
void WriteNode(const NodeRow& row, std::string& out) {
  api::ObjectWriter node(out);
  node.String("id", row.id);
  node.Text("error", row.error);
  if (row.node) {
    const Node& n = *row.node;
    node.Text("hostname", n.hostname);
    node.String("state", ToString(n.state));
    node.String("availability", ToString(n.availability));
    node.Key("labels");
    {
      api::ObjectWriter labels(out);
      for (const auto& [key, value] : n.labels) {
        labels.DataKey(key);
        api::AppendJsonString(out, value);
      }
    }
    node.Key("resources");
    api::ObjectWriter resources(out);
    resources.String("cpu", Cpu(n.resources.milli_cpu));
    resources.Number("memory", n.resources.memory_bytes);
    if (!n.resources.generic.empty()) {
      resources.Key("generic");
      api::ObjectWriter generic(out);
      for (const NodeGenericResource& g : n.resources.generic) {
        generic.DataKey(g.kind);
        out += std::to_string(g.named ? static_cast<int64_t>(g.names.size()) : g.count);
      }
    }
  }
  node.Key("used");
  {
    api::ObjectWriter used(out);
    used.Number("tasks", row.tasks);
    used.String("cpu", Cpu(row.milli_cpu));
    used.Number("memory", row.memory_bytes);
    if (!row.generic.empty()) {
      used.Key("generic");
      api::ObjectWriter generic(out);
      for (const GenericRequest& g : row.generic) {
        generic.DataKey(g.kind);
        out += std::to_string(g.count);
      }
    }
  }
  for (const bool jobs : {false, true}) {
    bool any = false;
    for (const NodeRow::Owner& o : row.owners) any = any || o.job == jobs;
    if (!any) continue;
    node.Key(jobs ? "jobs" : "services");
    api::ObjectWriter owners(out);
    for (const NodeRow::Owner& o : row.owners)
      if (o.job == jobs) {
        owners.DataKey(o.id);
        out += std::to_string(o.tasks);
      }
  }
}

Json JobJson(const OwnerRow& row) {
  Json states = States(row.by_state);
  const char* state = JobStateOf(states, row.job_tasks, row.killed);
  return {{"id", row.id},           {"requestor", row.requestor},
          {"tasks", row.job_tasks}, {"killed", row.killed},
          {"state", state},         {"states", std::move(states)}};
}

}  // namespace

Json NodeUseJson(const NodeRow& node) {
  return api::NodeUseOf(node.tasks, node.milli_cpu, node.memory_bytes,
                        node.node ? node.node->resources : NodeResources{});
}

void AddNodeUse(const CountsSnapshot& snapshot, Json& nodes) {
  std::unordered_map<std::string_view, const NodeRow*> rows;
  snapshot.ForEachNode([&](const NodeRow& row) { rows.emplace(row.id, &row); });
  for (Json& node : nodes)
    if (auto it = rows.find(node.value("id", "")); it != rows.end())
      node.update(NodeUseJson(*it->second));
}

void AddServiceTasks(const CountsSnapshot& snapshot, Json& services) {
  std::unordered_map<std::string_view, const OwnerRow*> rows;
  snapshot.ForEachOwner([&](const OwnerRow& row) {
    if (!row.job) rows.emplace(row.id, &row);
  });
  for (Json& service : services)
    if (auto it = rows.find(service.value("id", "")); it != rows.end())
      service["tasks"] = ServiceTasksJson(*it->second);
}

Json ServiceTasksJson(const OwnerRow& service) {
  Json tasks = {{"running", service.RunningCurrent()},
                {"desired", service.replicas.value_or(service.runnable)},
                {"pending", service.Waiting()},
                {"states", States(service.by_state)}};
  if (service.Waiting() != 0) {
    tasks["pending_reasons"] = Reasons(service.pending_by_reason);
    tasks["pending_message"] = service.pending_message;
  }
  return tasks;
}

namespace {

void WriteSnapshot(const CountsSnapshot& snapshot, const api::Json& leader, std::string& out) {
  std::vector<const NodeRow*> nodes;
  snapshot.ForEachNode([&](const NodeRow& row) { nodes.push_back(&row); });
  std::vector<const OwnerRow*> services, jobs;
  snapshot.ForEachOwner([&](const OwnerRow& row) { (row.job ? jobs : services).push_back(&row); });
  out.reserve(nodes.size() * 320 + services.size() * 200 + 256);
  api::ObjectWriter answer(out);
  answer.Number("revision", snapshot.revision);
  answer.Key("tasks");
  out += States(snapshot.tasks_by_state).dump();
  answer.Key("pending_reasons");
  out += Reasons(snapshot.pending_by_reason).dump();
  answer.Key("nodes");
  out += '[';
  for (const NodeRow* row : ById(std::move(nodes))) {
    if (out.back() != '[') out += ',';
    WriteNode(*row, out);
  }
  out += ']';
  answer.Key("services");
  Json list = Json::array();
  for (const OwnerRow* row : ById(std::move(services))) {
    Json service = {{"id", row->id},
                    {"mode", row->replicas ? "replicated" : "global"},
                    {"spec_version", row->spec_version},
                    {"tasks", ServiceTasksJson(*row)}};
    if (!row->rollout_state.empty())
      service["update_status"] = {{"state", row->rollout_state}, {"message", row->rollout_message}};
    list.push_back(std::move(service));
  }
  out += list.dump();
  answer.Key("jobs");
  list = Json::array();
  for (const OwnerRow* row : ById(std::move(jobs))) list.push_back(JobJson(*row));
  out += list.dump();
  if (!snapshot.admission.empty()) {
    answer.Key("admission");
    out += snapshot.admission;  // the loop's own JSON text
  }
  if (!leader.is_null()) {
    answer.Key("leader");
    out += leader.dump();
  }
}

}  // namespace

std::string SnapshotText(const CountsSnapshot& snapshot, const api::Json& leader) {
  std::string out;
  WriteSnapshot(snapshot, leader, out);  // the object is closed when it returns
  return out;
}

}  // namespace berth::daemon
