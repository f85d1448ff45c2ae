#include "daemon/registry/node_registry.h"

#include <gtest/gtest.h>

#include "daemon/registry/job_registry.h"
#include "daemon/registry/service_registry.h"
#include "store/memory_store.h"

namespace berth::daemon {
namespace {

using api::Json;

class NodeRegistryTest : public testing::Test {
 protected:
  store::MemoryStore store_;
  NodeRegistry nodes_{store_};
};

TEST_F(NodeRegistryTest, RegisterGetListRemove) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "n2"}, {"labels", {{"az", "a"}}}}).ok());
  Result<Json> n1 = nodes_.Register(Json{{"id", "n1"}, {"resources", {{"cpu", 4}}}});
  ASSERT_TRUE(n1.ok()) << n1.status().message();
  EXPECT_EQ((*n1)["revision"], 2);
  EXPECT_EQ((*nodes_.Get("n2"))["labels"]["az"], "a");
  const Json list = *nodes_.List();
  ASSERT_EQ(list["nodes"].size(), 2u);
  EXPECT_EQ(list["nodes"][0]["id"], "n1");
  ASSERT_TRUE(nodes_.Remove("n1").ok());
  EXPECT_EQ(nodes_.Get("n1").status().message(), "no node 'n1'");
  EXPECT_EQ(nodes_.Remove("n1").code(), StatusCode::kNotFound);
}

TEST_F(NodeRegistryTest, ADuplicateIdIsAConflictAndKeepsTheFirst) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "n1"}, {"hostname", "first"}}).ok());
  Result<Json> again = nodes_.Register(Json{{"id", "n1"}, {"hostname", "second"}});
  EXPECT_EQ(again.status().code(), StatusCode::kConflict);
  EXPECT_EQ(again.status().message(), "node 'n1' already exists");
  EXPECT_EQ((*nodes_.Get("n1"))["hostname"], "first");
}

TEST_F(NodeRegistryTest, InvalidNodesNameTheFieldAndChangeNothing) {
  EXPECT_EQ(nodes_.Register(Json{{"id", "n1"}, {"colour", "red"}}).status().message(),
            "unknown field 'colour'");
  EXPECT_EQ(nodes_.Register(Json{{"hostname", "h"}}).status().message(), "missing field 'id'");
  EXPECT_EQ(nodes_.Register(Json{{"id", "n1"}, {"state", "sleepy"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_.revision(), 0);
}

TEST_F(NodeRegistryTest, UpdateAndDrainKeepOtherFields) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "n1"}, {"hostname", "h1"}}).ok());
  Result<Json> updated = nodes_.Update("n1", Json{{"state", "down"}, {"labels", {{"az", "b"}}}});
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_EQ((*updated)["state"], "down");
  EXPECT_EQ((*updated)["hostname"], "h1");
  Result<Json> drained = nodes_.Drain("n1");
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ((*drained)["availability"], "drain");
  EXPECT_EQ((*drained)["labels"]["az"], "b");
  EXPECT_EQ(nodes_.Update("n1", Json{{"id", "other"}}).status().message(), "unknown field 'id'");
  EXPECT_EQ(nodes_.Update("n1", Json{{"availability", "gone"}}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*nodes_.Get("n1"))["availability"], "drain");
  EXPECT_EQ(nodes_.Drain("nope").status().code(), StatusCode::kNotFound);
}

TEST_F(NodeRegistryTest, AReadyNodeIsRemovedOnlyWithForceAndNotIfItChangedMeanwhile) {
  ASSERT_TRUE(nodes_.Register(Json{{"id", "n1"}}).ok());
  Result<store::StoredObject> loaded = nodes_.Load("n1");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(nodes_.Remove(*loaded, false).code(), StatusCode::kConflict);
  ASSERT_TRUE(nodes_.Update("n1", Json{{"state", "down"}}).ok());
  // Loaded while ready, changed since: the removal does not act on what it read.
  EXPECT_EQ(nodes_.Remove(*loaded, true).code(), StatusCode::kConflict);
  EXPECT_TRUE(nodes_.Remove(*nodes_.Load("n1"), false).ok());
  EXPECT_EQ(nodes_.Load("n1").status().code(), StatusCode::kNotFound);
}

// Defect 7: a port in ingress mode (the default, and Docker's short form
// --publish 8080:80) was accepted though Berth has no routing mesh. The
// service and job registries share this file (berth_daemon_test lists it).
TEST_F(NodeRegistryTest, ServicesAndJobsRefuseIngressPortsWithTheFix) {
  ServiceRegistry services(store_);
  ManualClock clock{Timestamp{Duration{1'000'000}}};
  JobRegistry jobs(store_, clock);
  const Json ingress = {{"ports", {{{"published", 8080}, {"target", 80}}}}};
  const Json host = {{"ports", {{{"published", 8080}, {"target", 80}, {"mode", "host"}}}}};
  const std::string why =
      "task.ports[0].mode: ingress mode (the default) publishes through a routing mesh, which "
      "Berth does not have: nothing would listen on port 8080 or route it to the tasks. Use "
      "\"mode\": \"host\", which books the published port on the node each task runs on "
      "(berth: --publish mode=host,target=80,published=8080)";
  const int64_t revision = store_.revision();
  Result<Json> created = services.Create(Json{{"id", "web"}, {"replicas", 2}, {"task", ingress}});
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(created.status().message(), why);
  Json explicit_ingress = ingress;
  explicit_ingress["ports"][0]["mode"] = "ingress";
  EXPECT_EQ(services.Create(Json{{"id", "web"}, {"task", explicit_ingress}}).status().message(),
            "task.ports[0].mode: ingress mode publishes through a routing mesh, which Berth does "
            "not have: nothing would listen on port 8080 or route it to the tasks. Use "
            "\"mode\": \"host\", which books the published port on the node each task runs "
            "on (berth: --publish mode=host,target=80,published=8080)");
  Result<Json> job = jobs.Submit(
      Json{{"id", "batch"}, {"requestor", "r"}, {"task", ingress}, {"tasks", {Json::object()}}});
  EXPECT_EQ(job.status().message(), why);
  EXPECT_EQ(store_.revision(), revision);  // refused: nothing written
  // Host mode is what Berth does: the port is booked on the task's node.
  ASSERT_TRUE(services.Create(Json{{"id", "web"}, {"replicas", 2}, {"task", host}}).ok());
  EXPECT_EQ(services.Update("web", Json{{"task", ingress}}).status().message(), why);
  EXPECT_TRUE(services.Update("web", Json{{"replicas", 3}}).ok());
  // A service stored before the rule, with an ingress port, can still be scaled.
  Json stored = Json::parse((*store_.Get("service", "web"))->body);
  stored["task"] = ingress;
  ASSERT_TRUE(store_.Commit({store::Write::Put("service", "web", stored.dump())}).ok());
  EXPECT_TRUE(services.Update("web", Json{{"replicas", 4}}).ok());
  EXPECT_TRUE(
      jobs
          .Submit(Json{
              {"id", "batch"}, {"requestor", "r"}, {"task", host}, {"tasks", {Json::object()}}})
          .ok());
}

}  // namespace
}  // namespace berth::daemon
