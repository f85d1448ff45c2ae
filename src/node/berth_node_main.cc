// berth-node: runs a machine's tasks for berthd. See docs/agent.md.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "auth/token.h"
#include "core/names.h"
#include "core/program.h"
#include "node/node_agent.h"

namespace {

using berth::Result;
using berth::Status;

Status ParseLabels(const std::vector<std::string>& flags, berth::Labels* out) {
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::InvalidArgument("--label: expected KEY=VALUE, got '" + flag + "'");
    (*out)[flag.substr(0, eq)] = flag.substr(eq + 1);
  }
  return Status::Ok();
}

Status ParseListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  char* end = nullptr;
  const long value =
      colon == std::string::npos ? -1 : std::strtol(listen.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || colon == 0 || *end != '\0' || value < 0 || value > 65535)
    return Status::InvalidArgument("--listen: expected HOST:PORT (port 0: any), got '" + listen +
                                   "'");
  *host = listen.substr(0, colon);
  *port = static_cast<int>(value);
  return Status::Ok();
}

int Run(int argc, char** argv) {
  berth::node::NodeAgentOptions options;
  std::string token_file, listen = "0.0.0.0:7482";
  std::vector<std::string> labels;
  options.exec_path = berth::node::ExecNextToThisProgram();
  CLI::App app{"berth-node: joins berthd and runs the tasks it assigns to this machine"};
  app.add_option("--join", options.join,
                 "berthd's URL, e.g. http://10.0.0.1:7480; with several replicas (docs/ha.md) "
                 "their URLs separated by commas: the node finds the leader")
      ->required();
  app.add_option("--token-file", token_file,
                 "file holding the node join token (berth token show node); needed for the "
                 "first join of a data directory");
  app.add_option("--data-dir", options.data_dir,
                 "the node's identity (node.json) and its tasks' directories and logs")
      ->capture_default_str();
  app.add_option("--hostname", options.hostname,
                 "the node's id and hostname (default: the machine's hostname)");
  app.add_option("--label", labels, "an engine label KEY=VALUE (repeatable), as dockerd --label");
  app.add_option("--listen", listen, "HOST:PORT of the log server berthd reads task logs from")
      ->capture_default_str();
  app.add_option("--advertise-addr", options.advertise,
                 "the IP address berthd reaches this node on (default: the local address that "
                 "routes to berthd)");
  app.add_option("--exec", options.exec_path, "the berth-exec program that supervises each task")
      ->capture_default_str();
  app.set_version_flag("--version", "berth-node 0.1.0");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  Status valid = ParseLabels(labels, &options.engine_labels);
  if (valid.ok()) valid = ParseListen(listen, &options.listen_host, &options.listen_port);
  if (valid.ok() && !options.hostname.empty()) valid = berth::CheckId(options.hostname);
  if (valid.ok() && ::access(options.exec_path.c_str(), X_OK) != 0)
    valid = Status::InvalidArgument("--exec: " + options.exec_path +
                                    " is not an executable program (berth-exec)");
  if (valid.ok() && !token_file.empty()) {
    Result<std::string> token = berth::auth::ReadToken(token_file);
    if (token.ok())
      options.join_token = *token;
    else
      valid = token.status();
  }
  if (!valid.ok()) {
    std::fprintf(stderr, "berth-node: %s\n", valid.message().c_str());
    return 2;
  }
  berth::StopSignals signals;  // before any thread starts
  // Removed from the cluster, the agent has stopped its tasks: the SIGTERM
  // (to the process, which only signals.Wait takes) ends the wait.
  options.on_removed = [] { ::kill(::getpid(), SIGTERM); };
  berth::SystemClock clock;
  Result<std::unique_ptr<berth::node::NodeAgent>> agent =
      berth::node::NodeAgent::Start(std::move(options), clock);
  if (!agent.ok()) {
    std::fprintf(stderr, "berth-node: %s\n", agent.status().message().c_str());
    return 1;
  }
  signals.Wait();
  (*agent)->Stop();  // its tasks run on: the next berth-node adopts them
  if (const std::string removed = (*agent)->removed(); !removed.empty()) {
    std::fprintf(stderr, "berth-node: %s\n", removed.c_str());
    return 1;
  }
  std::printf("berth-node: stopped; tasks keep running\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return berth::RunProgram("berth-node", [&] { return Run(argc, argv); });
}
