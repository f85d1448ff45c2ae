// `berth node`: its simple verbs (ls, add, inspect, drain, ps, rm) and
// update (update.cc).
#include "cli/node/node.h"

#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output.h"
#include "cli/ps.h"

namespace berth::cli {
namespace {

// A node's status message: berthd's when it gives one; else, for a
// berth-node that cannot enforce resource limits, why (the one thing that
// makes a ready node run tasks other than as asked).
std::string NodeMessage(const Json& n) {
  if (n.contains("message")) return Text(n["message"]);
  const Json b = n.value("berth_node", Json::object());
  if (!b.is_object() || b.value("limits_enforced", true)) return "";
  const std::string why = b.value("limits", "");
  return why.empty() ? "resource limits are not enforced" : why;
}

// `node inspect`'s "cpu 2, memory 8Gi".
std::string ResourcesText(const Json& r) {
  return "cpu " + FormatCpu(r.value("cpu", Json("0"))) + ", memory " +
         FormatMemory(r.value("memory", Json(0)));
}

// `node inspect`'s "enforced: cpu, memory, pids (cgroup v1)", or what is
// not and why: pids limits need a controller of their own, which a node
// that holds the others may lack.
std::string LimitsText(const Json& b) {
  if (!b.value("limits_enforced", false))
    return "NOT enforced: " + b.value("limits", "") + " (tasks with limits are not placed here)";
  const std::string cgroup = " (cgroup " + b.value("limits_cgroup", std::string("v2")) + ")";
  if (b.value("limits_pids", false)) return "enforced: cpu, memory, pids" + cgroup;
  const std::string why = b.value("limits_pids_reason", "");
  return "enforced: cpu, memory" + cgroup + "; pids NOT enforced" +
         (why.empty() ? "" : ": " + why) + " (tasks with a pids limit are not placed here)";
}

// `node inspect`: one node, field by field, with what its tasks reserve
// and, for a berth-node machine, its executor and whether limits hold.
void PrintNodeDetail(const Json& n, std::ostream& out) {
  std::vector<std::vector<std::string>> rows = {
      {"ID:", Text(n["id"])},
      {"Hostname:", n.value("hostname", "")},
      {"State:", n.value("state", "ready")},
      {"Availability:", n.value("availability", "active")},
      {"Resources:", ResourcesText(n.value("resources", Json::object()))},
      {"Allocated:", ResourcesText(n.value("allocated", Json::object())) + " (" +
                         Text(n.value("tasks", Json(0))) + " tasks)"},
      {"Free:", ResourcesText(n.value("free", Json::object()))},
      {"Labels:", n.value("labels", Json::object()).dump()},
      {"Engine labels:", n.value("engine_labels", Json::object()).dump()}};
  if (const Json p = n.value("platform", Json::object()); !p.empty())
    rows.insert(rows.begin() + 4, {"Platform:", p.value("os", "") + "/" + p.value("arch", "")});
  if (n.contains("agent")) {
    rows.push_back({"Agent:", Text(n["agent"]) + " (its nodes are the agent's; berthd places "
                                                 "through it)"});
  } else if (n.contains("berth_node")) {
    const Json& b = n["berth_node"];
    rows.push_back({"Executor:", "berth-node " + b.value("version", "") + ", logs at " +
                                     b.value("endpoint", "")});
    rows.push_back({"Limits:", LimitsText(b)});
  } else {
    rows.push_back({"Executor:", "simulated"});
  }
  for (const auto& row : rows)
    out << row[0] << std::string(16 - row[0].size(), ' ') << row[1] << "\n";
}

// A simple verb whose only argument is the node's id.
SimpleVerb OnNode(const char* name, const char* help, const char* method, const char* suffix,
                  void (*print)(const Json&, std::ostream&)) {
  return {name, help, [=](CLI::App& verb) {
            auto id = std::make_shared<std::string>();
            AddIdArgument(verb, "ID", "node id", *id);
            return OneRequest{
                [=] {
                  return Result<Request>(Request{method, "/v1/nodes/" + *id + suffix, nullptr});
                },
                print};
          }};
}

struct NodeAddOptions {
  std::string id, hostname, cpu, memory;
  std::vector<std::string> labels;
};

OneRequest DefineNodeAdd(CLI::App& verb) {
  auto o = std::make_shared<NodeAddOptions>();
  AddIdArgument(verb, "ID", "node id", o->id);
  verb.add_option("--hostname", o->hostname, "host name");
  verb.add_option("--cpu", o->cpu, "CPUs (4, 0.5, 500m)");
  verb.add_option("--memory", o->memory, "memory (8Gi, 512Mi, bytes)");
  verb.add_option("--label", o->labels, "a node label KEY=VALUE (repeatable)");
  return {[o]() -> Result<Request> {
            Json body = {{"id", o->id}};
            if (!o->hostname.empty()) body["hostname"] = o->hostname;
            if (!o->cpu.empty()) body["resources"]["cpu"] = o->cpu;
            if (!o->memory.empty()) body["resources"]["memory"] = o->memory;
            Result<Json> labels = ParseLabels(o->labels);
            if (!labels.ok()) return labels.status();
            if (!labels->empty()) body["labels"] = *labels;
            return Request{"POST", "/v1/nodes", body};
          },
          PrintNodes};
}

struct NodeRmOptions {
  std::string id;
  bool force = false;
};

// berthd refuses to remove a ready node unless forced.
OneRequest DefineNodeRm(CLI::App& verb) {
  auto o = std::make_shared<NodeRmOptions>();
  AddIdArgument(verb, "ID", "node id", o->id);
  verb.add_flag("-f,--force", o->force,
                "remove the node even if it is ready (berthd refuses a ready node without it)");
  return {[o] {
            return Result<Request>(
                Request{"DELETE", "/v1/nodes/" + o->id + (o->force ? "?force=true" : ""), nullptr});
          },
          PrintNodes};
}

}  // namespace

void PrintNodes(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& nodes = answer.contains("nodes") ? answer["nodes"] : Json::array({answer});
  for (const Json& n : nodes) {
    const Json resources = n.value("resources", Json::object());
    rows.push_back({Text(n["id"]), n.value("hostname", "-"), n.value("state", "ready"),
                    n.value("availability", "active"), n.contains("tasks") ? Text(n["tasks"]) : "-",
                    FormatCpu(resources.value("cpu", Json())),
                    FormatMemory(resources.value("memory", Json())),
                    n.value("labels", Json::object()).dump(), Cut(NodeMessage(n))});
  }
  PrintTable(
      out,
      {"ID", "HOSTNAME", "STATE", "AVAILABILITY", "TASKS", "CPU", "MEMORY", "LABELS", "MESSAGE"},
      rows);
  for (const Json& a : answer.value("unreachable", Json::array()))
    out << "agent " << Text(a.value("agent", Json())) << " did not answer, its nodes are not "
        << "listed: " << Text(a.value("error", Json())) << "\n";
}

void AddNodeCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun =
      *app.add_subcommand("node", "Manage nodes of a running berthd")->require_subcommand(1);
  verbs.AddTable(
      noun, {{"ls", "List nodes",
              [](CLI::App&) {
                return OneRequest{[] { return Result<Request>(Get("/v1/nodes")); }, PrintNodes};
              }},
             {"add", "Register a node", DefineNodeAdd}});
  AddNodeUpdate(noun, verbs);
  verbs.AddTable(
      noun,
      {{"ps", "List the tasks on a node",
        [](CLI::App& verb) {
          return DefineTaskPs(verb, "node", "NODE", "desired-state=running|shutdown|complete");
        }},
       OnNode("inspect", "Show one node: resources, what its tasks reserve, its executor", "GET",
              "", PrintNodeDetail),
       OnNode("drain", "Stop placing tasks on a node", "POST", "/drain", PrintNodes),
       {"rm", "Remove a node (its tasks are replaced elsewhere)", DefineNodeRm}});
}

}  // namespace berth::cli
