// What every verb that talks to berthd shares (docs/cli.md, "Commands for a
// running berthd"): the connection options, the registry where the nouns
// add their verbs and where the one the parser chose is kept, and the shape
// of a simple verb (one request, one printed answer), which a noun lists in
// a table.
//
// A verb with more than one request has its own file and options struct
// (service/create.cc, node/update.cc, ...); its run function gets a
// VerbContext. Exit statuses: 0 success, 1 berthd refused or could not be
// reached, 2 bad usage (a verb's own checks; the parser's are app.cc's).
#pragma once

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "api/api_client.h"
#include "api/json_fields.h"
#include "core/status.h"
#include "core/time.h"

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace berth::cli {

using api::Json;

// Where berthd is, how to authenticate, and how answers are printed:
//   --server URL    (else $BERTH_SERVER, else https://127.0.0.1:7480; a URL
//                   without a scheme is https://, plain HTTP only as http://)
//   --token TOKEN   (else $BERTH_TOKEN, else the first line of <data dir>/token)
//   --data-dir DIR  (else $BERTH_DATA_DIR, else ./berth-data)
//   TLS, with Docker's flags (docs/security.md):
//   --tlscacert F   the CA berthd's certificate must chain to (else
//                   $BERTH_CERT_PATH/ca.pem, else <data dir>/ca.pem)
//   --tlscert F, --tlskey F   a client certificate to present (else
//                   $BERTH_CERT_PATH/cert.pem and key.pem when both exist)
//   --tlsverify     accepted for Docker's sake: berth always verifies
//   -o, --output    table | json
struct ConnectionOptions {
  std::string server, token, data_dir;
  std::string tls_ca, tls_cert, tls_key;
  bool tls_verify = true;
  std::string output = "table";
  tls::Credentials tls;  // resolved: what the client trusts and presents
};

// Resolves server, token and TLS as described above. InvalidArgument when
// no token is given and the token file cannot be read, or a TLS file given
// cannot be read.
Result<ConnectionOptions> ResolveConnection(ConnectionOptions options);

// Standard output when it is a terminal, by its size; 0 x 0: it is not
// (a pipe, a file, a test's stream).
struct Terminal {
  int columns = 0, rows = 0;
  bool on() const { return columns > 0 && rows > 0; }
};

// What a chosen verb runs with.
struct VerbContext {
  api::ApiClient& client;
  bool json;  // -o json: print the API's answers as they are
  // The words after the first `--` of the command line (only for a verb
  // added with TakesCommand::kYes; see app.cc).
  const std::vector<std::string>& command;
  std::ostream& out;
  std::ostream& err;
  std::istream& in;    // standard input, for a file argument of "-"
  const Clock& clock;  // now, for flags that take a time ago (--since 10m)
  // `out` when it is standard output on a terminal: progress is redrawn in
  // place there (lines otherwise).
  Terminal terminal = {};
};
using VerbRun = std::function<int(const VerbContext&)>;

// Calls berthd; on failure prints "berth: <reason>" on `err` and returns
// nullopt (the verb then exits 1).
std::optional<Json> CallOrSay(api::ApiClient& client, const std::string& method,
                              const std::string& path, const Json& body, std::ostream& err);

// One request to berthd.
struct Request {
  std::string method, path;
  Json body;
};
inline Request Get(std::string path) { return {"GET", std::move(path), nullptr}; }

// A simple verb: its request, built from the parsed arguments
// (InvalidArgument: bad usage, exit 2, before any connection), and how its
// answer is printed in table form (-o json prints it as it is; an answer
// {"removed": ID} prints "removed ID").
struct OneRequest {
  std::function<Result<Request>()> build;
  std::function<void(const Json&, std::ostream&)> print;
};
struct SimpleVerb {
  const char* name;
  const char* help;
  // Adds the verb's arguments and flags to `verb` and says how its request
  // is made from them (the values live in the returned closures).
  std::function<OneRequest(CLI::App& verb)> define;
};

enum class TakesCommand { kNo, kYes };

// The verbs of the nouns, with the connection options they share; after
// parsing, the chosen one.
class Verbs {
 public:
  // Adds verb `name` under `noun` with the connection options; `run` is
  // what Run calls when the parser chose it.
  CLI::App* Add(CLI::App& noun, const char* name, const char* help, VerbRun run,
                TakesCommand command = TakesCommand::kNo);
  // Adds each verb of `table` under `noun`.
  void AddTable(CLI::App& noun, const std::vector<SimpleVerb>& table);

  bool selected() const { return static_cast<bool>(chosen_.run); }
  // Whether the chosen verb takes the words after `--` as its command.
  bool takes_command() const { return chosen_.takes_command; }
  // Runs the chosen verb with `command`, the words after `--`.
  int Run(const std::vector<std::string>& command, std::istream& in, std::ostream& out,
          std::ostream& err, const Clock& clock) const;

 private:
  struct Chosen {
    // Usage checks made before connecting (a simple verb's request).
    std::function<Status()> check;
    VerbRun run;
    bool takes_command = false;
  };
  void AddConnectionOptions(CLI::App& verb);

  ConnectionOptions connection_;
  Chosen chosen_;
};

// CLI11 checks by core/names.h's rules: what berthd would refuse is refused
// before any request (and ids are safe in a URL path).
const CLI::Validator& IdRule();
const CLI::Validator& TaskIdRule();
// Adds the required positional id `name` (IdRule) to `verb`.
void AddIdArgument(CLI::App& verb, const char* name, const char* help, std::string& id);

}  // namespace berth::cli
