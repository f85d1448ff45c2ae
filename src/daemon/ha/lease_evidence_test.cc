#include "daemon/ha/lease_evidence.h"

#include <gtest/gtest.h>

namespace berth::daemon {
namespace {

using View = store::EtcdClient::RaftView;  // {member id, leader it knows, applied term}

// Three members; etcd's leader was member 1 at term 7 when the last
// keepalive was confirmed.
class LeaseEvidenceTest : public ::testing::Test {
 protected:
  LeaseEvidenceTest() { evidence_.Confirmed(7); }
  std::optional<Timestamp> Look(std::vector<View> views, int64_t at_ms) {
    return evidence_.Look(views, Timestamp(Duration(at_ms)));
  }
  LeaseEvidence evidence_;
};

TEST_F(LeaseEvidenceTest, ANewLeaderSeenBehindBeforeProvesTheLeaseFromThatLook) {
  // Member 1 died; 2 and 3 still know it, then elect 3 at term 9.
  EXPECT_EQ(Look({{2, 1, 7}, {3, 1, 7}}, 1000), std::nullopt);
  EXPECT_EQ(Look({{2, 0, 7}, {3, 0, 7}}, 1500), std::nullopt);  // leaderless, same applied term
  EXPECT_EQ(Look({{2, 3, 9}, {3, 3, 9}}, 2500), Timestamp(Duration(1500)));
}

TEST_F(LeaseEvidenceTest, AnotherMemberMayNameTheNewLeader) {
  EXPECT_EQ(Look({{2, 1, 7}, {3, 0, 7}}, 1000), std::nullopt);
  // 3 leads now but does not answer; 2 has applied its first entry.
  EXPECT_EQ(Look({{2, 3, 9}}, 1800), Timestamp(Duration(1000)));
}

// One look's answers come in the order the members answered: the new
// leader's own answer, still behind, counts after another's naming it.
TEST_F(LeaseEvidenceTest, ANewLeaderBehindInTheSameLookCountsInEitherOrder) {
  EXPECT_EQ(Look({{2, 3, 9}, {3, 3, 7}}, 1200), Timestamp(Duration(1200)));
}

TEST_F(LeaseEvidenceTest, ALeaderNeverSeenBehindProvesNothing) {
  // The keepalive was answered by a member lagging at term 7 while 3 led at
  // 8 already: 3 renewed every lease before any look.
  EXPECT_EQ(Look({{1, 3, 7}, {3, 3, 8}}, 1000), std::nullopt);
  EXPECT_EQ(Look({{1, 3, 8}, {3, 3, 8}}, 1500), std::nullopt);
  // Nor does a member behind that names a leader, nor one ahead that
  // names none.
  EXPECT_EQ(Look({{2, 1, 7}}, 1600), std::nullopt);
  EXPECT_EQ(Look({{2, 0, 9}, {1, 0, 8}}, 1700), std::nullopt);
}

TEST_F(LeaseEvidenceTest, TwoLeadersNamedProveFromTheEarlierLook) {
  EXPECT_EQ(Look({{2, 1, 7}}, 1000), std::nullopt);
  EXPECT_EQ(Look({{3, 1, 7}}, 1400), std::nullopt);
  // 2 and 3 each named by a member ahead: the earlier of their looks.
  EXPECT_EQ(Look({{1, 2, 8}, {4, 3, 9}}, 1800), Timestamp(Duration(1000)));
}

TEST_F(LeaseEvidenceTest, ALeaderNeverSeenBehindSpoilsTheLook) {
  EXPECT_EQ(Look({{2, 1, 7}}, 1000), std::nullopt);
  // 3, never seen behind, may be the later leader and have renewed before.
  EXPECT_EQ(Look({{1, 2, 8}, {4, 3, 9}}, 1800), std::nullopt);
  EXPECT_EQ(Look({{1, 2, 8}}, 2000), std::nullopt);  // nor later, until a keepalive
  evidence_.Confirmed(9);
  EXPECT_EQ(Look({{3, 3, 9}}, 2500), std::nullopt);
  EXPECT_EQ(Look({{2, 3, 10}}, 3000), Timestamp(Duration(2500)));
}

TEST_F(LeaseEvidenceTest, ItProvesOncePerConfirmedKeepalive) {
  EXPECT_EQ(Look({{2, 1, 7}, {3, 1, 7}}, 1000), std::nullopt);
  EXPECT_EQ(Look({{2, 3, 8}, {3, 3, 8}}, 1500), Timestamp(Duration(1000)));
  // 2 had stayed behind and now leads at a later term: a second election.
  EXPECT_EQ(Look({{2, 2, 9}, {3, 2, 9}}, 2000), std::nullopt);
  evidence_.Confirmed(9);
  EXPECT_EQ(Look({{2, 2, 9}}, 2500), std::nullopt);
  EXPECT_EQ(Look({{2, 2, 10}}, 3000), Timestamp(Duration(2500)));
}

TEST_F(LeaseEvidenceTest, AConfirmedKeepaliveForgetsEarlierLooksAndItsTermNeverGoesDown) {
  EXPECT_EQ(Look({{3, 1, 7}}, 1000), std::nullopt);
  evidence_.Confirmed(8);
  EXPECT_EQ(Look({{3, 3, 9}}, 2000), std::nullopt);  // seen behind only before the keepalive
  evidence_.Confirmed(6);                            // a lagging member's answer
  EXPECT_EQ(Look({{3, 1, 7}}, 2100), std::nullopt);  // behind term 8, not ahead of 6
  EXPECT_EQ(Look({{3, 3, 9}}, 2200), Timestamp(Duration(2100)));
}

}  // namespace
}  // namespace berth::daemon
