// Tests of the replicas step (replicas.h): a replicated service keeps its replica count, on the
// injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, ScalingDownStopsTheHighestReplicas) {
  AddNode("n1", 8);
  ASSERT_TRUE(services_.Create(Json{{"id", "web"}, {"replicas", 3}}).ok());
  Settle();
  ASSERT_TRUE(services_.Update("web", Json{{"replicas", 1}}).ok());
  Settle();
  EXPECT_EQ(Tasks(),
            (std::map<std::string, std::string>{
                {"web.1", "running@n1"}, {"web.2", "shutdown@n1"}, {"web.3", "shutdown@n1"}}));
  EXPECT_EQ((*WhyTask(store_, "web.3"))["reason"], "scaled down to 1 replicas");
}

}  // namespace
}  // namespace berth::daemon
