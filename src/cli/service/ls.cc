// `berth service ls`: GET /v1/services, with REPLICAS as running/desired
// (tasks of the current template that run). berthd counts them in its
// control loop; a follower replica does not, and then each service's tasks
// are read.
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/output.h"
#include "cli/service/service.h"
#include "cli/task_table.h"

namespace berth::cli {
namespace {

// "running/desired".
std::optional<std::string> Replicas(const VerbContext& context, const Json& service) {
  if (const auto counted = service.find("tasks"); counted != service.end())
    return Text((*counted)["running"]) + "/" + Text((*counted)["desired"]);
  std::optional<Json> tasks = CallOrSay(
      context.client, "GET", "/v1/tasks?service=" + Text(service["id"]), nullptr, context.err);
  if (!tasks) return std::nullopt;
  const ServiceProgress progress = ProgressOf(service, *tasks);
  return std::to_string(progress.running) + "/" + std::to_string(progress.desired);
}

int RunServiceLs(const VerbContext& context) {
  std::optional<Json> services =
      CallOrSay(context.client, "GET", "/v1/services", nullptr, context.err);
  if (!services) return 1;
  if (context.json) {
    context.out << services->dump(2) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows;
  for (const Json& s : (*services)["services"]) {
    const std::string id = s["id"];
    std::optional<std::string> replicas = Replicas(context, s);
    if (!replicas) return 1;
    rows.push_back({id, s.value("mode", "replicated"), *replicas, Text(s["spec_version"])});
  }
  PrintTable(context.out, {"ID", "MODE", "REPLICAS", "VERSION"}, rows);
  return 0;
}

}  // namespace

void AddServiceLs(CLI::App& noun, Verbs& verbs) {
  verbs.Add(noun, "ls", "List services with their running and desired tasks", RunServiceLs);
}

}  // namespace berth::cli
