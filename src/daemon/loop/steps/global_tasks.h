// GlobalTasks: a global service runs one task on each node that may take
// it. A node without a runnable task of the service (its tally's `covered`)
// gets a pending task preassigned to it, named by
// orchestrator::GlobalTaskId, services by id and nodes by id, as `berth
// plan`'s decoder makes them.
//  - Full view (OnNodes): berthd's own ready, active nodes; a service whose
//    tally or record moved is looked at on every node, the others only on
//    the nodes added or updated since the last pass.
//  - Three-phase (OnAgentNodes): the nodes of the agents where it may run
//    (AgentPlacement::EligibleNodes), the task pinned to its agent; a
//    pending task whose agent answered and no longer offers its node is
//    retired: it could never be placed there.
#pragma once

#include <map>
#include <set>
#include <string>

#include "daemon/loop/pass.h"

namespace berth::daemon {

class GlobalTasks {
 public:
  explicit GlobalTasks(Pass& pass) : pass_(pass) {}
  void OnNodes();
  void OnAgentNodes(AgentPlacement& agents);
  // A pending task of `service` preassigned to `node`, unless a runnable
  // task of it is there already, or (berthd's own nodes) the node is gone,
  // drained or not ready: then null.
  TaskEntry* CoverNode(const std::string& service, uint64_t spec_version, const std::string& node);

 private:
  void RetireUnoffered(
      const std::map<std::string, std::map<std::string, std::set<std::string>>>& offered);

  Pass& pass_;
};

}  // namespace berth::daemon
