#include "daemon/registry/node_registry.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace berth::daemon
