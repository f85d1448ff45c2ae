// FullView against `berth plan`: after each change, the tasks berthd's
// long-lived engine places in a pass go where api::PlanPlacement sends them
// on a placement document of the same stored state (the way berthd placed
// before FullView, and the way `berth plan` does).
#include "daemon/loop/full_view.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "api/plan_codec.h"
#include "daemon/daemon_test_support.h"
#include "daemon/loop/reconciler.h"
#include "daemon/registry/node_registry.h"
#include "daemon/registry/service_registry.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

using api::Json;
using Placed = std::map<std::string, std::string>;  // task name -> node

class FullViewTest : public testing::Test {
 protected:
  void AddNode(const std::string& id, const std::string& az, int cpu) {
    ASSERT_TRUE(nodes_
                    .Register(Json{{"id", id},
                                   {"labels", {{"az", az}}},
                                   {"resources", {{"cpu", cpu}, {"memory", "8Gi"}}}})
                    .ok());
  }
  std::vector<Json> List(const std::string& kind) {
    std::vector<Json> out;
    Result<std::vector<store::StoredObject>> listed = store_.List(kind);
    EXPECT_TRUE(listed.ok());
    for (const store::StoredObject& o : *listed) {
      out.push_back(Json::parse(o.body));
      out.back()["id"] = o.id;  // a task's body leaves it to the store's key
    }
    return out;
  }
  // The placement document of the stored state, as berthd built it before.
  Json Document() {
    Json doc = {{"now", FormatRfc3339(clock_.Now())},
                {"nodes", Json::array()},
                {"services", Json::array()},
                {"tasks", Json::array()}};
    for (Json n : List("node")) {
      n.erase("slots");
      doc["nodes"].push_back(n);
    }
    for (Json s : List("service")) {
      for (const char* berthd_only : ServiceRegistry::kBerthdFields) s.erase(berthd_only);
      doc["services"].push_back(s);
    }
    std::map<std::string, Json> nodes;
    for (const Json& n : doc["nodes"]) nodes[n["id"]] = n;
    std::map<std::string, Json> services;
    for (const Json& s : doc["services"]) services[s["id"]] = s;
    for (Json t : List("task")) {
      // What the pass's stop step does before placing: a task on a removed
      // or drained node, or on one that no longer satisfies its service's
      // constraints (here "node.labels.<k>==<v>" only), or of an older
      // version, is shut down by the pass and leaves the engine's view.
      const Json& service = services.at(t["service"]);
      if (t.contains("node")) {
        if (!nodes.contains(t["node"])) continue;
        const Json& node = nodes.at(t["node"]);
        if (node.value("availability", "active") == "drain") continue;
        bool fits = true;
        for (const std::string c : service["task"].value("constraints", Json::array())) {
          const size_t eq = c.find("==");
          const std::string key = c.substr(std::string("node.labels.").size(), eq - 12);
          fits = fits && node.value("labels", Json::object()).value(key, "") == c.substr(eq + 2);
        }
        if (!fits && t["state"] != "pending") continue;
      }
      if (t["spec_version"] < service["spec_version"]) continue;
      for (const char* berthd_only : {"message", "job", "name", "run", "admitted_at", "started_at",
                                      "assigned_at", "agent", "slot", "restart_at", "created_at"})
        t.erase(berthd_only);
      // A plan numbers a service's tasks by their ids, berthd by their
      // slots: the document names each task as its slot.
      t["id"] = TaskName(t["id"]);
      doc["tasks"].push_back(t);
    }
    return doc;
  }
  Placed PlanOf(const Json& doc) {
    Result<api::PlacementPlan> plan = api::PlanPlacement(doc, clock_.Now());
    EXPECT_TRUE(plan.ok()) << plan.status().message();
    Placed out;
    if (plan.ok())
      for (const auto& a : plan->output["assignments"]) out[TaskName(a["task"])] = a["node"];
    return out;
  }
  // The tasks one pass assigns.
  Placed Pass() {
    Placed before = Assigned();
    Result<PassSummary> pass = reconciler_.RunPass(clock_.Now());
    EXPECT_TRUE(pass.ok()) << pass.status().message();
    Placed placed;
    for (const auto& [task, node] : Assigned())
      if (!before.contains(task)) placed[task] = node;
    return placed;
  }
  Placed Assigned() {
    Placed out;
    for (const Json& t : List("task"))
      if (t["state"] == "assigned") out[TaskName(t["id"])] = t["node"];
    return out;
  }
  // One pass, checked against the plan of the state it started from (and
  // placing something, or the check proves little); then passes until
  // nothing changes.
  void PassMatchesPlan() {
    const Placed planned = PlanOf(Document());
    EXPECT_FALSE(planned.empty());
    EXPECT_EQ(Pass(), planned);
    for (int i = 0; i < 5 && reconciler_.RunPass(clock_.Now())->wrote; ++i) {
    }
  }

  ManualClock clock_{*ParseRfc3339("2026-01-01T00:00:00Z")};
  store::WatchedStore store_{std::make_shared<store::MemoryStore>()};
  NodeRegistry nodes_{store_};
  ServiceRegistry services_{store_};
  Reconciler reconciler_{store_, nullptr, &clock_};
};

TEST_F(FullViewTest, EachPassPlacesAsThePlanOfItsStoredState) {
  for (int i = 0; i < 6; ++i) AddNode("n" + std::to_string(i), i % 3 == 0 ? "a" : "b", 4);
  ASSERT_TRUE(services_
                  .Create(Json{{"id", "web"},
                               {"replicas", 9},
                               {"task",
                                {{"resources", {{"cpu", "500m"}}},
                                 {"preferences", {{{"spread", "node.labels.az"}}}}}}})
                  .ok());
  ASSERT_TRUE(
      services_
          .Create(
              Json{{"id", "db"},
                   {"replicas", 3},
                   {"update_config", {{"parallelism", 0}}},  // all at once
                   {"task", {{"resources", {{"cpu", 2}}}, {"constraints", {"node.labels.az==b"}}}}})
          .ok());
  ASSERT_TRUE(services_.Create(Json{{"id", "mon"}, {"mode", "global"}}).ok());
  PassMatchesPlan();
  // Kept engine state: scale up (no node changed, so no reload).
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 14}}).ok());
  PassMatchesPlan();
  // A node joins (the engine adds it) and a new version replaces db's
  // tasks.
  AddNode("n6", "a", 8);
  ASSERT_TRUE(services_.Update("db", Json{{"task", {{"resources", {{"cpu", 1}}}}}}).ok());
  PassMatchesPlan();
  // Nodes change in place: one is drained, one moves to another az (the
  // engine updates them, keeping what their tasks hold).
  ASSERT_TRUE(nodes_.Drain("n2").ok());
  ASSERT_TRUE(nodes_.Update("n4", Json{{"labels", {{"az", "a"}}}}).ok());
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 18}}).ok());
  PassMatchesPlan();
  // A node leaves: its tasks are orphaned and replaced elsewhere.
  ASSERT_TRUE(nodes_.Remove("n1").ok());
  PassMatchesPlan();
}

}  // namespace
}  // namespace berth::daemon
