#include "cli/client_commands.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <ostream>

#include "api/api_client.h"
#include "core/names.h"

namespace berth::cli {
namespace {

using api::Json;

// A CLI11 check by one of core/names.h's rules: what the server would refuse
// is refused here, before any request (and ids are safe in a URL path).
CLI::Validator NameRule(Status (*check)(std::string_view), const char* description) {
  return CLI::Validator(
      [check](std::string& value) {
        Status valid = check(value);
        return valid.ok() ? std::string() : valid.message();
      },
      description);
}
const CLI::Validator kIdRule = NameRule(CheckId, "ID");
const CLI::Validator kTaskIdRule = NameRule(CheckTaskId, "TASK ID");

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

std::string Text(const Json& value) {
  if (value.is_null()) return "-";
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "k=v" pairs into a labels object.
Result<Json> ParseLabels(const std::vector<std::string>& pairs) {
  Json labels = Json::object();
  for (const std::string& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--label '" + pair + "': expected KEY=VALUE");
    labels[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  return labels;
}

void PrintNodes(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& nodes = answer.contains("nodes") ? answer["nodes"] : Json::array({answer});
  for (const Json& n : nodes) {
    const Json resources = n.value("resources", Json::object());
    rows.push_back({Text(n["id"]), n.value("state", "ready"), n.value("availability", "active"),
                    Text(resources.value("cpu", Json())), Text(resources.value("memory", Json())),
                    n.value("labels", Json::object()).dump()});
  }
  PrintTable(out, {"ID", "STATE", "AVAILABILITY", "CPU", "MEMORY", "LABELS"}, rows);
}

void PrintServices(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& services = answer.contains("services") ? answer["services"] : Json::array({answer});
  for (const Json& s : services)
    rows.push_back({Text(s["id"]), s.value("mode", "replicated"), Text(s.value("replicas", Json())),
                    Text(s["spec_version"])});
  PrintTable(out, {"ID", "MODE", "REPLICAS", "VERSION"}, rows);
}

void PrintTasks(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& tasks = answer.contains("tasks") ? answer["tasks"] : Json::array({answer});
  for (const Json& t : tasks)
    rows.push_back({Text(t["id"]), Text(t.value("service", Json())), Text(t.value("state", Json())),
                    Text(t.value("node", Json())), Text(t.value("message", Json()))});
  PrintTable(out, {"ID", "SERVICE", "STATE", "NODE", "MESSAGE"}, rows);
}

void PrintJobs(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& jobs = answer.contains("jobs") ? answer["jobs"] : Json::array({answer});
  for (const Json& j : jobs)
    rows.push_back({Text(j["id"]), Text(j.value("requestor", Json())),
                    Text(j.value("tasks", Json())), j.value("killed", false) ? "killed" : "active",
                    j.contains("states") ? j["states"].dump() : "-"});
  PrintTable(out, {"ID", "REQUESTOR", "TASKS", "STATUS", "TASK STATES"}, rows);
}

void PrintClasses(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json classes = answer.value("classes", Json::object());
  for (const auto& [name, percent] : classes.items()) rows.push_back({name, percent.dump()});
  PrintTable(out, {"CLASS", "LOAD %"}, rows);
  out << "requestors: " << answer.value("requestors", Json::array()).dump() << "\n"
      << "rebalance: " << answer.value("rebalance", Json::object()).dump() << "\n";
}

// "K=V,K=V" or repeated K=V into ordered pairs.
Result<std::vector<std::pair<std::string, std::string>>> ParsePairs(
    const std::vector<std::string>& items, const std::string& flag) {
  std::vector<std::pair<std::string, std::string>> pairs;
  for (const std::string& item : items) {
    for (const std::string& pair : SplitCommas(item)) {
      const size_t eq = pair.rfind('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == pair.size())
        return Status::InvalidArgument(flag + " '" + pair + "': expected KEY=VALUE");
      pairs.emplace_back(pair.substr(0, eq), pair.substr(eq + 1));
    }
  }
  return pairs;
}

void PrintWhy(const Json& answer, std::ostream& out) {
  out << Text(answer["task"]) << " is " << Text(answer["state"]);
  if (answer.contains("node")) out << " on " << Text(answer["node"]);
  out << ": " << Text(answer["reason"]) << "\n";
}

}  // namespace

Result<ClientOptions> ResolveConnection(ClientOptions options) {
  if (options.server.empty()) options.server = EnvOr("BERTH_SERVER", "http://127.0.0.1:7480");
  if (options.data_dir.empty()) options.data_dir = EnvOr("BERTH_DATA_DIR", "berth-data");
  if (options.token.empty()) options.token = EnvOr("BERTH_TOKEN", "");
  if (options.token.empty()) {
    std::ifstream file(options.data_dir + "/token");
    std::getline(file, options.token);
    if (options.token.empty())
      return Status::InvalidArgument(
          "no API token: pass --token, set BERTH_TOKEN, or point --data-dir at "
          "berthd's data directory (cannot read " +
          options.data_dir + "/token)");
  }
  return options;
}

Result<Json> ParsePublish(const std::string& text) {
  Json port = Json::object();
  for (const std::string& pair : SplitCommas(text)) {
    const size_t eq = pair.find('=');
    const std::string key = pair.substr(0, eq),
                      value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    if (key == "target" || key == "published") {
      char* rest = nullptr;
      const long n = std::strtol(value.c_str(), &rest, 10);
      if (value.empty() || *rest != '\0')
        return Status::InvalidArgument("--publish '" + text + "': " + key +
                                       " must be a port number");
      port[key] = n;  // the range is checked by berthd with the rest of the template
    } else if (key == "mode" || key == "protocol") {
      port[key] = value;
    } else {
      return Status::InvalidArgument(
          "--publish '" + text +
          "': expected mode=, target=, published= or protocol= (comma separated)");
    }
  }
  return port;
}

void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c)
      text += c + 1 == cells.size() ? cells[c]
                                    : cells[c] + std::string(width[c] - cells[c].size() + 2, ' ');
    out << text << "\n";
  };
  line(headers);
  for (const auto& row : rows) line(row);
}

ClientCommands::ClientCommands(CLI::App& app) {
  AddNodeCommands(app);
  AddServiceCommands(app);
  AddTaskCommands(app);
  AddJobCommands(app);
  AddClassCommands(app);
}

// The task template of --reserve-cpu, --reserve-memory and --constraint.
api::Json ClientCommands::TaskTemplate() const {
  Json task = Json::object();
  if (!cpu_.empty()) task["resources"]["cpu"] = cpu_;
  if (!memory_.empty()) task["resources"]["memory"] = memory_;
  if (!constraints_.empty()) task["constraints"] = constraints_;
  return task;
}

CLI::App* ClientCommands::AddLeaf(CLI::App& parent, const char* name, const char* help,
                                  std::function<Result<Request>()> build, Printer print) {
  CLI::App* command = parent.add_subcommand(name, help);
  AddConnectionOptions(*command);
  command->callback([this, build = std::move(build), print] {
    request_ = build;
    print_ = print;
  });
  return command;
}

void ClientCommands::AddConnectionOptions(CLI::App& command) {
  command.add_option("--server", options_.server,
                     "berthd's address (default $BERTH_SERVER or http://127.0.0.1:7480)");
  command.add_option("--token", options_.token,
                     "API token (default $BERTH_TOKEN or the data directory's token file)");
  command.add_option(
      "--data-dir", options_.data_dir,
      "berthd's data directory, for its token (default $BERTH_DATA_DIR or ./berth-data)");
  command.add_option("-o,--output", options_.output, "output format")
      ->check(CLI::IsMember({"table", "json"}));
}

void ClientCommands::AddNodeCommands(CLI::App& app) {
  CLI::App* node =
      app.add_subcommand("node", "Manage nodes of a running berthd")->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build) {
    return AddLeaf(*node, name, help, build, PrintNodes);
  };
  leaf("ls", "List nodes", [] { return Result<Request>(Request{"GET", "/v1/nodes", nullptr}); });
  CLI::App* add = leaf("add", "Register a node", [this]() -> Result<Request> {
    Json body = {{"id", id_}};
    if (!hostname_.empty()) body["hostname"] = hostname_;
    if (!cpu_.empty()) body["resources"]["cpu"] = cpu_;
    if (!memory_.empty()) body["resources"]["memory"] = memory_;
    Result<Json> labels = ParseLabels(labels_);
    if (!labels.ok()) return labels.status();
    if (!labels->empty()) body["labels"] = *labels;
    return Request{"POST", "/v1/nodes", body};
  });
  add->add_option("ID", id_, "node id")->check(kIdRule)->required();
  add->add_option("--hostname", hostname_, "host name");
  add->add_option("--cpu", cpu_, "CPUs (4, 0.5, 500m)");
  add->add_option("--memory", memory_, "memory (8Gi, 512Mi, bytes)");
  add->add_option("--label", labels_, "a node label KEY=VALUE (repeatable)");
  CLI::App* update =
      leaf("update", "Change a node's state, availability or labels", [this]() -> Result<Request> {
        Json body = Json::object();
        if (!state_.empty()) body["state"] = state_;
        if (!availability_.empty()) body["availability"] = availability_;
        Result<Json> labels = ParseLabels(labels_);
        if (!labels.ok()) return labels.status();
        if (!labels->empty()) body["labels"] = *labels;
        return Request{"PATCH", "/v1/nodes/" + id_, body};
      });
  update->add_option("ID", id_, "node id")->check(kIdRule)->required();
  update->add_option("--state", state_, "ready | down | disconnected | unknown");
  update->add_option("--availability", availability_, "active | pause | drain");
  update->add_option("--label", labels_,
                     "replace the labels with these KEY=VALUE pairs (repeatable)");
  leaf("inspect", "Show one node",
       [this] {
         return Result<Request>(Request{"GET", "/v1/nodes/" + id_, nullptr});
       })
      ->add_option("ID", id_, "node id")
      ->check(kIdRule)
      ->required();
  leaf("drain", "Stop placing tasks on a node",
       [this] {
         return Result<Request>(Request{"POST", "/v1/nodes/" + id_ + "/drain", nullptr});
       })
      ->add_option("ID", id_, "node id")
      ->check(kIdRule)
      ->required();
  leaf("rm", "Remove a node (its tasks are replaced elsewhere)",
       [this] {
         return Result<Request>(Request{"DELETE", "/v1/nodes/" + id_, nullptr});
       })
      ->add_option("ID", id_, "node id")
      ->check(kIdRule)
      ->required();
}

void ClientCommands::AddServiceCommands(CLI::App& app) {
  CLI::App* service =
      app.add_subcommand("service", "Manage services of a running berthd")->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build) {
    return AddLeaf(*service, name, help, build, PrintServices);
  };
  CLI::App* create = leaf("create", "Create a service", [this]() -> Result<Request> {
    Json task = TaskTemplate();
    for (const std::string& p : preferences_) {
      if (!p.starts_with("spread="))
        return Status::InvalidArgument("--placement-pref '" + p +
                                       "': expected spread=node.labels.KEY");
      task["preferences"].push_back({{"spread", p.substr(7)}});
    }
    for (const std::string& p : publish_) {
      Result<Json> port = ParsePublish(p);
      if (!port.ok()) return port.status();
      task["ports"].push_back(*port);
    }
    Json body = {{"id", id_}, {"mode", mode_}, {"task", task}};
    if (!run_duration_.empty()) {
      char* rest = nullptr;
      const double seconds = std::strtod(run_duration_.c_str(), &rest);
      if (*rest != '\0' || !(seconds >= 0))
        return Status::InvalidArgument("--run-duration '" + run_duration_ + "': expected seconds");
      body["run"] = {{"duration", seconds}, {"outcome", outcome_}};
    }
    if (replicas_ >= 0)
      body["replicas"] = replicas_;
    else if (mode_ == "replicated")
      body["replicas"] = 1;
    return Request{"POST", "/v1/services", body};
  });
  create->add_option("ID", id_, "service id")->check(kIdRule)->required();
  create->add_option("--replicas", replicas_, "number of tasks (replicated mode; default 1)");
  create->add_option("--mode", mode_, "replicated | global")
      ->check(CLI::IsMember({"replicated", "global"}));
  create->add_option("--constraint", constraints_,
                     "placement constraint, e.g. node.labels.az==a (repeatable)");
  create->add_option("--placement-pref", preferences_,
                     "spread=node.labels.KEY (repeatable, highest first)");
  create->add_option("--reserve-cpu", cpu_, "CPUs reserved per task (0.5, 500m)");
  create->add_option("--reserve-memory", memory_, "memory reserved per task (512Mi)");
  create->add_option("--publish", publish_,
                     "mode=host,target=80,published=8080[,protocol=tcp] (repeatable)");
  create->add_option(
      "--run-duration", run_duration_,
      "simulated executor: each task ends after this many seconds (default: runs until stopped)");
  create
      ->add_option("--run-outcome", outcome_, "simulated executor: how tasks end, complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  leaf("ls", "List services", [] {
    return Result<Request>(Request{"GET", "/v1/services", nullptr});
  });
  leaf("inspect", "Show one service",
       [this] {
         return Result<Request>(Request{"GET", "/v1/services/" + id_, nullptr});
       })
      ->add_option("ID", id_, "service id")
      ->check(kIdRule)
      ->required();
  leaf("scale", "Set a replicated service's replica count: SERVICE=N",
       [this]() -> Result<Request> {
         const size_t eq = id_.find('=');
         char* rest = nullptr;
         const long n = eq == std::string::npos ? -1 : std::strtol(id_.c_str() + eq + 1, &rest, 10);
         if (eq == std::string::npos || eq == 0 || n < 0 || *rest != '\0')
           return Status::InvalidArgument("expected SERVICE=REPLICAS, e.g. web=5, got " +
                                          Quoted(id_));
         if (Status valid = CheckId(id_.substr(0, eq)); !valid.ok())
           return Status::InvalidArgument("SERVICE: " + valid.message());
         return Request{"PATCH", "/v1/services/" + id_.substr(0, eq), Json{{"replicas", n}}};
       })
      ->add_option("SERVICE=N", id_, "service and replica count")
      ->required();
  leaf("rm", "Remove a service (its tasks stop)",
       [this] {
         return Result<Request>(Request{"DELETE", "/v1/services/" + id_, nullptr});
       })
      ->add_option("ID", id_, "service id")
      ->check(kIdRule)
      ->required();
}

void ClientCommands::AddTaskCommands(CLI::App& app) {
  CLI::App* task =
      app.add_subcommand("task", "Inspect tasks of a running berthd")->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build, auto print) {
    return AddLeaf(*task, name, help, build, print);
  };
  leaf(
      "ls", "List tasks",
      [this] {
        return Result<Request>(Request{
            "GET", "/v1/tasks" + (service_filter_.empty() ? "" : "?service=" + service_filter_),
            nullptr});
      },
      PrintTasks)
      ->add_option("--service", service_filter_, "only the tasks of this service")
      ->check(kIdRule);
  leaf(
      "inspect", "Show one task",
      [this] {
        return Result<Request>(Request{"GET", "/v1/tasks/" + id_, nullptr});
      },
      PrintTasks)
      ->add_option("ID", id_, "task id")
      ->check(kTaskIdRule)
      ->required();
  leaf(
      "why", "Explain why a task is where it is, or why it is not running",
      [this] {
        return Result<Request>(Request{"GET", "/v1/tasks/" + id_ + "/why", nullptr});
      },
      PrintWhy)
      ->add_option("ID", id_, "task id")
      ->check(kTaskIdRule)
      ->required();
}

void ClientCommands::AddJobCommands(CLI::App& app) {
  CLI::App* job = app.add_subcommand("job", "Submit and manage batch jobs of a running berthd")
                      ->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build) {
    return AddLeaf(*job, name, help, build, PrintJobs);
  };
  CLI::App* submit = leaf("submit", "Submit a job of identical tasks", [this]() -> Result<Request> {
    Json task = TaskTemplate();
    char* rest = nullptr;
    const double seconds = std::strtod(duration_.c_str(), &rest);
    if (duration_.empty() || *rest != '\0' || !(seconds >= 0))
      return Status::InvalidArgument("--duration '" + duration_ + "': expected seconds");
    Json tasks = Json::array();
    for (int64_t i = 0; i < count_; ++i)
      tasks.push_back({{"duration", seconds}, {"outcome", outcome_}});
    return Request{"POST", "/v1/jobs",
                   Json{{"id", id_}, {"requestor", requestor_}, {"task", task}, {"tasks", tasks}}};
  });
  submit->add_option("ID", id_, "job id")->check(kIdRule)->required();
  submit->add_option("--requestor", requestor_, "who asks (decides the fair-share class)")
      ->required();
  submit->add_option("--tasks", count_, "number of tasks (default 1)")
      ->check(CLI::Range(1, 100000));
  submit->add_option("--duration", duration_,
                     "seconds each task runs in the simulated executor (default 1)");
  submit->add_option("--outcome", outcome_, "complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  submit->add_option("--reserve-cpu", cpu_, "CPUs reserved per task");
  submit->add_option("--reserve-memory", memory_, "memory reserved per task");
  submit->add_option("--constraint", constraints_, "placement constraint (repeatable)");
  leaf("ls", "List jobs in arrival order", [] {
    return Result<Request>(Request{"GET", "/v1/jobs", nullptr});
  });
  leaf("inspect", "Show a job and how many of its tasks are in each state",
       [this] {
         return Result<Request>(Request{"GET", "/v1/jobs/" + id_, nullptr});
       })
      ->add_option("ID", id_, "job id")
      ->check(kIdRule)
      ->required();
  leaf("kill", "Kill a job: its tasks stop",
       [this] {
         return Result<Request>(Request{"DELETE", "/v1/jobs/" + id_, nullptr});
       })
      ->add_option("ID", id_, "job id")
      ->check(kIdRule)
      ->required();
}

void ClientCommands::AddClassCommands(CLI::App& app) {
  CLI::App* cls =
      app.add_subcommand("class", "Fair-share classes of a running berthd")->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build) {
    return AddLeaf(*cls, name, help, build, PrintClasses);
  };
  leaf("get", "Show the class load percents, requestor map and rebalance settings", [] {
    return Result<Request>(Request{"GET", "/v1/classes", nullptr});
  });
  CLI::App* set =
      leaf("set", "Change any of the parameters (the others stay)", [this]() -> Result<Request> {
        Json patch = Json::object();
        auto percents = ParsePairs(percents_, "--percents");
        if (!percents.ok()) return percents.status();
        for (const auto& [name, value] : *percents) {
          char* rest = nullptr;
          const long n = std::strtol(value.c_str(), &rest, 10);
          if (*rest != '\0')
            return Status::InvalidArgument("--percents '" + name + "=" + value +
                                           "': expected an integer");
          patch["classes"][name] = n;
        }
        auto rules = ParsePairs(requestors_, "--requestor");
        if (!rules.ok()) return rules.status();
        for (const auto& [pattern, name] : *rules)
          patch["requestors"].push_back(Json::array({pattern, name}));
        if (!threshold_.empty() || !min_duration_.empty()) {
          patch["rebalance"] = Json::object();
          if (!threshold_.empty())
            patch["rebalance"]["threshold"] = std::strtol(threshold_.c_str(), nullptr, 10);
          if (!min_duration_.empty())
            patch["rebalance"]["min_duration_s"] = std::strtod(min_duration_.c_str(), nullptr);
        }
        if (patch.empty())
          return Status::InvalidArgument(
              "nothing to set: give --percents, --requestor or --rebalance-*");
        return Request{"PATCH", "/v1/classes", patch};
      });
  set->add_option("--percents", percents_,
                  "class load percents CLASS=N[,CLASS=N...] (replaces all classes)");
  set->add_option("--requestor", requestors_,
                  "PATTERN=CLASS, in match order (repeatable; replaces the map)");
  set->add_option("--rebalance-threshold", threshold_,
                  "spread (in points) that starts the rebalance timer; 0: off")
      ->check(CLI::Number);
  set->add_option("--rebalance-min-duration", min_duration_,
                  "seconds the spread must stay over the threshold; 0: off")
      ->check(CLI::Number);
}

int ClientCommands::Run(std::ostream& out, std::ostream& err) const {
  Result<Request> request = request_();
  if (!request.ok()) {
    err << "berth: " << request.status().message() << "\n";
    return 2;
  }
  Result<ClientOptions> connection = ResolveConnection(options_);
  if (!connection.ok()) {
    err << "berth: " << connection.status().message() << "\n";
    return 2;
  }
  api::ApiClient client(connection->server, connection->token);
  Result<Json> answer = client.Call(request->method, request->path, request->body);
  if (!answer.ok()) {
    err << "berth: " << answer.status().message() << "\n";
    return 1;
  }
  if (connection->output == "json")
    out << answer->dump(2) << "\n";
  else if (answer->contains("removed"))
    out << "removed " << Text((*answer)["removed"]) << "\n";
  else
    print_(*answer, out);
  return 0;
}

}  // namespace berth::cli
