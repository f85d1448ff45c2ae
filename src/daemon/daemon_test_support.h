// DaemonTest: a berthd (Daemon) on a fresh data directory and a free
// loopback port, with an HTTP client that carries its token. Shared by the
// daemon's API tests. Tests only.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "orchestrator/orchestrator.h"
#include "store/test_dir.h"
#include "tls/context.h"

namespace berth::daemon {

using api::Json;

// The name of a service's task from its id "<service>.<slot>.<serial>" or
// "<service>.<node>.<serial>" (orchestrator::TaskId): the id without its
// serial; any other id (a job's "<job>.<n>") as it is. Tests only: a node id
// with dots would be cut wrongly.
inline std::string TaskName(const std::string& id) {
  const size_t last = id.rfind('.');
  if (last == std::string::npos || id.find('.') == last ||
      id.find_first_not_of("0123456789", last + 1) != std::string::npos)
    return id;
  return id.substr(0, last);
}

// Task views ({"tasks": [...]}) by the name users see ("web.1", a job's
// "j.1"), each described by `describe`; when a slot or node has had several
// tasks, "web.1#k" is its k-th, oldest first (by serial).
inline std::map<std::string, std::string> ByTaskName(
    const Json& tasks, const std::function<std::string(const Json&)>& describe) {
  std::map<std::string, std::vector<std::pair<int64_t, std::string>>> by_name;
  for (const Json& t : tasks)
    by_name[t.value("name", t["id"])].emplace_back(
        orchestrator::SerialOf(t["id"].get<std::string>()), describe(t));
  std::map<std::string, std::string> out;
  for (auto& [name, described] : by_name) {
    std::sort(described.begin(), described.end());
    for (size_t k = 0; k < described.size(); ++k)
      out[described.size() == 1 ? name : name + "#" + std::to_string(k + 1)] = described[k].second;
  }
  return out;
}

class DaemonTest : public testing::Test {
 protected:
  void SetUp() override { Open(); }

  // Options for a berthd on `subdir` of the fixture's directory ("data" is
  // the fixture's own) and any free port.
  DaemonOptions Options(const std::string& subdir = "data") const {
    DaemonOptions options;
    options.data_dir = dir_.path() + "/" + subdir;
    options.port = 0;
    options.threads = 2;
    return options;
  }

  // A fixture's changes to the options Open uses.
  virtual void Configure(DaemonOptions&) {}

  // Opens berthd on the fixture's data directory, with a small body limit
  // unless a test needs a larger one.
  void Open(size_t max_body_bytes = 4096) {
    DaemonOptions options = Options();
    options.max_body_bytes = max_body_bytes;
    Configure(options);
    Result<std::unique_ptr<Daemon>> daemon = Daemon::Open(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status().message();
    daemon_ = std::move(*daemon);
    client_ = NewClient();
    client_->set_bearer_token_auth(daemon_->token().c_str());
    opened_revision_ = Revision();
  }

  // A client of the daemon over HTTPS that trusts its CA, with no token.
  std::unique_ptr<httplib::Client> NewClient() const {
    auto client = std::make_unique<httplib::Client>(daemon_->url());
    client->set_ca_cert_store(tls::NewTrustStore(daemon_->client_tls().trust_pem));
    client->enable_server_certificate_verification(true);
    return client;
  }

  // Stops berthd (and its client).
  void Close() {
    client_.reset();
    daemon_.reset();
  }

  // Stops berthd and opens it again on the same data directory.
  void Reopen(size_t max_body_bytes = 4096) {
    Close();
    Open(max_body_bytes);
  }

  // The store revision berthd reports.
  int64_t Revision() { return Call("GET", "/v1/health").second.value("revision", int64_t{-1}); }

  // Status and parsed body of a request.
  std::pair<int, Json> Call(const std::string& method, const std::string& path,
                            const std::string& body = "") {
    httplib::Result r = method == "GET"     ? client_->Get(path.c_str())
                        : method == "POST"  ? client_->Post(path.c_str(), body, "application/json")
                        : method == "PATCH" ? client_->Patch(path.c_str(), body, "application/json")
                                            : client_->Delete(path.c_str());
    if (!r) return {-1, nullptr};
    return {r->status, Json::parse(r->body, nullptr, false)};
  }

  // The value of one metric in GET /metrics.
  std::string Metric(const std::string& name) {
    httplib::Result r = client_->Get("/metrics");
    if (!r) return "";
    const size_t at = r->body.find("\n" + name + " ");
    if (at == std::string::npos) return "";
    const size_t start = at + name.size() + 2;
    return r->body.substr(start, r->body.find('\n', start) - start);
  }

  store::TestDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<httplib::Client> client_;
  int64_t opened_revision_ = 0;  // the store's revision once open (the CA is stored at first)
};

}  // namespace berth::daemon
