// `berth service ls`: GET /v1/services, then each service's tasks, to show
// REPLICAS as running/desired (tasks of the current template that run).
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/output.h"
#include "cli/service/service.h"
#include "cli/task_table.h"

namespace berth::cli {
namespace {

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
    std::optional<Json> tasks =
        CallOrSay(context.client, "GET", "/v1/tasks?service=" + id, nullptr, context.err);
    if (!tasks) return 1;
    const ServiceProgress progress = ProgressOf(s, *tasks);
    rows.push_back({id, s.value("mode", "replicated"),
                    std::to_string(progress.running) + "/" + std::to_string(progress.desired),
                    Text(s["spec_version"])});
  }
  PrintTable(context.out, {"ID", "MODE", "REPLICAS", "VERSION"}, rows);
  return 0;
}

}  // namespace

void AddServiceLs(CLI::App& noun, Verbs& verbs) {
  verbs.Add(noun, "ls", "List services with their running and desired tasks", RunServiceLs);
}

}  // namespace berth::cli
