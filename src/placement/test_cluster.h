// TestCluster: terse construction of ClusterStates for the placement tests.
// Test-only; not part of the engine.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "placement/cluster_state.h"
#include "placement/scheduler.h"

namespace berth::placement::testing {

inline Timestamp At(int64_t seconds) { return Timestamp{Duration{seconds * 1000}}; }

inline Node MakeNode(std::string id, NodeState state = NodeState::kReady) {
  Node n;
  n.id = std::move(id);
  n.state = state;
  return n;
}

inline std::shared_ptr<TaskSpec> MakeSpec() { return std::make_shared<TaskSpec>(); }

// A ready node with `milli_cpu` of CPU, and a spec that reserves `milli_cpu`.
inline Node NodeWithCpu(std::string id, int64_t milli_cpu) {
  Node n = MakeNode(std::move(id));
  n.resources.milli_cpu = milli_cpu;
  return n;
}
inline std::shared_ptr<TaskSpec> SpecReservingCpu(int64_t milli_cpu) {
  auto spec = MakeSpec();
  spec->reservations.milli_cpu = milli_cpu;
  return spec;
}

class TestCluster {
 public:
  NodeIndex Add(Node node) {
    auto r = state.AddNode(std::move(node));
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  }
  TaskIndex AddTask(std::string id, std::string service, std::shared_ptr<const TaskSpec> spec,
                    TaskState st = TaskState::kPending, std::string node = "",
                    std::optional<uint64_t> version = 1, Timestamp updated = {}) {
    Task t;
    t.id = std::move(id);
    t.service_id = std::move(service);
    t.spec = std::move(spec);
    t.state = st;
    t.node_id = std::move(node);
    t.spec_version = version;
    t.updated_at = updated;
    auto r = state.AddTask(t);
    EXPECT_TRUE(r.ok()) << r.status().message();
    return *r;
  }
  // Adds `count` pending tasks "<prefix>0".. of one service version.
  void AddPending(const std::string& prefix, const std::string& service,
                  std::shared_ptr<const TaskSpec> spec, int count,
                  std::optional<uint64_t> version = 1) {
    for (int i = 0; i < count; ++i)
      AddTask(prefix + std::to_string(i), service, spec, TaskState::kPending, "", version);
  }

  PassResult Schedule(Timestamp now = At(1000), SchedulerOptions options = {}) {
    Scheduler scheduler(state, options);
    return scheduler.SchedulePending(now);
  }

  // task id -> node id ("" when pending) for the decisions of one pass.
  std::map<std::string, std::string> Placements(const PassResult& r) const {
    std::map<std::string, std::string> out;
    for (const Decision& d : r.decisions)
      out[state.task(d.task).id] = d.node == kNoNode ? "" : state.node(d.node).node().id;
    return out;
  }
  // node id -> number of tasks a pass assigned to it.
  std::map<std::string, int> CountsByNode(const PassResult& r) const {
    std::map<std::string, int> out;
    for (const Decision& d : r.decisions)
      if (d.node != kNoNode) ++out[state.node(d.node).node().id];
    return out;
  }
  std::string MessageOf(const PassResult& r, const std::string& task_id) const {
    for (const Decision& d : r.decisions)
      if (state.task(d.task).id == task_id) return r.MessageOf(d);
    return "<no decision>";
  }

  ClusterState state;
};

}  // namespace berth::placement::testing
