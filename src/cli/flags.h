// The flags several verbs share, as Docker Swarm spells them
// (docs/cli.md): each group adds its flags to a verb and applies the values
// given to a task template or a request body. Values berthd checks
// (constraints, durations, quantities) are passed on as written, so its
// message names the field; what only the CLI reads (--publish, the
// preference and affinity forms, KEY=VALUE pairs) is checked here, and an
// error is InvalidArgument naming the flag (the verb exits 2).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api/json_fields.h"
#include "core/status.h"

namespace CLI {
class App;
}

namespace berth::cli {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}.
std::vector<std::string> SplitCommas(const std::string& text);
// "KEY=VALUE" pairs into a labels object ("--label 'x': expected KEY=VALUE").
Result<api::Json> ParseLabels(const std::vector<std::string>& pairs);
// "K=V,K=V" items, or repeated K=V, into ordered pairs; `flag` names the
// flag in errors.
Result<std::vector<std::pair<std::string, std::string>>> ParsePairs(
    const std::vector<std::string>& items, const std::string& flag);
// --publish `mode=host,target=80,published=8080[,protocol=udp]`, or
// Docker's short form `8080:80[/udp]` (published:target, ingress mode).
Result<api::Json> ParsePublish(const std::string& text);
// --placement-pref: spread=D[:VALUE=WEIGHT,...], pack=D or prefer=CONSTRAINT,
// as a task template's preference ({"spread": D, "weights": {...}}, ...);
// berthd checks the descriptor and the constraint.
Result<api::Json> ParsePlacementPref(const std::string& text);
// --affinity: service==ID, service!=ID (anti), service==~ID or service!=~ID
// (soft), as classic Swarm wrote them; the template's {"service": ID,
// "anti": true, "soft": true} (false fields left out).
Result<api::Json> ParseAffinity(const std::string& text);

// --reserve-cpu and --reserve-memory: the template's resources.
struct ReserveFlags {
  std::string cpu, memory;
  void Add(CLI::App& verb);
  void Apply(api::Json* task) const;
};

// --constraint (create, job submit), or --constraint-add and
// --constraint-rm (update: removals first; removing an absent one is an
// error, adding a present one does nothing).
struct ConstraintFlags {
  std::vector<std::string> add, rm;
  void AddCreate(CLI::App& verb);
  void AddUpdate(CLI::App& verb);
  // create: the template's constraints are those given, in order.
  void Set(api::Json* task) const;
  // update: edits the template's constraints.
  Status Apply(api::Json* task) const;
};

// --placement-pref and --affinity (create), or their -add and -rm forms
// (update). Removals first, then additions, as Docker orders them; an entry
// is removed when written as it was added.
struct PlacementFlags {
  std::vector<std::string> preferences, preferences_rm, affinity, affinity_rm;
  void AddCreate(CLI::App& verb);
  void AddUpdate(CLI::App& verb);
  Status Apply(api::Json* task) const;
};

// --publish (create, repeatable).
struct PublishFlags {
  std::vector<std::string> ports;
  void Add(CLI::App& verb);
  Status Apply(api::Json* task) const;
};

// How a berth-node runs the tasks: -e/--env (create) or --env-add and
// --env-rm (update), -w/--workdir, --stop-grace-period, --limit-cpu,
// --limit-memory and --limit-pids. The command itself comes after `--`
// (create only).
// berthd refuses these without a command.
struct ProcessFlags {
  std::vector<std::string> env, env_rm;  // env: -e on create, --env-add on update
  std::string workdir, stop_grace_period, limit_cpu, limit_memory, limit_pids;
  void AddCreate(CLI::App& verb);
  void AddUpdate(CLI::App& verb);
  // Sets command and args from `command` when it is not empty, then the
  // flags given.
  Status Apply(const std::vector<std::string>& command, api::Json* task) const;

 private:
  void AddShared(CLI::App& verb);  // the flags of both forms
};

// --restart-condition, --restart-delay, --restart-max-attempts and
// --restart-window: the body's restart_policy (only the fields given;
// berthd keeps a stored policy's others on an update).
struct RestartFlags {
  std::string condition, delay, window;
  int64_t max_attempts = -1;  // -1: not given
  void Add(CLI::App& verb);
  Status Apply(api::Json* body) const;
};

// --update-* and --rollback-* (parallelism, delay, failure-action, monitor,
// max-failure-ratio, order) and --rebalance: the body's update_config,
// rollback_config and rebalance (only the fields given).
struct RolloutFlags {
  // By the config's field name; only those given are non-empty.
  std::map<std::string, std::string> update, rollback;
  std::string rebalance;
  void Add(CLI::App& verb);
  Status Apply(api::Json* body) const;
};

}  // namespace berth::cli
