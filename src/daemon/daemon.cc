#include "daemon/daemon.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "daemon/token.h"

namespace berth::daemon {
namespace {

using api::ApiRequest;
using api::ApiResponse;
using api::Json;

Result<ApiResponse> Answer(Result<Json> result, int status = 200) {
  if (!result.ok()) return result.status();
  return ApiResponse{status, std::move(*result), "", ""};
}

// Decodes the request body, then runs `action` on it.
template <typename Action>
Result<ApiResponse> WithBody(const ApiRequest& request, int status, Action action) {
  Result<Json> body = api::ParseJsonBody(request.body);
  if (!body.ok()) return body.status();
  return Answer(action(*body), status);
}

Status MakeDataDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST) return Status::Ok();
  return Status::Unavailable("cannot create data directory " + dir + ": " + std::strerror(errno));
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::Open(const DaemonOptions& options) {
  BERTH_RETURN_IF_ERROR(MakeDataDir(options.data_dir));
  Result<std::unique_ptr<store::SqliteStore>> store = store::SqliteStore::Open(options.data_dir + "/berth.db");
  if (!store.ok()) return store.status();
  Result<std::string> token = LoadOrCreateToken(options.data_dir);
  if (!token.ok()) return token.status();
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(*store), std::move(*token), options));
  BERTH_RETURN_IF_ERROR(daemon->server_->Start());
  return daemon;
}

Daemon::Daemon(std::unique_ptr<store::SqliteStore> store, std::string token, const DaemonOptions& options)
    : store_(std::move(store)),
      token_(std::move(token)),
      nodes_(*store_),
      server_(std::make_unique<api::ApiServer>(
          api::ApiServerOptions{options.host, options.port, token_, options.max_body_bytes, options.threads})) {
  AddRoutes();
}

Daemon::~Daemon() { Stop(); }

void Daemon::AddRoutes() {
  constexpr const char* kNode = R"(/v1/nodes/([^/]+))";
  server_->Route("GET", "/v1/health", [this](const ApiRequest&) {
    return Answer(Json{{"status", "ok"}, {"revision", store_->revision()}});
  });
  server_->Route("GET", "/metrics", [this](const ApiRequest&) -> Result<ApiResponse> { return Metrics(); });
  server_->Route("POST", "/v1/nodes", [this](const ApiRequest& r) {
    return WithBody(r, 201, [&](const Json& body) { return nodes_.Register(body); });
  });
  server_->Route("GET", "/v1/nodes", [this](const ApiRequest&) { return Answer(nodes_.List()); });
  server_->Route("GET", kNode, [this](const ApiRequest& r) { return Answer(nodes_.Get(r.params[0])); });
  server_->Route("PATCH", kNode, [this](const ApiRequest& r) {
    return WithBody(r, 200, [&](const Json& body) { return nodes_.Update(r.params[0], body); });
  });
  server_->Route("POST", std::string(kNode) + "/drain",
                 [this](const ApiRequest& r) { return Answer(nodes_.Drain(r.params[0])); });
  server_->Route("DELETE", kNode, [this](const ApiRequest& r) -> Result<ApiResponse> {
    BERTH_RETURN_IF_ERROR(nodes_.Remove(r.params[0]));
    return ApiResponse{200, Json{{"removed", r.params[0]}}, "", ""};
  });
}

// Prometheus text format, version 0.0.4.
ApiResponse Daemon::Metrics() const {
  const api::ApiCounters& c = server_->counters();
  std::string text;
  auto counter = [&](const char* name, const char* help, uint64_t value, const char* type = "counter") {
    text += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name +
            " " + std::to_string(value) + "\n";
  };
  counter("berth_http_requests_total", "HTTP requests answered.", c.requests.load());
  counter("berth_http_unauthorized_total", "Requests refused for a missing or wrong token.",
          c.unauthorized.load());
  counter("berth_http_client_errors_total", "Requests answered with a 4xx status.", c.client_errors.load());
  counter("berth_http_server_errors_total", "Requests answered with a 5xx status.", c.server_errors.load());
  counter("berth_store_revision", "Revision of the last committed store transaction.",
          static_cast<uint64_t>(store_->revision()), "gauge");
  return ApiResponse{200, nullptr, text, "text/plain; version=0.0.4"};
}

}  // namespace berth::daemon
