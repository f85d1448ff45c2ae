// `berth job`: submit, ls, inspect and kill, each one request.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/output.h"

namespace berth::cli {
namespace {

void PrintJobs(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& jobs = answer.contains("jobs") ? answer["jobs"] : Json::array({answer});
  for (const Json& j : jobs)
    rows.push_back({Text(j["id"]), Text(j.value("requestor", Json())),
                    Text(j.value("tasks", Json())), j.value("killed", false) ? "killed" : "active",
                    j.contains("states") ? j["states"].dump() : "-"});
  PrintTable(out, {"ID", "REQUESTOR", "TASKS", "STATUS", "TASK STATES"}, rows);
}

struct JobSubmitOptions {
  std::string id, requestor, duration = "1", outcome = "complete";
  int64_t tasks = 1;
  ReserveFlags reserve;
  ConstraintFlags constraints;
};

Result<Request> JobSubmitRequest(const JobSubmitOptions& o) {
  Json task = Json::object();
  o.reserve.Apply(&task);
  o.constraints.Set(&task);
  char* rest = nullptr;
  const double seconds = std::strtod(o.duration.c_str(), &rest);
  if (o.duration.empty() || *rest != '\0' || !(seconds >= 0))
    return Status::InvalidArgument("--duration '" + o.duration + "': expected seconds");
  Json tasks = Json::array();
  for (int64_t i = 0; i < o.tasks; ++i)
    tasks.push_back({{"duration", seconds}, {"outcome", o.outcome}});
  return Request{"POST", "/v1/jobs",
                 Json{{"id", o.id}, {"requestor", o.requestor}, {"task", task}, {"tasks", tasks}}};
}

OneRequest DefineJobSubmit(CLI::App& verb) {
  auto o = std::make_shared<JobSubmitOptions>();
  AddIdArgument(verb, "ID", "job id", o->id);
  verb.add_option("--requestor", o->requestor, "who asks (decides the fair-share class)")
      ->required();
  verb.add_option("--tasks", o->tasks, "number of tasks (default 1)")->check(CLI::Range(1, 100000));
  verb.add_option("--duration", o->duration,
                  "seconds each task runs in the simulated executor (default 1)");
  verb.add_option("--outcome", o->outcome, "complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  o->reserve.Add(verb);
  verb.add_option("--constraint", o->constraints.add, "placement constraint (repeatable)");
  return {[o] { return JobSubmitRequest(*o); }, PrintJobs};
}

// A simple verb of one job: METHOD /v1/jobs/ID.
SimpleVerb OnJob(const char* name, const char* help, const char* method) {
  return {name, help, [=](CLI::App& verb) {
            auto id = std::make_shared<std::string>();
            AddIdArgument(verb, "ID", "job id", *id);
            return OneRequest{[=] {
                                return Result<Request>(Request{method, "/v1/jobs/" + *id, nullptr});
                              },
                              PrintJobs};
          }};
}

}  // namespace

void AddJobCommands(CLI::App& app, Verbs& verbs) {
  CLI::App& noun = *app.add_subcommand("job", "Submit and manage batch jobs of a running berthd")
                        ->require_subcommand(1);
  verbs.AddTable(noun,
                 {{"submit", "Submit a job of identical tasks", DefineJobSubmit},
                  {"ls", "List jobs in arrival order",
                   [](CLI::App&) {
                     return OneRequest{[] { return Result<Request>(Get("/v1/jobs")); }, PrintJobs};
                   }},
                  OnJob("inspect", "Show a job and how many of its tasks are in each state", "GET"),
                  OnJob("kill", "Kill a job: its tasks stop", "DELETE")});
}

}  // namespace berth::cli
