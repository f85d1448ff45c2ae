// Daemon: berthd's wiring. Opens the data directory (the SQLite store and
// the API token), registers the API routes (docs/api.md) and serves them.
//
// Wired today: nodes, services, jobs, classes, tasks (with `why`), health
// and metrics; the control loop with fair-share admission, the full-view
// engine and the simulated executor. Not yet: external agents.
//
// Open and Stop from one owning thread; the API runs on the server's threads.
#pragma once

#include <memory>
#include <string>

#include "api/http_server.h"
#include "core/status.h"
#include "daemon/class_registry.h"
#include "daemon/control_loop.h"
#include "daemon/job_registry.h"
#include "daemon/node_registry.h"
#include "daemon/reconciler.h"
#include "daemon/service_registry.h"
#include "store/sqlite_store.h"

namespace berth::daemon {

struct DaemonOptions {
  std::string data_dir = "berth-data";  // created (mode 0700) if absent
  std::string host = "127.0.0.1";
  int port = 7480;  // 0: any free port
  size_t max_body_bytes = 1 << 20;
  int threads = 8;
  ControlLoopOptions loop;
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
  void Stop();
  // Waits until the control loop has acted on every change made so far.
  bool WaitSettled(Duration timeout) { return loop_->WaitSettled(timeout); }

 private:
  Daemon(std::unique_ptr<store::SqliteStore> store, std::string token,
         const DaemonOptions& options);
  void AddRoutes();
  void AddNodeRoutes();
  void AddServiceRoutes();
  void AddTaskRoutes();
  void AddJobRoutes();
  api::ApiResponse Metrics() const;
  template <typename Write>
  Result<api::ApiResponse> Changing(int status, Write write);

  std::unique_ptr<store::SqliteStore> store_;
  std::string token_;
  NodeRegistry nodes_;
  ServiceRegistry services_;
  ClassRegistry classes_;
  SystemClock clock_;
  JobRegistry jobs_;
  Reconciler reconciler_;
  std::unique_ptr<ControlLoop> loop_;
  std::unique_ptr<api::ApiServer> server_;
};

}  // namespace berth::daemon
