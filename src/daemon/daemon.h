// Daemon: berthd's wiring. Opens the data directory (the SQLite store and
// the API token), registers the API routes (docs/api.md) and serves them.
//
// This is the first slice of the daemon: nodes, health and metrics, durable
// and authenticated. Services, jobs, tasks, the control loop and agents are
// not wired yet.
//
// Open and Stop from one owning thread; the API runs on the server's threads.
#pragma once

#include <memory>
#include <string>

#include "api/http_server.h"
#include "core/status.h"
#include "daemon/node_registry.h"
#include "store/sqlite_store.h"

namespace berth::daemon {

struct DaemonOptions {
  std::string data_dir = "berth-data";  // created (mode 0700) if absent
  std::string host = "127.0.0.1";
  int port = 7480;                      // 0: any free port
  size_t max_body_bytes = 1 << 20;
  int threads = 8;
};

class Daemon {
 public:
  // Opens the data directory and starts serving. Unavailable: the directory,
  // store or port cannot be used (another berthd holds it); InvalidArgument:
  // the store or token file is not usable.
  static Result<std::unique_ptr<Daemon>> Open(const DaemonOptions& options);
  ~Daemon();

  int port() const { return server_->port(); }
  const std::string& token() const { return token_; }
  void Stop() { server_->Stop(); }

 private:
  Daemon(std::unique_ptr<store::SqliteStore> store, std::string token, const DaemonOptions& options);
  void AddRoutes();
  api::ApiResponse Metrics() const;

  std::unique_ptr<store::SqliteStore> store_;
  std::string token_;
  NodeRegistry nodes_;
  std::unique_ptr<api::ApiServer> server_;
};

}  // namespace berth::daemon
