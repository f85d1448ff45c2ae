// History: what the clients of a failover test saw, and the checker that
// judges it afterwards.
//
// Clients record every create they send (acknowledged or not) and every
// read of the cluster (a Snapshot: tasks, nodes, service and job ids, and
// the store revision it was served at); after the run, one last read is the
// final state. Check then verifies the rules an HA berthd must keep however
// its replicas fail over:
//   1. every acknowledged create is in the final state exactly once (a
//      create that failed or timed out may or may not be there), and no id
//      was acknowledged twice;
//   2. a task, once seen bound to a node, is never seen bound to another,
//      in any read by any client or in the final state;
//   3. in every snapshot, what the tasks holding resources on a node
//      reserve (HoldsResources) fits in that node's capacity;
//   4. each client's reads never go back in revision.
//
// Plain values and pure functions: build a History on one thread (or give
// each client its own and append them), then Check it from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/task.h"

namespace berth::history {

// CPU and memory: what a node has, or what a task reserves on it.
struct Resources {
  int64_t milli_cpu = 0;
  int64_t memory_bytes = 0;
  bool operator==(const Resources&) const = default;
};

// The kinds of object a client creates through the API.
enum class ObjectKind { kNode, kService, kJob };
std::string_view ToString(ObjectKind kind);
Result<ObjectKind> ParseObjectKind(std::string_view text);

// One create a client sent. Ids are unique per create: a test never sends
// two creates of one id on purpose (a retry after a timeout answers 409,
// which is not an acknowledgement).
struct Write {
  std::string client;
  int64_t time_ms = 0;  // when it was sent, on the run's clock (only shown)
  ObjectKind kind = ObjectKind::kService;
  std::string id;
  bool acknowledged = false;  // a 2xx answer came
  std::string error;          // why not, when not acknowledged (only shown)
  bool operator==(const Write&) const = default;
};

// A task as one read showed it.
struct ObservedTask {
  std::string id;
  std::string service;  // "" for a job's task
  uint64_t slot = 0;    // a replica's slot; 0: none
  std::string node;     // "" while not bound
  TaskState state = TaskState::kNew;
  // What its version's template reserves; counted on `node` only while it
  // holds resources (HoldsResources).
  Resources reservations;
  bool operator==(const ObservedTask&) const = default;
};

struct ObservedNode {
  std::string id;
  Resources capacity;
  bool operator==(const ObservedNode&) const = default;
};

// One read of the cluster by one client. Its lists need not be one atomic
// read: a task bound to a node missing from `nodes` (removed between the
// two requests) is left out of rule 3.
struct Snapshot {
  std::string client;
  int64_t time_ms = 0;   // when the read started, on the run's clock
  int64_t revision = 0;  // the store revision it was served at
  std::vector<ObservedTask> tasks;
  std::vector<ObservedNode> nodes;
  std::vector<std::string> services, jobs;  // the ids listed, as listed
  bool operator==(const Snapshot&) const = default;
};

struct History {
  std::vector<Write> writes;
  // Each client's reads in the order it made them (clients may interleave).
  std::vector<Snapshot> reads;
  // The read after the run; rule 1 checks it, and rules 2 to 4 take it as
  // its client's last read.
  std::optional<Snapshot> final_state;
  bool operator==(const History&) const = default;
};

// Whether a task in `state` holds its reservations on its node: from
// assigned to running, as berthd counts them (ClusterState's tracking,
// GET /v1/nodes/{id}'s `allocated`). A pending task with its node preset
// does not yet; an ended one no longer does.
inline bool HoldsResources(TaskState state) {
  return state >= TaskState::kAssigned && state <= TaskState::kRunning;
}

// Every broken rule, one message each, naming the ids, nodes, clients and
// revisions involved; empty when the history is valid. Rules in order 1 to
// 4, each in the order of the history.
std::vector<std::string> Check(const History& history);

}  // namespace berth::history
