// NodeLifecycle: what happens to a placed service task when its node stops
// being fit to run it (docs/berthd.md, "Tasks on drained, down and changed
// nodes"), as SwarmKit's orchestrators (restartTasksByNodeID) and its
// constraint enforcer do:
//  - drained node: the task is stopped (shutdown) and replaced;
//  - down, unknown or disconnected node: once it has been so for its grace
//    (NodeLifecycleOptions::down_grace or unknown_grace) the task is
//    abandoned: desired shutdown, replaced elsewhere, and stopped once the
//    node is ready again, so the node does not run it beside its
//    replacement; within the grace, the task is visited again when it ends;
//  - a running task whose node no longer satisfies one of its service's
//    constraints is stopped and replaced.
// A paused node keeps its tasks (it only takes no new ones). The node
// dispatcher (nodes/node_dispatcher.h) is what marks a berth-node down.
#pragma once

#include <string>

#include "daemon/loop/pass.h"
#include "daemon/nodes/node_lifecycle_options.h"

namespace berth::daemon {

class NodeLifecycle {
 public:
  // `not_ready`: since when each node has been seen not ready
  // (StoredState::not_ready(), a NotReadyClock).
  NodeLifecycle(Pass& pass, NotReadyClock& not_ready, const NodeLifecycleOptions& options)
      : pass_(pass), not_ready_(not_ready), options_(options) {}
  // Takes `e` (a placed task of `service`) off its node when it may not
  // stay, with the reason as its message; whether it did.
  bool LeaveNode(TaskEntry& e, const StoredService& service);

 private:
  void Abandon(TaskEntry& e, std::string message);

  Pass& pass_;
  NotReadyClock& not_ready_;
  const NodeLifecycleOptions& options_;
};

}  // namespace berth::daemon
