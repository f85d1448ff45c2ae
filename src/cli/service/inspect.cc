// `berth service inspect ID`: GET /v1/services/ID, shown as `docker
// service inspect --pretty` shows a service: field by field, with its
// template, policies and update_status (-o json: the API's answer).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <ostream>
#include <set>

#include "cli/output.h"
#include "cli/service/service.h"

namespace berth::cli {
namespace {

// A label and its value; a section's header has no value, its fields are
// indented by one space.
using DetailRow = std::pair<std::string, std::string>;

// The flag spellings of --placement-pref and --affinity.
std::string PreferenceText(const Json& p) {
  if (p.contains("prefer")) return "prefer=" + Text(p["prefer"]);
  const char* kind = p.contains("pack") ? "pack" : "spread";
  std::string text = std::string(kind) + "=" + Text(p.value(kind, Json()));
  std::string weights;
  const Json given = p.value("weights", Json::object());
  for (const auto& [value, weight] : given.items())
    weights += (weights.empty() ? ":" : ",") + value + "=" + weight.dump();
  return text + weights;
}

std::string AffinityText(const Json& a) {
  return "service" + std::string(a.value("anti", false) ? "!=" : "==") +
         (a.value("soft", false) ? "~" : "") + Text(a.value("service", Json()));
}

std::string PortText(const Json& p) {
  std::string text = Text(p.value("published", Json())) + ":" + Text(p.value("target", Json()));
  if (p.contains("protocol")) text += "/" + Text(p["protocol"]);
  return text + " (" + p.value("mode", "ingress") + ")";
}

std::string QuantitiesText(const Json& r) {
  std::string text;
  for (const char* key : {"cpu", "memory"})
    if (r.contains(key)) text += (text.empty() ? "" : ", ") + std::string(key) + " " + Text(r[key]);
  for (const auto& [key, value] : r.items())
    if (key != "cpu" && key != "memory")
      text += (text.empty() ? "" : ", ") + key + " " + value.dump();
  return text;
}

std::string ListText(const Json& list, std::string (*text)(const Json&),
                     const char* separator = ", ") {
  std::string joined;
  for (const Json& item : list) joined += (joined.empty() ? "" : separator) + text(item);
  return joined;
}

void AddTemplateRows(const Json& task, std::vector<DetailRow>& rows) {
  rows.push_back({"Template:", ""});
  rows.push_back({" Command:", CommandText(task)});
  if (task.contains("env")) rows.push_back({" Env:", ListText(task["env"], Text, " ")});
  for (const auto& [key, label] :
       {std::pair{"workdir", " Workdir:"}, {"stop_grace_period", " Stop grace period:"}})
    if (task.contains(key)) rows.push_back({label, Text(task[key])});
  if (task.contains("resources"))
    rows.push_back({" Reservations:", QuantitiesText(task["resources"])});
  if (task.contains("limits")) rows.push_back({" Limits:", QuantitiesText(task["limits"])});
  if (task.contains("constraints"))
    rows.push_back({" Constraints:", ListText(task["constraints"], Text)});
  if (task.contains("preferences"))
    rows.push_back({" Preferences:", ListText(task["preferences"], PreferenceText)});
  if (task.contains("affinity"))
    rows.push_back({" Affinity:", ListText(task["affinity"], AffinityText)});
  if (task.contains("ports")) rows.push_back({" Ports:", ListText(task["ports"], PortText)});
  static const std::set<std::string> kShown = {
      "command",           "args",      "env",    "workdir",
      "stop_grace_period", "resources", "limits", "constraints",
      "preferences",       "affinity",  "ports"};
  for (const auto& [key, value] : task.items())  // the rest of a placement template, as JSON
    if (!kShown.contains(key)) rows.push_back({" " + key + ":", value.dump()});
}

// A policy object's fields under `header`, each by its label.
void AddSection(const Json& object, const char* header,
                const std::vector<std::pair<const char*, const char*>>& fields,
                std::vector<DetailRow>& rows) {
  rows.push_back({header, object.is_object() ? "" : "none"});
  if (!object.is_object()) return;
  for (const auto& [key, label] : fields)
    if (object.contains(key)) rows.push_back({std::string(" ") + label + ":", Text(object[key])});
}

void AddPolicyRows(const Json& s, std::vector<DetailRow>& rows) {
  if (s.contains("run")) {
    const Json run = s["run"];
    rows.push_back({"Simulated run:", Text(run.value("duration_ms", Json())) + " ms, outcome " +
                                          Text(run.value("outcome", Json()))});
  }
  AddSection(s.value("restart_policy", Json()), "RestartPolicy:",
             {{"condition", "Condition"},
              {"delay", "Delay"},
              {"max_attempts", "Max attempts"},
              {"window", "Window"}},
             rows);
  const std::vector<std::pair<const char*, const char*>> rollout = {
      {"parallelism", "Parallelism"},
      {"delay", "Delay"},
      {"failure_action", "On failure"},
      {"monitor", "Monitoring period"},
      {"max_failure_ratio", "Max failure ratio"},
      {"order", "Order"}};
  AddSection(s.value("update_config", Json()), "UpdateConfig:", rollout, rows);
  AddSection(s.value("rollback_config", Json()), "RollbackConfig:", rollout, rows);
  rows.push_back({"Rebalance:", s.value("rebalance", "manual")});
  AddSection(s.value("update_status", Json()), "UpdateStatus:",
             {{"state", "State"},
              {"message", "Message"},
              {"spec_version", "Spec version"},
              {"started_at", "Started"},
              {"completed_at", "Completed"},
              {"replaced", "Replaced"},
              {"failures", "Failures"},
              {"in_flight", "In flight"}},
             rows);
}

}  // namespace

void PrintServiceDetail(const Json& s, std::ostream& out) {
  std::vector<DetailRow> rows = {{"ID:", Text(s.value("id", Json()))},
                                 {"Mode:", s.value("mode", "replicated")}};
  if (s.contains("replicas")) rows.push_back({"Replicas:", Text(s["replicas"])});
  std::string version = Text(s.value("spec_version", Json()));
  if (s.contains("update_kind")) version += " (" + Text(s["update_kind"]) + ")";
  rows.push_back({"Spec version:", version});
  AddTemplateRows(s.value("task", Json::object()), rows);
  AddPolicyRows(s, rows);
  // Values start in one column (after the longest label of the fixed
  // ones, " Monitoring period:"); a template's other fields may be longer.
  constexpr size_t kColumn = 21;
  for (const auto& [label, value] : rows) {
    out << label;
    if (!value.empty())
      out << std::string(label.size() < kColumn ? kColumn - label.size() : 1, ' ') << value;
    out << "\n";
  }
}

void AddServiceInspect(CLI::App& noun, Verbs& verbs) {
  verbs.AddTable(noun, {{"inspect", "Show one service: its template, policies and update status",
                         [](CLI::App& verb) {
                           auto id = std::make_shared<std::string>();
                           AddIdArgument(verb, "ID", "service id", *id);
                           return OneRequest{
                               [id] { return Result<Request>(Get("/v1/services/" + *id)); },
                               PrintServiceDetail};
                         }}});
}

}  // namespace berth::cli
