#include "cli/verb.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <ostream>
#include <sstream>

#include "cli/output.h"
#include "core/names.h"

namespace berth::cli {
namespace {

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value && *value ? value : fallback;
}

CLI::Validator NameRule(Status (*check)(std::string_view), const char* description) {
  return CLI::Validator(
      [check](std::string& value) {
        Status valid = check(value);
        return valid.ok() ? std::string() : valid.message();
      },
      description);
}

// How a simple verb runs once its request is built.
int CallAndPrint(const Request& request, const OneRequest& verb, const VerbContext& context) {
  std::optional<Json> answer =
      CallOrSay(context.client, request.method, request.path, request.body, context.err);
  if (!answer) return 1;
  if (context.json)
    context.out << answer->dump(2) << "\n";
  else if (answer->contains("removed"))
    context.out << "removed " << Text((*answer)["removed"]) << "\n";
  else
    verb.print(*answer, context.out);
  return 0;
}

}  // namespace

namespace {

// A file's text; "" when `path` is empty, or absent and `optional`.
Result<std::string> ReadTlsFile(const std::string& path, const char* flag, bool optional) {
  if (path.empty()) return std::string();
  std::ifstream file(path);
  if (!file) {
    if (optional) return std::string();
    return Status::InvalidArgument(std::string(flag) + ": cannot read " + path);
  }
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

Status ResolveTls(ConnectionOptions& o) {
  const std::string cert_path = EnvOr("BERTH_CERT_PATH", "");
  const bool from_env = !cert_path.empty();
  struct File {
    const std::string& given;
    std::string fallback;
    const char* flag;
    std::string* out;
  };
  for (const File& f :
       {File{o.tls_ca, from_env ? cert_path + "/ca.pem" : o.data_dir + "/ca.pem", "--tlscacert",
             &o.tls.trust_pem},
        File{o.tls_cert, from_env ? cert_path + "/cert.pem" : "", "--tlscert", &o.tls.cert_pem},
        File{o.tls_key, from_env ? cert_path + "/key.pem" : "", "--tlskey", &o.tls.key_pem}}) {
    Result<std::string> text =
        ReadTlsFile(f.given.empty() ? f.fallback : f.given, f.flag, f.given.empty());
    if (!text.ok()) return text.status();
    *f.out = std::move(*text);
  }
  if (o.tls.cert_pem.empty() != o.tls.key_pem.empty()) {
    if (!o.tls_cert.empty() || !o.tls_key.empty())
      return Status::InvalidArgument("--tlscert and --tlskey go together");
    o.tls.cert_pem.clear();  // $BERTH_CERT_PATH with only one of them: present none
    o.tls.key_pem.clear();
  }
  if (!o.tls_verify)
    return Status::InvalidArgument(
        "--tlsverify=false: berth always verifies berthd's certificate (give its CA with "
        "--tlscacert, or plain HTTP with an http:// --server on a loopback berthd)");
  return Status::Ok();
}

}  // namespace

Result<ConnectionOptions> ResolveConnection(ConnectionOptions options) {
  if (options.server.empty()) options.server = EnvOr("BERTH_SERVER", "https://127.0.0.1:7480");
  options.server = api::WithScheme(options.server, true);
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
  if (options.server.rfind("https://", 0) == 0) BERTH_RETURN_IF_ERROR(ResolveTls(options));
  return options;
}

std::optional<Json> CallOrSay(api::ApiClient& client, const std::string& method,
                              const std::string& path, const Json& body, std::ostream& err) {
  Result<Json> answer = client.Call(method, path, body);
  if (answer.ok()) return std::move(*answer);
  err << "berth: " << answer.status().message() << "\n";
  return std::nullopt;
}

CLI::App* Verbs::Add(CLI::App& noun, const char* name, const char* help, VerbRun run,
                     TakesCommand command) {
  CLI::App* verb = noun.add_subcommand(name, help);
  AddConnectionOptions(*verb);
  verb->callback([this, run = std::move(run), command] {
    chosen_ = {nullptr, run, command == TakesCommand::kYes};
  });
  return verb;
}

// The request is built once, before connecting: a usage error exits 2
// whether or not berthd can be reached.
void Verbs::AddTable(CLI::App& noun, const std::vector<SimpleVerb>& table) {
  for (const SimpleVerb& simple : table) {
    CLI::App* verb = noun.add_subcommand(simple.name, simple.help);
    AddConnectionOptions(*verb);
    auto one = std::make_shared<OneRequest>(simple.define(*verb));
    verb->callback([this, one] {
      auto request = std::make_shared<Result<Request>>(Status::Internal("not built"));
      chosen_.check = [one, request] {
        *request = one->build();
        return request->status();
      };
      chosen_.run = [one, request](const VerbContext& context) {
        return CallAndPrint(**request, *one, context);
      };
      chosen_.takes_command = false;
    });
  }
}

int Verbs::Run(const std::vector<std::string>& command, std::istream& in, std::ostream& out,
               std::ostream& err, const Clock& clock) const {
  if (chosen_.check) {
    if (Status usable = chosen_.check(); !usable.ok()) {
      err << "berth: " << usable.message() << "\n";
      return 2;
    }
  }
  Result<ConnectionOptions> connection = ResolveConnection(connection_);
  if (!connection.ok()) {
    err << "berth: " << connection.status().message() << "\n";
    return 2;
  }
  api::ApiClient client(connection->server, connection->token, 30, connection->tls);
  Terminal terminal;
  winsize size{};
  if (&out == &std::cout && isatty(STDOUT_FILENO) == 1 &&
      ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0)
    terminal = {size.ws_col, size.ws_row};
  return chosen_.run(
      {client, connection->output == "json", command, out, err, in, clock, terminal});
}

void Verbs::AddConnectionOptions(CLI::App& verb) {
  verb.add_option("--server", connection_.server,
                  "berthd's address (default $BERTH_SERVER or https://127.0.0.1:7480)");
  verb.add_option("--token", connection_.token,
                  "API token (default $BERTH_TOKEN or the data directory's token file)");
  verb.add_option(
      "--data-dir", connection_.data_dir,
      "berthd's data directory, for its token (default $BERTH_DATA_DIR or ./berth-data)");
  verb.add_option("--tlscacert", connection_.tls_ca,
                  "CA certificate berthd's must chain to (default $BERTH_CERT_PATH/ca.pem or "
                  "the data directory's ca.pem)");
  verb.add_option("--tlscert", connection_.tls_cert,
                  "client certificate to present (default $BERTH_CERT_PATH/cert.pem)");
  verb.add_option("--tlskey", connection_.tls_key,
                  "key of --tlscert (default $BERTH_CERT_PATH/key.pem)");
  verb.add_flag("--tlsverify,!--no-tlsverify", connection_.tls_verify,
                "verify berthd's certificate (always; as Docker's flag)");
  verb.add_option("-o,--output", connection_.output, "output format")
      ->check(CLI::IsMember({"table", "json"}));
}

const CLI::Validator& IdRule() {
  static const CLI::Validator rule = NameRule(CheckId, "ID");
  return rule;
}

const CLI::Validator& TaskIdRule() {
  static const CLI::Validator rule = NameRule(CheckTaskId, "TASK ID");
  return rule;
}

void AddIdArgument(CLI::App& verb, const char* name, const char* help, std::string& id) {
  verb.add_option(name, id, help)->check(IdRule())->required();
}

}  // namespace berth::cli
