// The `berth` commands that talk to a running berthd: node, service, task,
// job and class (docs/cli.md). Each leaf command builds one API request; the answer is
// printed as a table, or as JSON with `-o json`.
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
#include <string>

#include "api/json_fields.h"
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
  bool selected() const { return static_cast<bool>(request_); }
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
  api::Json TaskTemplate() const;
  // Adds --server, --token, --data-dir and -o to a leaf command.
  void AddConnectionOptions(CLI::App& command);

  ClientOptions options_;
  // Set by the parsed leaf command: builds the request (or a usage error).
  std::function<Result<Request>()> request_;
  Printer print_ = nullptr;
  // Scratch for the parsed flags.
  std::string id_, hostname_, cpu_, memory_, state_, availability_, mode_ = "replicated",
                                                                    service_filter_;
  std::vector<std::string> labels_, constraints_, preferences_, publish_;
  int64_t replicas_ = -1, count_ = 1;
  std::string requestor_, duration_ = "1", outcome_ = "complete", threshold_, min_duration_,
                          run_duration_;
  std::vector<std::string> percents_, requestors_;
};

// Resolves server and token as described above. InvalidArgument when no
// token is given and the token file cannot be read.
Result<ClientOptions> ResolveConnection(ClientOptions options);

// Parses `--publish mode=host,target=80,published=8080[,protocol=udp]`.
Result<api::Json> ParsePublish(const std::string& text);

// Prints rows under headers, columns padded to their widest cell.
void PrintTable(std::ostream& out, const std::vector<std::string>& headers,
                const std::vector<std::vector<std::string>>& rows);

}  // namespace berth::cli
