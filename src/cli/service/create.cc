// `berth service create ID [flags] [-- COMMAND [ARG ...]]`: POST
// /v1/services, then wait (service/wait.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/flags.h"
#include "cli/service/service.h"
#include "cli/service/wait.h"

namespace berth::cli {
namespace {

struct CreateOptions {
  std::string id, mode = "replicated";
  int64_t replicas = -1;  // -1: not given (1 for a replicated service)
  // The simulated executor's run: seconds ("": until stopped) and outcome.
  std::string run_duration, run_outcome = "complete";
  // COMMAND words before `--` (any after it come from the context).
  std::vector<std::string> command;
  ReserveFlags reserve;
  ConstraintFlags constraints;
  PlacementFlags placement;
  PublishFlags publish;
  ProcessFlags process;
  RestartFlags restart;
  RolloutFlags rollout;
  WaitFlags wait;
};

// The task template of the flags and `command`.
Result<Json> CreateTemplate(const CreateOptions& o, const std::vector<std::string>& command) {
  Json task = Json::object();
  o.reserve.Apply(&task);
  o.constraints.Set(&task);
  BERTH_RETURN_IF_ERROR(o.placement.Apply(&task));
  BERTH_RETURN_IF_ERROR(o.publish.Apply(&task));
  BERTH_RETURN_IF_ERROR(o.process.Apply(command, &task));
  return task;
}

// The POST body, or InvalidArgument (bad usage).
Result<Json> CreateBody(const CreateOptions& o, const std::vector<std::string>& after_dashes) {
  std::vector<std::string> command = o.command;
  command.insert(command.end(), after_dashes.begin(), after_dashes.end());
  Result<Json> task = CreateTemplate(o, command);
  if (!task.ok()) return task.status();
  Json body = {{"id", o.id}, {"mode", o.mode}, {"task", *task}};
  if (!o.run_duration.empty()) {
    char* rest = nullptr;
    const double seconds = std::strtod(o.run_duration.c_str(), &rest);
    if (*rest != '\0' || !(seconds >= 0))
      return Status::InvalidArgument("--run-duration '" + o.run_duration + "': expected seconds");
    body["run"] = {{"duration", seconds}, {"outcome", o.run_outcome}};
  }
  BERTH_RETURN_IF_ERROR(o.restart.Apply(&body));
  BERTH_RETURN_IF_ERROR(o.rollout.Apply(&body));
  if (o.replicas >= 0)
    body["replicas"] = o.replicas;
  else if (o.mode == "replicated")
    body["replicas"] = 1;
  return body;
}

int RunCreate(const CreateOptions& o, const VerbContext& context) {
  Result<Json> body = CreateBody(o, context.command);
  if (!body.ok()) {
    context.err << "berth: " << body.status().message() << "\n";
    return 2;
  }
  std::optional<Json> created =
      CallOrSay(context.client, "POST", "/v1/services", *body, context.err);
  if (!created) return 1;
  context.out << o.id << "\n";
  const ServiceChange change{o.id, created->value("revision", int64_t{0})};
  return WaitForServices(context.client, {change}, o.wait, true, context.out, context.err,
                         context.terminal);
}

}  // namespace

void AddServiceCreate(CLI::App& noun, Verbs& verbs) {
  auto o = std::make_shared<CreateOptions>();
  CLI::App* verb = verbs.Add(
      noun, "create", "Create a service and wait for it to converge and keep running",
      [o](const VerbContext& context) { return RunCreate(*o, context); }, TakesCommand::kYes);
  verb->footer(
      "Everything after -- is the tasks' command and its arguments, run by berth-node "
      "machines: berth service create hello -- sh -c 'echo hi'");
  AddIdArgument(*verb, "ID", "service id", o->id);
  verb->add_option("--replicas", o->replicas, "number of tasks (replicated mode; default 1)")
      ->check(CLI::NonNegativeNumber);
  verb->add_option("--mode", o->mode, "replicated | global")
      ->check(CLI::IsMember({"replicated", "global"}));
  o->constraints.AddCreate(*verb);
  o->placement.AddCreate(*verb);
  o->reserve.Add(*verb);
  o->publish.Add(*verb);
  verb->add_option(
      "--run-duration", o->run_duration,
      "simulated executor: each task ends after this many seconds (default: runs until stopped)");
  verb->add_option("--run-outcome", o->run_outcome,
                   "simulated executor: how tasks end, complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  o->process.AddCreate(*verb);
  verb->add_option("COMMAND", o->command,
                   "the program and its arguments, after --, run by a berth-node machine "
                   "(default: none, the simulated executor runs the tasks)");
  o->restart.Add(*verb);
  o->rollout.Add(*verb);
  o->wait.Add(*verb);
}

}  // namespace berth::cli
