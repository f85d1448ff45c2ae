// NodeLifecycleOptions: when berthd calls a node down, and when the control
// loop replaces the tasks of a node that is not ready. The node dispatcher
// (node_dispatcher.h) uses the heartbeat fields; the loop's node-lifecycle
// step (loop/steps/node_lifecycle.h) the graces. One struct, so that the
// settings of one behaviour are set in one place (berthd's --heartbeat-*
// and --node-*-grace flags).
#pragma once

#include <chrono>
#include <cstdint>

#include "core/time.h"

namespace berth::daemon {

struct NodeLifecycleOptions {
  // How often nodes heartbeat (told to them in every answer). Default 5 s,
  // SwarmKit's DefaultHeartBeatPeriod.
  Duration heartbeat_period = std::chrono::seconds(5);
  // A node is down after heartbeat_period x grace_multiplier without a
  // heartbeat. Default 3 (SwarmKit's dispatcher: 15 s).
  int64_t grace_multiplier = 3;
  // A node whose state is down has its tasks replaced once it has been down
  // this long. Default 0: at once, as SwarmKit's orchestrator restarts the
  // tasks of a node its dispatcher marked down.
  Duration down_grace{0};
  // A node whose state is unknown or disconnected: default 15 s, the grace
  // SwarmKit's dispatcher gives a node before marking it down (heartbeat
  // period 5 s x grace multiplier 3).
  Duration unknown_grace{15'000};

  // How long a node may go without a heartbeat before it is down.
  Duration heartbeat_grace() const { return heartbeat_period * grace_multiplier; }
};

}  // namespace berth::daemon
