#include "cli/client_commands.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "api/api_client.h"
#include "cli/task_table.h"
#include "core/names.h"
#include "core/time.h"

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

// `node inspect`: one node, field by field, with what its tasks reserve
// and, for a berth-node machine, its executor and whether limits hold.
void PrintNodeDetail(const Json& n, std::ostream& out) {
  auto resources = [](const Json& r) {
    return "cpu " + Text(r.value("cpu", Json("0"))) + ", memory " +
           Text(r.value("memory", Json(0)));
  };
  std::vector<std::vector<std::string>> rows = {
      {"ID:", Text(n["id"])},
      {"Hostname:", n.value("hostname", "")},
      {"State:", n.value("state", "ready")},
      {"Availability:", n.value("availability", "active")},
      {"Resources:", resources(n.value("resources", Json::object()))},
      {"Allocated:", resources(n.value("allocated", Json::object())) + " (" +
                         Text(n.value("tasks", Json(0))) + " tasks)"},
      {"Free:", resources(n.value("free", Json::object()))},
      {"Labels:", n.value("labels", Json::object()).dump()},
      {"Engine labels:", n.value("engine_labels", Json::object()).dump()}};
  if (const Json p = n.value("platform", Json::object()); !p.empty())
    rows.insert(rows.begin() + 4, {"Platform:", p.value("os", "") + "/" + p.value("arch", "")});
  if (n.contains("berth_node")) {
    const Json& b = n["berth_node"];
    rows.push_back({"Executor:", "berth-node " + b.value("version", "") + ", logs at " +
                                     b.value("endpoint", "")});
    rows.push_back({"Limits:", b.value("limits_enforced", false)
                                   ? "enforced (cgroup v2)"
                                   : "NOT enforced: " + b.value("limits", "")});
  } else {
    rows.push_back({"Executor:", "simulated"});
  }
  for (const auto& row : rows)
    out << row[0] << std::string(16 - row[0].size(), ' ') << row[1] << "\n";
}

void PrintServices(const Json& answer, std::ostream& out) {
  std::vector<std::vector<std::string>> rows;
  const Json& services = answer.contains("services") ? answer["services"] : Json::array({answer});
  for (const Json& s : services)
    rows.push_back({Text(s["id"]), s.value("mode", "replicated"), Text(s.value("replicas", Json())),
                    Text(s["spec_version"])});
  PrintTable(out, {"ID", "MODE", "REPLICAS", "VERSION"}, rows);
}

void PrintTasks(const Json& answer, std::ostream& out) { PrintTaskTable(answer, {}, out); }

// `?k=v&...` of the non-empty values.
std::string Query(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string query;
  for (const auto& [key, value] : params)
    if (!value.empty()) query += (query.empty() ? "?" : "&") + std::string(key) + "=" + value;
  return query;
}

// Calls berthd; on failure prints "berth: <reason>" and returns nullopt.
std::optional<Json> CallOrSay(api::ApiClient& client, const std::string& method,
                              const std::string& path, const Json& body, std::ostream& err) {
  Result<Json> answer = client.Call(method, path, body);
  if (answer.ok()) return std::move(*answer);
  err << "berth: " << answer.status().message() << "\n";
  return std::nullopt;
}

// "a b  c" -> {"a", "b", "c"}.
std::vector<std::string> SplitSpaces(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// "SERVICE=N" -> (service, n).
Result<std::pair<std::string, int64_t>> ParseScale(const std::string& text) {
  const size_t eq = text.find('=');
  char* rest = nullptr;
  const long n = eq == std::string::npos ? -1 : std::strtol(text.c_str() + eq + 1, &rest, 10);
  if (eq == std::string::npos || eq == 0 || n < 0 || *rest != '\0')
    return Status::InvalidArgument("expected SERVICE=REPLICAS, e.g. web=5, got " + Quoted(text));
  if (Status valid = CheckId(text.substr(0, eq)); !valid.ok())
    return Status::InvalidArgument("SERVICE: " + valid.message());
  return std::make_pair(text.substr(0, eq), static_cast<int64_t>(n));
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
  if (answer.contains("name"))
    out << Text(answer["name"]) << " (" << Text(answer["task"]) << ")";
  else
    out << Text(answer["task"]);
  out << " is " << Text(answer["state"]);
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

Result<Json> ParsePlacementPref(const std::string& text) {
  const size_t eq = text.find('=');
  const std::string kind = text.substr(0, eq == std::string::npos ? 0 : eq),
                    rest = eq == std::string::npos ? "" : text.substr(eq + 1);
  const auto invalid = [&](const std::string& why) {
    return Status::InvalidArgument("--placement-pref '" + text + "': " + why);
  };
  if ((kind != "spread" && kind != "pack" && kind != "prefer") || rest.empty())
    return invalid(
        "expected spread=DESCRIPTOR[:VALUE=WEIGHT,...], pack=DESCRIPTOR or prefer=CONSTRAINT");
  if (kind == "prefer") return Json{{"prefer", rest}};
  const size_t colon = rest.find(':');
  Json preference = {{kind, rest.substr(0, colon)}};
  if (colon == std::string::npos) return preference;
  if (kind != "spread") return invalid("only spread takes weights");
  for (const std::string& pair : SplitCommas(rest.substr(colon + 1))) {
    const size_t at = pair.find('=');
    char* end = nullptr;
    const bool digits = at != std::string::npos && at > 0 && at + 1 < pair.size() &&
                        std::isdigit(static_cast<unsigned char>(pair[at + 1]));
    const long weight = digits ? std::strtol(pair.c_str() + at + 1, &end, 10) : -1;
    if (!digits || *end != '\0')
      return invalid("expected VALUE=WEIGHT (a whole number) after ':', got '" + pair + "'");
    const std::string value = pair.substr(0, at);
    if (preference.contains("weights") && preference["weights"].contains(value))
      return invalid("'" + value + "' is given two weights");
    preference["weights"][value] = weight;
  }
  return preference;
}

Result<Json> ParseAffinity(const std::string& text) {
  const size_t op = text.find_first_of("=!");
  if (op == std::string::npos || text.substr(0, op) != "service" || text.size() < op + 3 ||
      text[op + 1] != '=')
    return Status::InvalidArgument("--affinity '" + text +
                                   "': expected service==ID, service!=ID, service==~ID or "
                                   "service!=~ID");
  const bool soft = text[op + 2] == '~';
  Json affinity = {{"service", text.substr(op + (soft ? 3 : 2))}};
  if (text[op] == '!') affinity["anti"] = true;
  if (soft) affinity["soft"] = true;
  return affinity;
}

Result<Json> ParsePublish(const std::string& text) {
  Json port = Json::object();
  if (text.find('=') == std::string::npos && text.find(':') != std::string::npos) {
    // Docker's short form PUBLISHED:TARGET[/PROTOCOL].
    const size_t colon = text.find(':'), slash = text.find('/');
    const std::string published = text.substr(0, colon),
                      target =
                          text.substr(colon + 1, slash == std::string::npos ? std::string::npos
                                                                            : slash - colon - 1);
    for (const auto& [key, value] : {std::pair{"published", published}, {"target", target}}) {
      char* rest = nullptr;
      const long n = std::strtol(value.c_str(), &rest, 10);
      if (value.empty() || *rest != '\0')
        return Status::InvalidArgument("--publish '" + text +
                                       "': expected PUBLISHED:TARGET[/tcp|udp|sctp]");
      port[key] = n;
    }
    if (slash != std::string::npos) port["protocol"] = text.substr(slash + 1);
    return port;
  }
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
  AddTokenCommands(app);
}

// The node join token, as `docker swarm join-token worker` shows it.
void ClientCommands::AddTokenCommands(CLI::App& app) {
  CLI::App* token =
      app.add_subcommand("token", "Show or rotate the token berth-node machines join with")
          ->require_subcommand(1);
  auto print = [](const Json& answer, std::ostream& out) { out << Text(answer["token"]) << "\n"; };
  AddLeaf(
      *token, "show", "Print the node join token (berth-node --token-file)",
      [this]() -> Result<Request> {
        return Request{"GET", "/v1/tokens/" + kind_, nullptr};
      },
      print)
      ->add_option("KIND", kind_, "node")
      ->check(CLI::IsMember({"node"}))
      ->required();
  AddLeaf(
      *token, "rotate",
      "Replace the node join token (nodes that joined keep working; new ones need the new "
      "token)",
      [this]() -> Result<Request> {
        return Request{"POST", "/v1/tokens/" + kind_ + "/rotate", nullptr};
      },
      print)
      ->add_option("KIND", kind_, "node")
      ->check(CLI::IsMember({"node"}))
      ->required();
}

// --env, --workdir, --stop-grace-period and --limit-*: how a berth-node runs
// the tasks; COMMAND sets them all, the flags without it are refused by berthd.
Status ClientCommands::AddProcessFlags(Json* task) const {
  if (!command_.empty()) {
    (*task)["command"] = command_[0];
    if (command_.size() > 1)
      (*task)["args"] = std::vector<std::string>(command_.begin() + 1, command_.end());
    else
      task->erase("args");
  }
  std::vector<std::string> env = task->value("env", std::vector<std::string>());
  for (const std::string& name : env_rm_)
    if (std::erase_if(env,
                      [&](const std::string& e) { return e.substr(0, e.find('=')) == name; }) == 0)
      return Status::InvalidArgument("--env-rm '" + name + "': the service sets no such variable");
  for (const std::string& e : env_add_.empty() ? env_ : env_add_) {
    std::erase_if(env, [&](const std::string& old) {
      return old.substr(0, old.find('=')) == e.substr(0, e.find('='));
    });
    env.push_back(e);
  }
  if (env.empty())
    task->erase("env");
  else
    (*task)["env"] = env;
  if (!workdir_.empty()) (*task)["workdir"] = workdir_;
  if (!stop_grace_period_.empty()) (*task)["stop_grace_period"] = stop_grace_period_;
  if (!limit_cpu_.empty()) (*task)["limits"]["cpu"] = limit_cpu_;
  if (!limit_memory_.empty()) (*task)["limits"]["memory"] = limit_memory_;
  return Status::Ok();
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

CLI::App* ClientCommands::AddAction(CLI::App& parent, const char* name, const char* help,
                                    Action action) {
  CLI::App* command = parent.add_subcommand(name, help);
  AddConnectionOptions(*command);
  command->callback([this, action = std::move(action)] { action_ = action; });
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
  CLI::App* update = AddAction(
      *node, "update", "Change a node's state, availability or labels",
      [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
        Json body = Json::object();
        if (!state_.empty()) body["state"] = state_;
        if (!availability_.empty()) body["availability"] = availability_;
        Result<Json> labels = ParseLabels(labels_);
        Result<Json> added = ParseLabels(label_add_);
        for (const Result<Json>* parsed : {&labels, &added})
          if (!parsed->ok()) {
            err << "berth: " << parsed->status().message() << "\n";
            return 2;
          }
        if (!labels->empty()) body["labels"] = *labels;
        if (!label_add_.empty() || !label_rm_.empty()) {
          // --label-add / --label-rm edit the node's labels as they are now.
          std::optional<Json> current = CallOrSay(client, "GET", "/v1/nodes/" + id_, nullptr, err);
          if (!current) return 1;
          Json edited = body.value("labels", current->value("labels", Json::object()));
          for (const std::string& key : label_rm_) {
            if (edited.erase(key) == 0) {
              err << "berth: --label-rm '" << key << "': node " << id_ << " has no such label\n";
              return 1;
            }
          }
          edited.update(*added);
          body["labels"] = edited;
        }
        if (body.empty()) {
          err << "berth: nothing to update: give --state, --availability or a label flag\n";
          return 2;
        }
        std::optional<Json> answer = CallOrSay(client, "PATCH", "/v1/nodes/" + id_, body, err);
        if (!answer) return 1;
        if (options_.output == "json")
          out << answer->dump(2) << "\n";
        else
          PrintNodes(*answer, out);
        return 0;
      });
  update->add_option("ID", id_, "node id")->check(kIdRule)->required();
  update->add_option("--state", state_, "ready | down | disconnected | unknown");
  update->add_option("--availability", availability_, "active | pause | drain");
  update->add_option("--label", labels_,
                     "replace the labels with these KEY=VALUE pairs (repeatable)");
  update->add_option("--label-add", label_add_, "add or change a label KEY=VALUE (repeatable)");
  update->add_option("--label-rm", label_rm_, "remove a label KEY (repeatable)");
  CLI::App* ps = AddAction(*node, "ps", "List the tasks on a node",
                           [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
                             return PrintTasksOf(client, "/v1/tasks?node=" + id_, out, err);
                           });
  ps->add_option("NODE", id_, "node id")->check(kIdRule)->required();
  ps->add_flag("--no-trunc", no_trunc_, "do not cut messages");
  ps->add_option("-f,--filter", filters_, "desired-state=running|shutdown|complete");
  AddLeaf(
      *node, "inspect", "Show one node: resources, what its tasks reserve, its executor",
      [this] {
        return Result<Request>(Request{"GET", "/v1/nodes/" + id_, nullptr});
      },
      PrintNodeDetail)
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

// The task template flags shared by create and update.
void AddTemplateFlags(CLI::App& command, std::string& cpu, std::string& memory) {
  command.add_option("--reserve-cpu", cpu, "CPUs reserved per task (0.5, 500m)");
  command.add_option("--reserve-memory", memory, "memory reserved per task (512Mi)");
}

void ClientCommands::AddServiceCommands(CLI::App& app) {
  CLI::App* service =
      app.add_subcommand("service", "Manage services of a running berthd")->require_subcommand(1);
  auto add_restart_flags = [this](CLI::App& command) {
    command
        .add_option("--restart-condition", restart_condition_,
                    "restart when a task ends: none | on-failure | any (default any)")
        ->check(CLI::IsMember({"none", "on-failure", "any"}));
    command.add_option("--restart-delay", restart_delay_,
                       "delay before a task is restarted (default 5s)");
    command
        .add_option("--restart-max-attempts", restart_max_attempts_,
                    "restarts of a slot within the window before giving up (default 0: no limit)")
        ->check(CLI::NonNegativeNumber);
    command.add_option("--restart-window", restart_window_,
                       "window the attempts are counted in (default 0s: the slot's life)");
  };
  auto add_rollout_flags = [this](CLI::App& command) {
    for (auto [prefix, flags] :
         {std::pair{"update", &update_flags_}, {"rollback", &rollback_flags_}}) {
      const std::string p = std::string("--") + prefix + "-";
      const std::string what = std::string(prefix) == "update" ? "an update" : "a rollback";
      command.add_option(p + "parallelism", (*flags)["parallelism"],
                         "tasks " + what + " replaces at once (0: all; default 1)");
      command.add_option(p + "delay", (*flags)["delay"], "delay between batches (default 0s)");
      command.add_option(p + "failure-action", (*flags)["failure_action"],
                         std::string(prefix) == "update"
                             ? "on failure: pause | continue | rollback (default pause)"
                             : "on failure: pause | continue (default pause)");
      command.add_option(p + "monitor", (*flags)["monitor"],
                         "how long a new task must run to count as updated (default 5s)");
      command.add_option(p + "max-failure-ratio", (*flags)["max_failure_ratio"],
                         "failures tolerated, as a fraction of the tasks updated (default 0)");
      command.add_option(p + "order", (*flags)["order"],
                         "stop-first | start-first (default stop-first)");
    }
    command
        .add_option("--rebalance", rebalance_,
                    "manual | on-join: also rebalance when a node joins (default manual)")
        ->check(CLI::IsMember({"manual", "on-join"}));
  };
  auto add_process_flags = [this](CLI::App& command, bool update) {
    if (update) {
      command.add_option("--env-add", env_add_, "add or change a variable NAME=value (repeatable)");
      command.add_option("--env-rm", env_rm_, "remove a variable NAME (repeatable)");
    } else {
      command.add_option("-e,--env", env_, "an environment variable NAME=value (repeatable)");
    }
    command.add_option("-w,--workdir", workdir_, "the tasks' working directory (absolute)");
    command.add_option("--stop-grace-period", stop_grace_period_,
                       "time between SIGTERM and SIGKILL when a task is stopped (default 10s)");
    command.add_option(
        "--limit-cpu", limit_cpu_,
        "CPU limit per task (0.5, 500m), enforced on nodes with a delegated cgroup v2");
    command.add_option(
        "--limit-memory", limit_memory_,
        "memory limit per task (512Mi), enforced on nodes with a delegated cgroup v2");
  };
  auto add_wait_flags = [this](CLI::App& command) {
    command.add_flag("-d,--detach", detach_, "return at once instead of waiting to converge");
    command.add_option("--timeout", wait_timeout_, "seconds to wait to converge (default 60)")
        ->check(CLI::PositiveNumber);
  };
  CLI::App* create =
      AddAction(*service, "create", "Create a service and wait for it to converge",
                [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
                  Json task = TaskTemplate();
                  if (Status placement = UpdatePlacement(&task); !placement.ok()) {
                    err << "berth: " << placement.message() << "\n";
                    return 2;
                  }
                  for (const std::string& p : publish_) {
                    Result<Json> port = ParsePublish(p);
                    if (!port.ok()) {
                      err << "berth: " << port.status().message() << "\n";
                      return 2;
                    }
                    task["ports"].push_back(*port);
                  }
                  if (Status process = AddProcessFlags(&task); !process.ok()) {
                    err << "berth: " << process.message() << "\n";
                    return 2;
                  }
                  Json body = {{"id", id_}, {"mode", mode_}, {"task", task}};
                  if (!run_duration_.empty()) {
                    char* rest = nullptr;
                    const double seconds = std::strtod(run_duration_.c_str(), &rest);
                    if (*rest != '\0' || !(seconds >= 0)) {
                      err << "berth: --run-duration '" << run_duration_ << "': expected seconds\n";
                      return 2;
                    }
                    body["run"] = {{"duration", seconds}, {"outcome", outcome_}};
                  }
                  if (Status lifecycle = AddLifecycleFlags(&body); !lifecycle.ok()) {
                    err << "berth: " << lifecycle.message() << "\n";
                    return 2;
                  }
                  if (replicas_ >= 0)
                    body["replicas"] = replicas_;
                  else if (mode_ == "replicated")
                    body["replicas"] = 1;
                  if (!CallOrSay(client, "POST", "/v1/services", body, err)) return 1;
                  out << id_ << "\n";
                  return WaitForService(client, id_, out, err);
                });
  create->add_option("ID", id_, "service id")->check(kIdRule)->required();
  create->add_option("--replicas", replicas_, "number of tasks (replicated mode; default 1)");
  create->add_option("--mode", mode_, "replicated | global")
      ->check(CLI::IsMember({"replicated", "global"}));
  create->add_option("--constraint", constraints_,
                     "placement constraint, e.g. node.labels.az==a (repeatable)");
  create->add_option("--placement-pref", preferences_,
                     "spread=DESCRIPTOR[:VALUE=WEIGHT,...,*=WEIGHT], pack=DESCRIPTOR or "
                     "prefer=CONSTRAINT; DESCRIPTOR node.labels.KEY, engine.labels.KEY or node.id "
                     "(repeatable, highest first)");
  create->add_option("--affinity", affinity_,
                     "service==ID: run where service ID has a task; service!=ID: where it has "
                     "none (the service's own id: one task per node); ==~ and !=~: preferred, "
                     "not required (repeatable)");
  AddTemplateFlags(*create, cpu_, memory_);
  create->add_option("--publish", publish_,
                     "8080:80[/udp], or mode=host,target=80,published=8080[,protocol=tcp] "
                     "(repeatable)");
  create->add_option(
      "--run-duration", run_duration_,
      "simulated executor: each task ends after this many seconds (default: runs until stopped)");
  create
      ->add_option("--run-outcome", outcome_, "simulated executor: how tasks end, complete | fail")
      ->check(CLI::IsMember({"complete", "fail"}));
  add_process_flags(*create, false);
  create->add_option("COMMAND", command_,
                     "the program and its arguments, after --, run by a berth-node machine "
                     "(default: none, the simulated executor runs the tasks)");
  add_restart_flags(*create);
  add_rollout_flags(*create);
  add_wait_flags(*create);

  CLI::App* update = AddAction(
      *service, "update", "Change a service and wait for it to converge",
      [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
        std::optional<Json> current = CallOrSay(client, "GET", "/v1/services/" + id_, nullptr, err);
        if (!current) return 1;
        Result<Json> body = UpdateBody(*current);
        if (!body.ok()) {
          err << "berth: " << body.status().message() << "\n";
          return 2;
        }
        if (!CallOrSay(client, "PATCH", "/v1/services/" + id_, *body, err)) return 1;
        out << id_ << "\n";
        return WaitForService(client, id_, out, err);
      });
  update->add_option("ID", id_, "service id")->check(kIdRule)->required();
  update->add_option("--replicas", replicas_, "number of tasks (replicated mode)");
  AddTemplateFlags(*update, cpu_, memory_);
  update->add_option("--constraint-add", constraint_add_,
                     "add a placement constraint (repeatable)");
  update->add_option("--constraint-rm", constraint_rm_,
                     "remove a placement constraint (repeatable)");
  update->add_option("--placement-pref-add", preferences_,
                     "add a placement preference, as create's --placement-pref (repeatable)");
  update->add_option("--placement-pref-rm", preference_rm_,
                     "remove a placement preference, written as it was added (repeatable)");
  update->add_option("--affinity-add", affinity_,
                     "add an affinity, as create's --affinity (repeatable)");
  update->add_option("--affinity-rm", affinity_rm_,
                     "remove an affinity, written as it was added (repeatable)");
  update->add_flag("--force", force_, "replace every task even if nothing else changed");
  add_process_flags(*update, true);
  update->add_option("--args", command_args_,
                     "replace the command's arguments (one string, split at spaces)");
  add_restart_flags(*update);
  add_rollout_flags(*update);
  add_wait_flags(*update);
  // POST /v1/services/ID/<action>, then wait for the service to converge.
  auto add_post_and_wait = [&](const char* action, const char* help) {
    CLI::App* command = AddAction(
        *service, action, help,
        [this, action](api::ApiClient& client, std::ostream& out, std::ostream& err) {
          if (!CallOrSay(client, "POST", "/v1/services/" + id_ + "/" + action, nullptr, err))
            return 1;
          out << id_ << "\n";
          return WaitForService(client, id_, out, err);
        });
    command->add_option("ID", id_, "service id")->check(kIdRule)->required();
    add_wait_flags(*command);
  };
  add_post_and_wait("rollback", "Return a service to its previous template and wait for it");
  add_post_and_wait(
      "rebalance",
      "Move tasks towards the spread the engine would choose now, as a rolling update, and wait");
  CLI::App* logs =
      AddAction(*service, "logs", "Show the output of every task of a service, merged in time",
                [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
                  return PrintServiceLogs(client, id_, logs_, out, err);
                });
  logs->add_option("SERVICE", id_, "service id")->check(kIdRule)->required();
  AddLogsFlags(*logs);

  AddAction(
      *service, "ls", "List services with their running and desired tasks",
      [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
        std::optional<Json> services = CallOrSay(client, "GET", "/v1/services", nullptr, err);
        if (!services) return 1;
        if (options_.output == "json") {
          out << services->dump(2) << "\n";
          return 0;
        }
        std::vector<std::vector<std::string>> rows;
        for (const Json& s : (*services)["services"]) {
          const std::string id = s["id"];
          std::optional<Json> tasks =
              CallOrSay(client, "GET", "/v1/tasks?service=" + id, nullptr, err);
          if (!tasks) return 1;
          const ServiceProgress progress = ProgressOf(s, *tasks);
          rows.push_back({id, s.value("mode", "replicated"),
                          std::to_string(progress.running) + "/" + std::to_string(progress.desired),
                          Text(s["spec_version"])});
        }
        PrintTable(out, {"ID", "MODE", "REPLICAS", "VERSION"}, rows);
        return 0;
      });
  AddLeaf(
      *service, "inspect", "Show one service",
      [this] {
        return Result<Request>(Request{"GET", "/v1/services/" + id_, nullptr});
      },
      PrintServices)
      ->add_option("ID", id_, "service id")
      ->check(kIdRule)
      ->required();
  CLI::App* ps =
      AddAction(*service, "ps", "List a service's tasks, each slot's history under its newest task",
                [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
                  return PrintTasksOf(client, "/v1/tasks?service=" + id_, out, err);
                });
  ps->add_option("SERVICE", id_, "service id")->check(kIdRule)->required();
  ps->add_flag("--no-trunc", no_trunc_, "do not cut messages");
  ps->add_option("-f,--filter", filters_, "desired-state=running|shutdown|complete, node=NODE");
  AddAction(*service, "scale", "Set replicated services' replica counts: SERVICE=N ...",
            [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
              for (const std::string& item : ids_) {
                Result<std::pair<std::string, int64_t>> scale = ParseScale(item);
                if (!scale.ok()) {
                  err << "berth: " << scale.status().message() << "\n";
                  return 2;
                }
              }
              for (const std::string& item : ids_) {
                const auto [id, n] = *ParseScale(item);
                if (!CallOrSay(client, "PATCH", "/v1/services/" + id, Json{{"replicas", n}}, err))
                  return 1;
                out << id << " scaled to " << n << "\n";
              }
              return 0;
            })
      ->add_option("SERVICE=N", ids_, "services and replica counts")
      ->required();
  AddAction(*service, "rm", "Remove services (their tasks stop)",
            [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
              int status = 0;
              for (const std::string& id : ids_) {
                if (CallOrSay(client, "DELETE", "/v1/services/" + id, nullptr, err))
                  out << "removed " << id << "\n";
                else
                  status = 1;
              }
              return status;
            })
      ->add_option("ID", ids_, "service ids")
      ->check(kIdRule)
      ->required();
}

// restart_policy, update_config and rollback_config of the --restart-*,
// --update-* and --rollback-* flags given (berthd keeps a stored policy's
// other fields on an update).
Status ClientCommands::AddLifecycleFlags(Json* body) const {
  Json policy = Json::object();
  if (!restart_condition_.empty()) policy["condition"] = restart_condition_;
  for (const auto& [flag, key, value] : {std::tuple{"--restart-delay", "delay", &restart_delay_},
                                         {"--restart-window", "window", &restart_window_}}) {
    if (value->empty()) continue;
    if (Result<Duration> d = ParseDuration(*value); !d.ok())
      return Status::InvalidArgument(std::string(flag) + ": " + d.status().message());
    policy[key] = *value;
  }
  if (restart_max_attempts_ >= 0) policy["max_attempts"] = restart_max_attempts_;
  if (!policy.empty()) (*body)["restart_policy"] = policy;
  if (!rebalance_.empty()) (*body)["rebalance"] = rebalance_;
  for (auto [key, flags] :
       {std::pair{"update_config", &update_flags_}, {"rollback_config", &rollback_flags_}}) {
    Result<Json> config = RolloutConfig(*flags, key);
    if (!config.ok()) return config.status();
    if (!config->is_null()) (*body)[key] = *config;
  }
  return Status::Ok();
}

Result<Json> ClientCommands::RolloutConfig(const std::map<std::string, std::string>& flags,
                                           const std::string& prefix) {
  Json config = Json::object();
  for (const auto& [key, value] : flags) {
    if (value.empty()) continue;
    if (key == "parallelism" || key == "max_failure_ratio") {
      char* rest = nullptr;
      const double n = std::strtod(value.c_str(), &rest);
      if (*rest != '\0' || !(n >= 0) ||
          (key == "parallelism" && n != static_cast<double>(static_cast<uint64_t>(n))))
        return Status::InvalidArgument(
            "--" + prefix.substr(0, prefix.find('_')) + "-" +
            (key == "parallelism" ? "parallelism" : "max-failure-ratio") + " '" + value +
            "': expected a number");
      if (key == "parallelism")
        config[key] = static_cast<uint64_t>(n);
      else
        config[key] = n;
    } else {
      config[key] = value;  // berthd checks durations and names, with the field's path
    }
  }
  return config.empty() ? Json() : config;
}

namespace {

// Removes then adds entries of the list task[field], each written as
// `parse` reads it; a removal of an absent entry is an error, an addition of
// a present one does nothing.
Status EditList(Json* task, const char* field, const std::vector<std::string>& remove,
                const std::vector<std::string>& add, Result<Json> (*parse)(const std::string&),
                const char* rm_flag, const char* what) {
  Json list = task->value(field, Json::array());
  for (const std::string& text : remove) {
    Result<Json> gone = parse(text);
    if (!gone.ok()) return gone.status();
    auto it = std::find(list.begin(), list.end(), *gone);
    if (it == list.end())
      return Status::InvalidArgument(std::string(rm_flag) + " '" + text +
                                     "': the service has no such " + what);
    list.erase(it);
  }
  for (const std::string& text : add) {
    Result<Json> added = parse(text);
    if (!added.ok()) return added.status();
    if (std::find(list.begin(), list.end(), *added) == list.end())
      list.push_back(std::move(*added));
  }
  if (list.empty()) {
    task->erase(field);
  } else {
    (*task)[field] = std::move(list);
  }
  return Status::Ok();
}

}  // namespace

// Preferences and affinities: removals (update's -rm flags) first, then
// additions, as Docker orders them.
Status ClientCommands::UpdatePlacement(Json* task) const {
  BERTH_RETURN_IF_ERROR(EditList(task, "preferences", preference_rm_, preferences_,
                                 ParsePlacementPref, "--placement-pref-rm", "preference"));
  return EditList(task, "affinity", affinity_rm_, affinity_, ParseAffinity, "--affinity-rm",
                  "affinity");
}

Result<Json> ClientCommands::UpdateBody(const Json& current) const {
  Json body = Json::object();
  if (replicas_ >= 0) body["replicas"] = replicas_;
  Json task = current.value("task", Json::object());
  const Json before = task;
  if (!cpu_.empty()) task["resources"]["cpu"] = cpu_;
  if (!memory_.empty()) task["resources"]["memory"] = memory_;
  std::vector<std::string> constraints = task.value("constraints", std::vector<std::string>());
  for (const std::string& c : constraint_rm_) {
    if (std::erase(constraints, c) == 0)
      return Status::InvalidArgument("--constraint-rm '" + c +
                                     "': the service has no such constraint");
  }
  for (const std::string& c : constraint_add_)
    if (std::find(constraints.begin(), constraints.end(), c) == constraints.end())
      constraints.push_back(c);
  if (constraints.empty())
    task.erase("constraints");
  else
    task["constraints"] = constraints;
  BERTH_RETURN_IF_ERROR(UpdatePlacement(&task));
  BERTH_RETURN_IF_ERROR(AddProcessFlags(&task));
  if (!command_args_.empty()) {
    if (!task.contains("command"))
      return Status::InvalidArgument("--args: the service has no command to give arguments to");
    task["args"] = SplitSpaces(command_args_);
  }
  if (task != before) body["task"] = task;
  BERTH_RETURN_IF_ERROR(AddLifecycleFlags(&body));
  if (force_) body["force"] = true;
  if (body.empty())
    return Status::InvalidArgument(
        "nothing to update: give --replicas, a template flag, --restart-*, --update-*, "
        "--rollback-*, --rebalance or --force");
  return body;
}

// Waits on berthd's loop (GET /v1/health?wait=settled), then reads the
// service's tasks; a slot waiting for its restart delay is read again after
// a short pause. Progress lines are printed when they change.
int ClientCommands::WaitForService(api::ApiClient& client, const std::string& service,
                                   std::ostream& out, std::ostream& err) const {
  if (detach_) return 0;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(wait_timeout_ * 1000));
  std::vector<std::string> shown;
  for (;;) {
    const auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now());
    if (!CallOrSay(client, "GET",
                   "/v1/health?wait=settled&timeout=" +
                       std::to_string(std::clamp(left.count(), 0.0, 600.0)),
                   nullptr, err))
      return 1;
    std::optional<Json> spec = CallOrSay(client, "GET", "/v1/services/" + service, nullptr, err);
    std::optional<Json> tasks =
        spec ? CallOrSay(client, "GET", "/v1/tasks?service=" + service, nullptr, err)
             : std::nullopt;
    if (!tasks) return 1;
    const ServiceProgress progress = ProgressOf(*spec, *tasks);
    const Json status = spec->value("update_status", Json::object());
    const std::string rollout = status.is_object() ? status.value("state", "") : "";
    const std::string why = status.is_object() ? status.value("message", "") : "";
    if (progress.lines != shown) {
      for (const std::string& line : progress.lines) out << line << "\n";
      out << "overall progress: " << progress.running << " out of " << progress.desired
          << " tasks running\n";
      shown = progress.lines;
    }
    if (rollout == "paused" || rollout == "rollback_paused" ||
        (rollout == "rollback_completed" && why.starts_with("update rolled back"))) {
      out << "overall progress: " << progress.running << " out of " << progress.desired
          << " tasks running\n";
      err << "berth: " << service << ": " << why << "\n";
      return 1;
    }
    if (progress.converged() && rollout != "updating" && rollout != "rollback_started") {
      out << "verify: service converged\n";
      return 0;
    }
    if (!progress.stuck.empty() && progress.running + progress.stuck.size() >= progress.desired) {
      out << "not converged: " << progress.stuck.size()
          << " task(s) wait for a change (see the reasons above; berth service ps " << service
          << ")\n";
      return 0;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      err << "berth: " << service << " has not converged after " << wait_timeout_
          << " s; it goes on in berthd (berth service ps " << service << ")\n";
      return 1;
    }
    // Only restart delays are left: berthd acts when they end.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int ClientCommands::PrintTasksOf(api::ApiClient& client, const std::string& path, std::ostream& out,
                                 std::ostream& err) const {
  std::string query;
  for (const std::string& filter : filters_) {
    const size_t eq = filter.find('=');
    const std::string key = filter.substr(0, eq == std::string::npos ? 0 : eq);
    if (key != "desired-state" && key != "node") {
      err << "berth: --filter '" << filter << "': expected desired-state=STATE or node=NODE\n";
      return 2;
    }
    query += (key == "node" ? "&node=" : "&desired_state=") + filter.substr(eq + 1);
  }
  std::optional<Json> tasks = CallOrSay(client, "GET", path + query, nullptr, err);
  if (!tasks) return 1;
  if (options_.output == "json")
    out << tasks->dump(2) << "\n";
  else
    PrintTaskTable(*tasks, {true, no_trunc_}, out);
  return 0;
}

void ClientCommands::AddTaskCommands(CLI::App& app) {
  CLI::App* task =
      app.add_subcommand("task", "Inspect tasks of a running berthd")->require_subcommand(1);
  auto leaf = [&](const char* name, const char* help, auto build, auto print) {
    return AddLeaf(*task, name, help, build, print);
  };
  CLI::App* ls = leaf(
      "ls", "List tasks",
      [this] {
        return Result<Request>(Request{"GET",
                                       "/v1/tasks" + Query({{"service", service_filter_},
                                                            {"node", node_filter_},
                                                            {"state", state_filter_},
                                                            {"desired_state", desired_filter_}}),
                                       nullptr});
      },
      PrintTasks);
  ls->add_option("--service", service_filter_, "only the tasks of this service")->check(kIdRule);
  ls->add_option("--node", node_filter_, "only the tasks on this node")->check(kIdRule);
  ls->add_option("--state", state_filter_, "only the tasks in this state (running, pending, ...)");
  ls->add_option("--desired-state", desired_filter_,
                 "only the tasks with this desired state (running, shutdown, complete)");
  leaf(
      "inspect", "Show one task",
      [this] {
        return Result<Request>(Request{"GET", "/v1/tasks/" + id_, nullptr});
      },
      PrintTasks)
      ->add_option("TASK", id_, "task id or name (web.1: the newest task of slot 1)")
      ->check(kTaskIdRule)
      ->required();
  CLI::App* logs = AddAction(*task, "logs", "Show a task's output (a task run by a berth-node)",
                             [this](api::ApiClient& client, std::ostream& out, std::ostream& err) {
                               return PrintTaskLogs(client, id_, logs_, out, err);
                             });
  logs->add_option("TASK", id_, "task id or name (web.1: the newest task of slot 1)")
      ->check(kTaskIdRule)
      ->required();
  AddLogsFlags(*logs);
  leaf(
      "why", "Explain why a task is where it is, or why it is not running",
      [this] {
        return Result<Request>(Request{"GET", "/v1/tasks/" + id_ + "/why", nullptr});
      },
      PrintWhy)
      ->add_option("TASK", id_, "task id or name (web.1: the newest task of slot 1)")
      ->check(kTaskIdRule)
      ->required();
}

void ClientCommands::AddLogsFlags(CLI::App& command) {
  command.add_flag("-f,--follow", logs_.follow, "keep printing new lines until the task ends");
  command.add_option("-n,--tail", logs_.tail, "only the last N lines (of each task)")
      ->check(CLI::NonNegativeNumber);
  command.add_flag("-t,--timestamps", logs_.timestamps, "print when each line was written");
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
  if (action_) {
    Result<ClientOptions> connection = ResolveConnection(options_);
    if (!connection.ok()) {
      err << "berth: " << connection.status().message() << "\n";
      return 2;
    }
    api::ApiClient client(connection->server, connection->token);
    return action_(client, out, err);
  }
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
