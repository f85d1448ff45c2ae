// The `berth` commands that talk to a running berthd: node, service, task,
// job and class (docs/cli.md). Most leaf commands build one API request
// whose answer is printed as a table, or as JSON with `-o json`; a few
// (actions) make several calls: `service create` and `update` wait for the
// service to converge, `service ps`, `node ps` and `service ls` combine
// answers, `service scale` and `rm` take several services.
//
// Where the daemon is and how to authenticate:
//   --server URL    (else $BERTH_SERVER, else http://127.0.0.1:7480)
//   --token TOKEN   (else $BERTH_TOKEN, else the file <data dir>/token)
//   --data-dir DIR  (else $BERTH_DATA_DIR, else ./berth-data)
// Exit statuses: 0 success, 1 the daemon refused or could not be reached,
// 2 bad usage (handled by the caller's parser).
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <string>

#include "api/api_client.h"
#include "api/json_fields.h"
#include "cli/logs.h"
#include "core/status.h"

namespace CLI {
class App;
}

namespace berth::cli {

struct ClientOptions {
  std::string server, token, data_dir;
  std::string output = "table";  // table | json
};

class ClientCommands {
 public:
  // Adds the commands to `app`.
  explicit ClientCommands(CLI::App& app);
  bool selected() const { return request_ || action_; }
  // Runs the command the parser selected.
  int Run(std::ostream& out, std::ostream& err) const;

 private:
  struct Request {
    std::string method, path;
    api::Json body;
  };
  void AddNodeCommands(CLI::App& app);
  void AddServiceCommands(CLI::App& app);
  void AddTaskCommands(CLI::App& app);
  void AddJobCommands(CLI::App& app);
  void AddClassCommands(CLI::App& app);
  using Printer = void (*)(const api::Json&, std::ostream&);
  // Adds a command under `parent` that, when parsed, selects `build` and `print`.
  CLI::App* AddLeaf(CLI::App& parent, const char* name, const char* help,
                    std::function<Result<Request>()> build, Printer print);
  // A command of several calls: `action` runs with a connected client and
  // returns the exit status (it prints its own errors, "berth: ...").
  using Action = std::function<int(api::ApiClient&, std::ostream& out, std::ostream& err)>;
  CLI::App* AddAction(CLI::App& parent, const char* name, const char* help, Action action);
  // Unless --detach: waits for `service` to converge, printing its progress.
  int WaitForService(api::ApiClient& client, const std::string& service, std::ostream& out,
                     std::ostream& err) const;
  // service update's PATCH body from its flags and the service as it is.
  Result<api::Json> UpdateBody(const api::Json& current) const;
  // Applies the preference and affinity flags (create's, update's -add and
  // -rm) to a task template.
  Status UpdatePlacement(api::Json* task) const;
  // Adds restart_policy, update_config, rollback_config and rebalance of
  // the flags given (--restart-*, --update-*, --rollback-*, --rebalance) to
  // a create or update body.
  Status AddLifecycleFlags(api::Json* body) const;
  // GET `path` and print its tasks (service ps, node ps).
  int PrintTasksOf(api::ApiClient& client, const std::string& path, std::ostream& out,
                   std::ostream& err) const;
  api::Json TaskTemplate() const;
  // Adds --server, --token, --data-dir and -o to a leaf command.
  void AddConnectionOptions(CLI::App& command);

  ClientOptions options_;
  // Set by the parsed leaf command: builds the request (or a usage error).
  std::function<Result<Request>()> request_;
  Printer print_ = nullptr;
  Action action_;
  // Scratch for the parsed flags.
  std::string id_, hostname_, cpu_, memory_, state_, availability_, mode_ = "replicated",
                                                                    service_filter_;
  std::vector<std::string> labels_, constraints_, preferences_, preference_rm_, publish_;
  std::vector<std::string> affinity_, affinity_rm_;
  std::vector<std::string> ids_, label_add_, label_rm_, constraint_add_, constraint_rm_, filters_;
  std::string node_filter_, state_filter_, desired_filter_, restart_condition_, restart_delay_,
      restart_window_, rebalance_;
  int64_t restart_max_attempts_ = -1;
  // --update-* and --rollback-* (parallelism, delay, failure-action,
  // monitor, max-failure-ratio, order), by field name; only those given.
  std::map<std::string, std::string> update_flags_, rollback_flags_;
  // update_config / rollback_config of the flags given, or null.
  static Result<api::Json> RolloutConfig(const std::map<std::string, std::string>& flags,
                                         const std::string& prefix);
  bool detach_ = false, force_ = false, no_trunc_ = false;
  // How a berth-node runs the tasks (service create -- COMMAND ARGS).
  std::vector<std::string> command_, env_, env_add_, env_rm_;
  std::string workdir_, stop_grace_period_, limit_cpu_, limit_memory_;
  // Adds the process fields of the flags above to a task template.
  Status AddProcessFlags(api::Json* task) const;
  std::string command_args_, kind_;
  LogsOptions logs_;
  void AddLogsFlags(CLI::App& command);
  void AddTokenCommands(CLI::App& app);
  double wait_timeout_ = 60;
  int64_t replicas_ = -1, count_ = 1;
  std::string requestor_, duration_ = "1", outcome_ = "complete", threshold_, min_duration_,
                          run_duration_;
  std::vector<std::string> percents_, requestors_;
};

// Resolves server and token as described above. InvalidArgument when no
// token is given and the token file cannot be read.
Result<ClientOptions> ResolveConnection(ClientOptions options);

// Parses `--publish mode=host,target=80,published=8080[,protocol=udp]`, or
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

// Prints rows under headers, columns padded to their widest cell.
void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows);

}  // namespace berth::cli
