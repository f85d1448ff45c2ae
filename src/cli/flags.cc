#include "cli/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <tuple>

#include "core/time.h"

namespace berth::cli {
namespace {

using api::Json;

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
  if (list.empty())
    task->erase(field);
  else
    (*task)[field] = std::move(list);
  return Status::Ok();
}

// A port number of --publish; the range is checked by berthd with the rest
// of the template.
Result<long> PortNumber(const std::string& value) {
  char* rest = nullptr;
  const long n = std::strtol(value.c_str(), &rest, 10);
  if (value.empty() || *rest != '\0') return Status::InvalidArgument("");
  return n;
}

// Docker's short form PUBLISHED:TARGET[/PROTOCOL].
Result<Json> ParseShortPublish(const std::string& text) {
  const size_t colon = text.find(':'), slash = text.find('/');
  const std::string published = text.substr(0, colon),
                    target = text.substr(colon + 1, slash == std::string::npos ? std::string::npos
                                                                               : slash - colon - 1);
  Json port = Json::object();
  for (const auto& [key, value] : {std::pair{"published", published}, {"target", target}}) {
    Result<long> n = PortNumber(value);
    if (!n.ok())
      return Status::InvalidArgument("--publish '" + text +
                                     "': expected PUBLISHED:TARGET[/tcp|udp|sctp]");
    port[key] = *n;
  }
  if (slash != std::string::npos) port["protocol"] = text.substr(slash + 1);
  return port;
}

// An environment entry's name: "A=1" -> "A".
std::string EnvName(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// update_config or rollback_config of the --update-* or --rollback-*
// flags given, or null when none was.
Result<Json> RolloutConfig(const std::map<std::string, std::string>& flags,
                           const std::string& prefix) {
  Json config = Json::object();
  for (const auto& [key, value] : flags) {
    if (value.empty()) continue;
    if (key != "parallelism" && key != "max_failure_ratio") {
      config[key] = value;  // berthd checks durations and names, with the field's path
      continue;
    }
    char* rest = nullptr;
    const double n = std::strtod(value.c_str(), &rest);
    if (*rest != '\0' || !(n >= 0) ||
        (key == "parallelism" && n != static_cast<double>(static_cast<uint64_t>(n))))
      return Status::InvalidArgument("--" + prefix + "-" +
                                     (key == "parallelism" ? "parallelism" : "max-failure-ratio") +
                                     " '" + value + "': expected a number");
    if (key == "parallelism")
      config[key] = static_cast<uint64_t>(n);
    else
      config[key] = n;
  }
  return config.empty() ? Json() : config;
}

}  // namespace

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  for (size_t start = 0; start <= text.size();) {
    const size_t end = std::min(text.find(',', start), text.size());
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

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

Result<Json> ParsePublish(const std::string& text) {
  if (text.find('=') == std::string::npos && text.find(':') != std::string::npos)
    return ParseShortPublish(text);
  Json port = Json::object();
  for (const std::string& pair : SplitCommas(text)) {
    const size_t eq = pair.find('=');
    const std::string key = pair.substr(0, eq),
                      value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    if (key == "target" || key == "published") {
      Result<long> n = PortNumber(value);
      if (!n.ok())
        return Status::InvalidArgument("--publish '" + text + "': " + key +
                                       " must be a port number");
      port[key] = *n;
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

void ReserveFlags::Add(CLI::App& verb) {
  verb.add_option("--reserve-cpu", cpu, "CPUs reserved per task (0.5, 500m)");
  verb.add_option("--reserve-memory", memory, "memory reserved per task (512Mi)");
}

void ReserveFlags::Apply(Json* task) const {
  if (!cpu.empty()) (*task)["resources"]["cpu"] = cpu;
  if (!memory.empty()) (*task)["resources"]["memory"] = memory;
}

void ConstraintFlags::AddCreate(CLI::App& verb) {
  verb.add_option("--constraint", add, "placement constraint, e.g. node.labels.az==a (repeatable)");
}

void ConstraintFlags::AddUpdate(CLI::App& verb) {
  verb.add_option("--constraint-add", add, "add a placement constraint (repeatable)");
  verb.add_option("--constraint-rm", rm, "remove a placement constraint (repeatable)");
}

void ConstraintFlags::Set(Json* task) const {
  if (!add.empty()) (*task)["constraints"] = add;
}

Status ConstraintFlags::Apply(Json* task) const {
  std::vector<std::string> constraints = task->value("constraints", std::vector<std::string>());
  for (const std::string& c : rm)
    if (std::erase(constraints, c) == 0)
      return Status::InvalidArgument("--constraint-rm '" + c +
                                     "': the service has no such constraint");
  for (const std::string& c : add)
    if (std::find(constraints.begin(), constraints.end(), c) == constraints.end())
      constraints.push_back(c);
  if (constraints.empty())
    task->erase("constraints");
  else
    (*task)["constraints"] = constraints;
  return Status::Ok();
}

void PlacementFlags::AddCreate(CLI::App& verb) {
  verb.add_option("--placement-pref", preferences,
                  "spread=DESCRIPTOR[:VALUE=WEIGHT,...,*=WEIGHT], pack=DESCRIPTOR or "
                  "prefer=CONSTRAINT; DESCRIPTOR node.labels.KEY, engine.labels.KEY or node.id "
                  "(repeatable, highest first)");
  verb.add_option("--affinity", affinity,
                  "service==ID: run where service ID has a task; service!=ID: where it has "
                  "none (the service's own id: one task per node); ==~ and !=~: preferred, "
                  "not required (repeatable)");
}

void PlacementFlags::AddUpdate(CLI::App& verb) {
  verb.add_option("--placement-pref-add", preferences,
                  "add a placement preference, as create's --placement-pref (repeatable)");
  verb.add_option("--placement-pref-rm", preferences_rm,
                  "remove a placement preference, written as it was added (repeatable)");
  verb.add_option("--affinity-add", affinity,
                  "add an affinity, as create's --affinity (repeatable)");
  verb.add_option("--affinity-rm", affinity_rm,
                  "remove an affinity, written as it was added (repeatable)");
}

Status PlacementFlags::Apply(Json* task) const {
  BERTH_RETURN_IF_ERROR(EditList(task, "preferences", preferences_rm, preferences,
                                 ParsePlacementPref, "--placement-pref-rm", "preference"));
  return EditList(task, "affinity", affinity_rm, affinity, ParseAffinity, "--affinity-rm",
                  "affinity");
}

void PublishFlags::Add(CLI::App& verb) {
  verb.add_option("--publish", ports,
                  "mode=host,target=80,published=8080[,protocol=tcp]: the node books the "
                  "port (repeatable; Docker's short form 8080:80 is ingress mode, which "
                  "berthd refuses: Berth has no routing mesh)");
}

Status PublishFlags::Apply(Json* task) const {
  for (const std::string& p : ports) {
    Result<Json> port = ParsePublish(p);
    if (!port.ok()) return port.status();
    (*task)["ports"].push_back(*port);
  }
  return Status::Ok();
}

void ProcessFlags::AddCreate(CLI::App& verb) {
  verb.add_option("-e,--env", env, "an environment variable NAME=value (repeatable)");
  AddShared(verb);
}

void ProcessFlags::AddUpdate(CLI::App& verb) {
  verb.add_option("--env-add", env, "add or change a variable NAME=value (repeatable)");
  verb.add_option("--env-rm", env_rm, "remove a variable NAME (repeatable)");
  AddShared(verb);
}

void ProcessFlags::AddShared(CLI::App& verb) {
  verb.add_option("-w,--workdir", workdir, "the tasks' working directory (absolute)");
  verb.add_option("--stop-grace-period", stop_grace_period,
                  "time between SIGTERM and SIGKILL when a task is stopped (default 10s)");
  verb.add_option("--limit-cpu", limit_cpu,
                  "CPU limit per task (0.5, 500m); placed only on nodes that enforce limits");
  verb.add_option("--limit-memory", limit_memory,
                  "memory limit per task (512Mi); placed only on nodes that enforce limits");
  verb.add_option("--limit-pids", limit_pids,
                  "most processes and threads per task at once (100); a fork beyond fails");
}

Status ProcessFlags::Apply(const std::vector<std::string>& command, Json* task) const {
  if (!command.empty()) {
    (*task)["command"] = command[0];
    if (command.size() > 1)
      (*task)["args"] = std::vector<std::string>(command.begin() + 1, command.end());
    else
      task->erase("args");
  }
  std::vector<std::string> vars = task->value("env", std::vector<std::string>());
  for (const std::string& name : env_rm)
    if (std::erase_if(vars, [&](const std::string& e) { return EnvName(e) == name; }) == 0)
      return Status::InvalidArgument("--env-rm '" + name + "': the service sets no such variable");
  for (const std::string& e : env) {
    std::erase_if(vars, [&](const std::string& old) { return EnvName(old) == EnvName(e); });
    vars.push_back(e);
  }
  if (vars.empty())
    task->erase("env");
  else
    (*task)["env"] = vars;
  if (!workdir.empty()) (*task)["workdir"] = workdir;
  if (!stop_grace_period.empty()) (*task)["stop_grace_period"] = stop_grace_period;
  if (!limit_cpu.empty()) (*task)["limits"]["cpu"] = limit_cpu;
  if (!limit_memory.empty()) (*task)["limits"]["memory"] = limit_memory;
  if (!limit_pids.empty()) {
    // A number on the wire, as the API takes it; berthd checks its range.
    int64_t pids = 0;
    const auto [end, ec] =
        std::from_chars(limit_pids.data(), limit_pids.data() + limit_pids.size(), pids);
    if (ec != std::errc() || end != limit_pids.data() + limit_pids.size())
      return Status::InvalidArgument("--limit-pids '" + limit_pids +
                                     "': expected a whole number of processes");
    (*task)["limits"]["pids"] = pids;
  }
  return Status::Ok();
}

void RestartFlags::Add(CLI::App& verb) {
  verb.add_option("--restart-condition", condition,
                  "restart when a task ends: none | on-failure | any (default any)")
      ->check(CLI::IsMember({"none", "on-failure", "any"}));
  verb.add_option("--restart-delay", delay, "delay before a task is restarted (default 5s)");
  verb.add_option("--restart-max-attempts", max_attempts,
                  "restarts of a slot within the window before giving up (default 0: no limit)")
      ->check(CLI::NonNegativeNumber);
  verb.add_option("--restart-window", window,
                  "window the attempts are counted in (default 0s: the slot's life)");
}

Status RestartFlags::Apply(Json* body) const {
  Json policy = Json::object();
  if (!condition.empty()) policy["condition"] = condition;
  for (const auto& [flag, key, value] :
       {std::tuple{"--restart-delay", "delay", &delay}, {"--restart-window", "window", &window}}) {
    if (value->empty()) continue;
    if (Result<Duration> d = ParseDuration(*value); !d.ok())
      return Status::InvalidArgument(std::string(flag) + ": " + d.status().message());
    policy[key] = *value;
  }
  if (max_attempts >= 0) policy["max_attempts"] = max_attempts;
  if (!policy.empty()) (*body)["restart_policy"] = policy;
  return Status::Ok();
}

void RolloutFlags::Add(CLI::App& verb) {
  for (auto [prefix, flags] : {std::pair{"update", &update}, {"rollback", &rollback}}) {
    const std::string p = std::string("--") + prefix + "-";
    const bool updating = std::string(prefix) == "update";
    const std::string what = updating ? "an update" : "a rollback";
    verb.add_option(p + "parallelism", (*flags)["parallelism"],
                    "tasks " + what + " replaces at once (0: all; default 1)");
    verb.add_option(p + "delay", (*flags)["delay"], "delay between batches (default 0s)");
    verb.add_option(p + "failure-action", (*flags)["failure_action"],
                    updating ? "on failure: pause | continue | rollback (default pause)"
                             : "on failure: pause | continue (default pause)");
    verb.add_option(p + "monitor", (*flags)["monitor"],
                    "how long a new task must run to count as updated (default 5s)");
    verb.add_option(p + "max-failure-ratio", (*flags)["max_failure_ratio"],
                    "failures tolerated, as a fraction of the tasks updated (default 0)");
    verb.add_option(p + "order", (*flags)["order"],
                    "stop-first | start-first (default stop-first)");
  }
  verb.add_option("--rebalance", rebalance,
                  "manual | on-join: also rebalance when a node joins (default manual)")
      ->check(CLI::IsMember({"manual", "on-join"}));
}

Status RolloutFlags::Apply(Json* body) const {
  if (!rebalance.empty()) (*body)["rebalance"] = rebalance;
  for (auto [key, prefix, flags] : {std::tuple{"update_config", "update", &update},
                                    {"rollback_config", "rollback", &rollback}}) {
    Result<Json> config = RolloutConfig(*flags, prefix);
    if (!config.ok()) return config.status();
    if (!config->is_null()) (*body)[key] = *config;
  }
  return Status::Ok();
}

}  // namespace berth::cli
