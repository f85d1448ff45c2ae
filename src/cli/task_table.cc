#include "cli/task_table.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <tuple>

#include "api/lifecycle_codec.h"
#include "cli/output.h"
#include "orchestrator/orchestrator.h"

namespace berth::cli {
namespace {

using api::Json;

std::string Field(const Json& t, const char* key) {
  const auto it = t.find(key);
  if (it == t.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string NameOf(const Json& t) { return t.value("name", t.value("id", "")); }

// (service, slot, node-or-id, -serial): slots in number order, newest first.
auto DisplayKey(const Json& t) {
  const std::string id = t.value("id", "");
  return std::make_tuple(t.value("service", ""), t.value("slot", uint64_t{0}),
                         t.contains("slot") ? std::string() : NameOf(t),
                         -orchestrator::SerialOf(id), id);
}

}  // namespace

std::vector<Json> InDisplayOrder(const Json& answer) {
  std::vector<Json> tasks;
  if (answer.contains("tasks"))
    tasks.assign(answer["tasks"].begin(), answer["tasks"].end());
  else
    tasks.push_back(answer);
  std::sort(tasks.begin(), tasks.end(),
            [](const Json& a, const Json& b) { return DisplayKey(a) < DisplayKey(b); });
  return tasks;
}

void PrintTaskTable(const Json& answer, const TaskTableOptions& options, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  std::string previous;
  for (const Json& t : InDisplayOrder(answer)) {
    const std::string name = NameOf(t);
    const bool older = options.history_marks && name == previous;
    previous = name;
    rows.push_back({(older ? " \\_ " : "") + name, Field(t, "id"), Field(t, "spec_version"),
                    Field(t, "node"), Field(t, "desired_state"), Field(t, "state"),
                    options.no_trunc ? t.value("message", "") : Cut(t.value("message", ""))});
  }
  PrintTable(out, {"NAME", "ID", "VERSION", "NODE", "DESIRED", "STATE", "MESSAGE"}, rows);
}

ServiceProgress ProgressOf(const Json& service, const Json& tasks) {
  // Tasks of versions before a rebalance, or of the one a rollback returned
  // to, run the current template too.
  const orchestrator::TemplateVersions versions = api::TemplateVersionsOf(service);
  // The newest task of each slot (or node) that is meant to run.
  std::map<std::string, const Json*> newest;
  for (const Json& t : tasks["tasks"]) {
    const std::string desired = t.value("desired_state", "running");
    if (desired != "running" && desired != "complete") continue;
    const Json*& kept = newest[NameOf(t)];
    if (kept == nullptr ||
        orchestrator::SerialOf(t.value("id", "")) > orchestrator::SerialOf(kept->value("id", "")))
      kept = &t;
  }
  ServiceProgress progress;
  progress.desired = service.contains("replicas") ? service["replicas"].get<uint64_t>()
                                                  : static_cast<uint64_t>(newest.size());
  std::vector<Json> shown;
  for (const auto& [name, t] : newest) shown.push_back(*t);
  for (const Json& t : InDisplayOrder(Json{{"tasks", shown}})) {
    const std::string state = t.value("state", "pending");
    const bool current = versions.RunsCurrent(t.value("spec_version", uint64_t{0}));
    if (state == "running" && current) ++progress.running;
    const bool waits = (state == "pending" && !t.contains("restart_at")) ||
                       t.value("desired_state", "running") == "complete";
    if (waits) progress.stuck.push_back(NameOf(t));
    std::string where =
        state == "running" || state == "assigned" ? t.value("node", "") : t.value("message", "");
    // A slot that runs but is not counted says why, so that the slots and
    // the overall count agree.
    if (state == "running" && !current)
      where += " (version " + Field(t, "spec_version") + ", not replaced yet)";
    progress.slots.push_back({NameOf(t), state, where});
  }
  return progress;
}

}  // namespace berth::cli
