// Test support for the control loop's steps: a berthd control loop on the
// injected clock and the in-memory store, with helpers to drive and read it
// (LifecycleCluster, LifecycleTest), and an executor that fails the tasks
// of chosen nodes (FailOnNodes).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "daemon/daemon_test_support.h"
#include "daemon/loop/reconciler.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "daemon/registry/task_views.h"
#include "executor/simulated_executor.h"
#include "orchestrator/orchestrator.h"
#include "store/memory_store.h"

namespace berth::daemon {

using api::Json;
using std::chrono::seconds;

// The simulated executor, except that a task started on one of `failing`
// fails as soon as a pass checks it.
class FailOnNodes final : public executor::Executor {
 public:
  std::optional<std::string> Start(const executor::TaskToRun& task, Timestamp now) override {
    return simulated_.Start(task, now);
  }
  std::optional<executor::Ended> Check(const executor::TaskToRun& task, Timestamp now,
                                       std::optional<Timestamp>* due) override {
    if (failing.contains(task.node)) return executor::Ended{true, 0, "failed (test)"};
    return simulated_.Check(task, now, due);
  }
  void Stop(const executor::TaskToRun&) override {}
  std::set<std::string> failing;

 private:
  executor::SimulatedExecutor simulated_;
};

// A berthd control loop on the injected clock and an in-memory store, with
// helpers to drive and read it.
class LifecycleCluster {
 public:
  // `executor`: what runs the placed tasks (not owned); null: FailOnNodes.
  explicit LifecycleCluster(ReconcilerOptions options = {}, executor::Executor* executor = nullptr)
      : options_(options), runs_tasks_(executor != nullptr ? executor : &executor_) {}
  void AddNode(const std::string& id, Json labels = Json::object()) {
    ASSERT_TRUE(
        nodes_
            .Register(Json{
                {"id", id}, {"labels", labels}, {"resources", {{"cpu", 4}, {"memory", "8Gi"}}}})
            .ok());
  }
  void CreateService(Json service) {
    Result<Json> created = services_.Create(service);
    ASSERT_TRUE(created.ok()) << created.status().message();
  }
  void UpdateNode(const std::string& id, const Json& patch) {
    ASSERT_TRUE(nodes_.Update(id, patch).ok()) << patch.dump();
  }
  // Runs passes until one changes nothing.
  void Settle() {
    for (int i = 0; i < 10; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      ASSERT_TRUE(pass.ok()) << pass.status().message();
      if (!pass->wrote) return;
    }
    FAIL() << "no settled state after 10 passes";
  }
  void Advance(Duration d) {
    clock_.Advance(d);
    Settle();
  }
  // name -> "state@node" of each task, a slot's tasks as "web.1#k", oldest
  // first, when it has had several.
  std::map<std::string, std::string> Tasks(const std::string& service = "") {
    const Json listed = (*ListTasks(store_, service))["tasks"];
    return ByTaskName(listed, [](const Json& t) {
      return t["state"].get<std::string>() + "@" + t.value("node", "");
    });
  }
  Json Task(const std::string& id_or_name) { return *GetTask(store_, id_or_name); }
  // "v<version> <state>" -> count, over the service's tasks meant to run.
  std::map<std::string, int> Versions(const std::string& service) {
    std::map<std::string, int> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t["desired_state"] != "shutdown")
        ++out["v" + t["spec_version"].dump() + " " + t["state"].get<std::string>()];
    return out;
  }
  Json UpdateStatus(const std::string& service) {
    Result<std::optional<store::StoredObject>> stored = store_.Get("update", service);
    return stored.ok() && stored->has_value() ? Json::parse((*stored)->body) : Json();
  }
  // The id of the k-th task (oldest first) named `name`.
  std::string IdOf(const std::string& name, size_t k) {
    std::vector<std::pair<int64_t, std::string>> ids;
    const Json listed = (*ListTasks(store_, ""))["tasks"];
    for (const Json& t : listed)
      if (t.value("name", "") == name)
        ids.emplace_back(orchestrator::SerialOf(t["id"].get<std::string>()), t["id"]);
    std::sort(ids.begin(), ids.end());
    return k >= 1 && k <= ids.size() ? ids[k - 1].second : "";
  }

  // The service's tasks meant to run, by their state ("running", ...).
  std::map<std::string, std::set<std::string>> IdsByState(const std::string& service) {
    std::map<std::string, std::set<std::string>> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t.value("desired_state", "running") == "running")
        out[t["state"]].insert(t["id"].get<std::string>());
    return out;
  }
  // node -> the service's running tasks there.
  std::map<std::string, int> RunningPerNode(const std::string& service) {
    std::map<std::string, int> out;
    const Json listed = (*ListTasks(store_, service))["tasks"];
    for (const Json& t : listed)
      if (t["state"] == "running" && t.value("desired_state", "running") == "running")
        ++out[t["node"]];
    return out;
  }
  // Runs passes one at a time (the clock moves 250 ms after a pass that
  // changed nothing) until the service's rollout of its current version
  // (which a pass may make) is no longer under way, checking after every
  // pass that `replicas` tasks run and that at most `most` are meant to
  // run. False after 400 passes.
  bool RollOutCheckingEachPass(const std::string& service, int replicas, int most) {
    for (int i = 0; i < 400; ++i) {
      Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
      EXPECT_TRUE(pass.ok()) << pass.status().message();
      if (!pass.ok()) return false;
      std::map<std::string, std::set<std::string>> ids = IdsByState(service);
      size_t meant = 0;
      for (const auto& [state, of] : ids) meant += of.size();
      EXPECT_GE(ids["running"].size(), static_cast<size_t>(replicas)) << "pass " << i;
      EXPECT_LE(meant, static_cast<size_t>(most)) << "pass " << i;
      const Json status = UpdateStatus(service);
      const Json version = (*services_.Get(service))["spec_version"];
      if (!pass->wrote && status.is_object() && status["spec_version"] == version &&
          status["state"] != "updating")
        return true;
      if (!pass->wrote) clock_.Advance(Duration{250});
    }
    return false;
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store_{std::make_shared<store::MemoryStore>()};
  NodeRegistry nodes_{store_};
  ServiceRegistry services_{store_};
  ReconcilerOptions options_;
  FailOnNodes executor_;
  executor::Executor* runs_tasks_;
  Reconciler reconciler_{store_, nullptr, &clock_, options_, runs_tasks_};
};

class LifecycleTest : public testing::Test, public LifecycleCluster {};

}  // namespace berth::daemon
