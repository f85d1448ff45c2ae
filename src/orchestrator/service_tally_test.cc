#include "orchestrator/service_tally.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace berth::orchestrator {
namespace {

TEST(NumberSet, FindsClearAndSetNumbersAcrossWords) {
  NumberSet s;
  for (uint64_t n : {1, 2, 3, 63, 64, 200}) s.Set(n, true);
  EXPECT_EQ(s.NextClear(1), 4u);
  EXPECT_EQ(s.NextClear(63), 65u);
  EXPECT_EQ(s.NextClear(1000), 1000u);
  EXPECT_EQ(s.PrevSet(NumberSet::kLimit), 200u);
  EXPECT_EQ(s.PrevSet(200), 64u);
  EXPECT_EQ(s.PrevSet(64), 63u);
  EXPECT_EQ(s.PrevSet(1), std::nullopt);
  NumberSet without;
  without.Set(64, true);
  without.Set(63, true);
  EXPECT_EQ(s.PrevSet(200, &without), 3u);
  s.Set(200, false);
  s.Set(5000, false);  // clearing beyond the words keeps them as they are
  EXPECT_FALSE(s.Test(200));
  EXPECT_EQ(s.PrevSet(NumberSet::kLimit), 64u);
}

TEST(ServiceTally, NumbersAreTheServicesOwn) {
  EXPECT_EQ(NumberIn("web", "web.12"), 12u);
  EXPECT_EQ(NumberIn("web", "web.x.12"), std::nullopt);
  EXPECT_EQ(NumberIn("web", "webs.12"), std::nullopt);
  EXPECT_EQ(NumberIn("web", "web.n1"), std::nullopt);
  EXPECT_EQ(NumberIn("web", "web.99999999"), std::nullopt);  // beyond kLimit
}

// The tally's answers are the list rules' answers (orchestrator.h), on
// random services.
TEST(ServiceTally, AnswersAsTheRulesOverTheWholeList) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 200; ++round) {
    ServiceTally tally;
    std::vector<std::string> ids;
    std::vector<ScaleDownCandidate> candidates;
    std::set<std::string> taken;
    for (uint64_t n = 1; n < 300; ++n) {
      const int kind = static_cast<int>(random() % 4);  // 0 absent, 1 ended, 2 placed, 3 pending
      if (kind == 0) continue;
      ids.push_back("web." + std::to_string(n));
      taken.insert(ids.back());
      tally.taken.Set(n, true);
      if (kind == 1) continue;
      ++tally.runnable_count;
      tally.runnable.Set(n, true);
      tally.pending.Set(n, kind == 3);
    }
    for (const std::string& id : taken)
      if (tally.runnable.Test(*NumberIn("web", id)))
        candidates.push_back({id, tally.pending.Test(*NumberIn("web", id))});
    const uint64_t keep = random() % (tally.runnable_count + 2);
    std::vector<uint64_t> expected;
    for (size_t i : ChooseScaleDown(candidates, keep))
      expected.push_back(*NumberIn("web", candidates[i].id));
    EXPECT_EQ(ChooseScaleDown(tally, keep), expected);

    auto is_taken = [&](const std::string& id) { return taken.contains(id); };
    const uint64_t replicas = tally.runnable_count + random() % 50;
    EXPECT_EQ(NewReplicaIds("web", tally, replicas, is_taken),
              NewReplicaIds("web", tally.runnable_count, replicas, is_taken));
  }
}

TEST(ServiceTally, UnnumberedTasksLeaveScaleDownToTheList) {
  ServiceTally tally;
  tally.runnable_count = 2;
  tally.unnumbered = 1;
  EXPECT_EQ(ChooseScaleDown(tally, 1), std::nullopt);
}

// An id the tally does not know (a job's task, say) is skipped.
TEST(ServiceTally, NewIdsAreConfirmedByTheCaller) {
  ServiceTally tally;
  tally.taken.Set(1, true);
  tally.runnable.Set(1, true);
  tally.runnable_count = 1;
  auto is_taken = [](const std::string& id) { return id == "web.1" || id == "web.2"; };
  EXPECT_EQ(NewReplicaIds("web", tally, 3, is_taken), (std::vector<std::string>{"web.3", "web.4"}));
}

}  // namespace
}  // namespace berth::orchestrator
