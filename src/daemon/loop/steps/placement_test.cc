// Tests of the placement step (placement.h): the full-view engine places what is pending, or says
// why not, on the injected clock and the in-memory store.
#include <gtest/gtest.h>

#include "daemon/loop/reconciler_test_support.h"

namespace berth::daemon {
namespace {

TEST_F(ReconcilerTest, ATaskThatFitsNowhereStaysPendingWithTheEnginesReason) {
  AddNode("n1", 2);
  ASSERT_TRUE(
      services_
          .Create(Json{{"id", "big"}, {"replicas", 1}, {"task", {{"resources", {{"cpu", 8}}}}}})
          .ok());
  Settle();
  const Json why = *WhyTask(store_, "big.1");
  EXPECT_EQ(why["state"], "pending");
  EXPECT_EQ(why["reason"], "no suitable node (insufficient resources on 1 node)");
  const int64_t revision = store_.revision();
  EXPECT_EQ(Settle(), 0);
  EXPECT_EQ(store_.revision(), revision);  // an unchanged reason is not rewritten
}

}  // namespace
}  // namespace berth::daemon
