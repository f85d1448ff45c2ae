// `berth up`: starts a local Berth in this process: berthd (API, SQLite
// store in --data-dir, control loop) with simulated nodes, so a user can try
// every other command against it. With --local-node it also runs a real
// node, "local" (berth-node's NodeAgent, data in <data-dir>/local-node),
// whose tasks are processes of this machine. With --demo it creates a
// service and prints where its tasks were placed, and with --local-node a
// service "hello" whose one task runs `echo` on the local node, and prints
// its output. Runs until SIGINT or SIGTERM, or stops after printing with
// --once. Call from the main thread.
#pragma once

#include <iosfwd>

#include "daemon/daemon.h"

namespace berth::cli {

struct UpOptions {
  daemon::DaemonOptions daemon;
  int nodes = 3;      // simulated nodes sim-1..sim-N (4 CPUs, 8 GiB, az1..az3), added if absent
  bool demo = false;  // create service "demo" (2 tasks per node, spread over az) if absent
  bool once = false;  // stop once the placements are printed
  bool local_node = false;  // also run the real node "local"
  std::string exec_path;    // berth-exec for the local node's tasks ("": next to this program)
};

// 0 on a clean stop; 1 when berthd cannot start or the demo cannot be set up.
int RunUp(const UpOptions& options, std::ostream& out, std::ostream& err);

}  // namespace berth::cli
