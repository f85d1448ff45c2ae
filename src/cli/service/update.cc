// `berth service update ID [flags]`: GET the service, PATCH the fields the
// flags change (the template edited as it is), then wait (service/wait.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <sstream>

#include "cli/flags.h"
#include "cli/service/service.h"
#include "cli/service/wait.h"

namespace berth::cli {
namespace {

struct UpdateOptions {
  std::string id;
  int64_t replicas = -1;  // -1: not given
  bool force = false;
  std::string args;  // --args: the command's new arguments, split at spaces
  ReserveFlags reserve;
  ConstraintFlags constraints;
  PlacementFlags placement;
  ProcessFlags process;
  RestartFlags restart;
  RolloutFlags rollout;
  WaitFlags wait;
};

// "a b  c" -> {"a", "b", "c"}.
std::vector<std::string> SplitSpaces(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// The service's template with the flags' edits.
Result<Json> UpdatedTemplate(const UpdateOptions& o, Json task) {
  o.reserve.Apply(&task);
  BERTH_RETURN_IF_ERROR(o.constraints.Apply(&task));
  BERTH_RETURN_IF_ERROR(o.placement.Apply(&task));
  BERTH_RETURN_IF_ERROR(o.process.Apply({}, &task));
  if (!o.args.empty()) {
    if (!task.contains("command"))
      return Status::InvalidArgument("--args: the service has no command to give arguments to");
    task["args"] = SplitSpaces(o.args);
  }
  return task;
}

// The PATCH body from the flags and the service as it is; InvalidArgument
// (bad usage) when a flag does not fit it or nothing would change.
Result<Json> UpdateBody(const UpdateOptions& o, const Json& current) {
  Json body = Json::object();
  if (o.replicas >= 0) body["replicas"] = o.replicas;
  const Json before = current.value("task", Json::object());
  Result<Json> task = UpdatedTemplate(o, before);
  if (!task.ok()) return task.status();
  if (*task != before) body["task"] = *task;
  BERTH_RETURN_IF_ERROR(o.restart.Apply(&body));
  BERTH_RETURN_IF_ERROR(o.rollout.Apply(&body));
  if (o.force) body["force"] = true;
  if (body.empty())
    return Status::InvalidArgument(
        "nothing to update: give --replicas, a template flag, --restart-*, --update-*, "
        "--rollback-*, --rebalance or --force");
  return body;
}

int RunUpdate(const UpdateOptions& o, const VerbContext& context) {
  const std::string path = "/v1/services/" + o.id;
  std::optional<Json> current = CallOrSay(context.client, "GET", path, nullptr, context.err);
  if (!current) return 1;
  Result<Json> body = UpdateBody(o, *current);
  if (!body.ok()) {
    context.err << "berth: " << body.status().message() << "\n";
    return 2;
  }
  std::optional<Json> updated = CallOrSay(context.client, "PATCH", path, *body, context.err);
  if (!updated) return 1;
  context.out << o.id << "\n";
  const ServiceChange change{o.id, updated->value("revision", int64_t{0})};
  return WaitForServices(context.client, {change}, o.wait, true, context.out, context.err,
                         context.terminal);
}

}  // namespace

void AddServiceUpdate(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<UpdateOptions>();
  CLI::App* verb = verbs.Add(noun, "update", "Change a service and wait for it to converge",
                             [o](const VerbContext& context) { return RunUpdate(*o, context); });
  AddIdArgument(*verb, "ID", "service id", o->id);
  verb->add_option("--replicas", o->replicas, "number of tasks (replicated mode)")
      ->check(CLI::NonNegativeNumber);
  o->reserve.Add(*verb);
  o->constraints.AddUpdate(*verb);
  o->placement.AddUpdate(*verb);
  verb->add_flag("--force", o->force, "replace every task even if nothing else changed");
  o->process.AddUpdate(*verb);
  verb->add_option("--args", o->args,
                   "replace the command's arguments (one string, split at spaces)");
  o->restart.Add(*verb);
  o->rollout.Add(*verb);
  o->wait.Add(*verb);
}

}  // namespace berth::cli
