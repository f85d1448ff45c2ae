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
    std::vector<bool> pending;  // by position in ids
    std::vector<ScaleDownCandidate> candidates;
    std::set<std::string> taken;
    uint64_t runnable = 0;
    for (uint64_t n = 1; n < 300; ++n) {
      const int kind = static_cast<int>(random() % 4);  // 0 absent, 1 ended, 2 placed, 3 pending
      if (kind == 0) continue;
      ids.push_back("web." + std::to_string(n));
      taken.insert(ids.back());
      const TaskState state = kind == 1   ? TaskState::kComplete
                              : kind == 2 ? TaskState::kRunning
                                          : TaskState::kPending;
      tally.Add({tally.FlagsOf(state, TaskState::kRunning, kind == 2), static_cast<int32_t>(n)},
                kind == 2 ? "n1" : "");
      pending.push_back(kind == 3);
      if (kind != 1) ++runnable;
    }
    ASSERT_EQ(tally.runnable_count, runnable);
    for (size_t i = 0; i < ids.size(); ++i)  // ids no longer moves
      if (tally.runnable.Test(*NumberIn("web", ids[i]))) candidates.push_back({ids[i], pending[i]});
    const uint64_t keep = random() % (runnable + 2);
    std::vector<uint64_t> expected;
    for (size_t i : ChooseScaleDown(candidates, keep))
      expected.push_back(*NumberIn("web", candidates[i].id));
    EXPECT_EQ(ChooseScaleDown(tally, keep), expected);

    // The rule: the lowest numbers whose id no task holds, until the count.
    auto is_taken = [&](const std::string& id) { return taken.contains(id); };
    const uint64_t replicas = runnable + random() % 50;
    std::vector<std::string> lowest_free;
    for (uint64_t n = 1; runnable + lowest_free.size() < replicas; ++n)
      if (!is_taken("web." + std::to_string(n))) lowest_free.push_back("web." + std::to_string(n));
    EXPECT_EQ(NewReplicaIds("web", tally, replicas, is_taken), lowest_free);
  }
}

// Remove takes back exactly what Add counted, covered nodes included.
TEST(ServiceTally, RemoveUndoesAdd) {
  ServiceTally tally;
  tally.global = true;
  const ServiceTally::Mark running{tally.FlagsOf(TaskState::kRunning, TaskState::kRunning, true),
                                   -1};
  const ServiceTally::Mark pending{tally.FlagsOf(TaskState::kPending, TaskState::kRunning, true),
                                   -1};
  const ServiceTally::Mark ended{tally.FlagsOf(TaskState::kFailed, TaskState::kRunning, true), -1};
  tally.Add(running, "n1");
  tally.Add(pending, "n1");
  tally.Add(ended, "n2");
  EXPECT_EQ(tally.runnable_count, 2u);
  EXPECT_EQ(tally.covered, (std::unordered_map<std::string, uint32_t>{{"n1", 2}}));
  tally.Remove(running, "n1");
  EXPECT_EQ(tally.covered.at("n1"), 1u);
  tally.Remove(pending, "n1");
  tally.Remove(ended, "n2");
  EXPECT_TRUE(tally.empty());
  EXPECT_EQ(tally.unnumbered, 0u);
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

TEST(ServiceTally, NewReplicasTakeTheLowestFreeNumbers) {
  ServiceTally tally;
  for (int32_t n : {1, 3})
    tally.Add({tally.FlagsOf(TaskState::kRunning, TaskState::kRunning, true), n}, "n1");
  const std::set<std::string> taken = {"web.1", "web.3"};
  auto is_taken = [&](const std::string& id) { return taken.contains(id); };
  EXPECT_EQ(NewReplicaIds("web", tally, 5, is_taken),
            (std::vector<std::string>{"web.2", "web.4", "web.5"}));
  EXPECT_TRUE(NewReplicaIds("web", tally, 2, is_taken).empty());
  EXPECT_TRUE(NewReplicaIds("web", tally, 1, is_taken).empty());
}

}  // namespace
}  // namespace berth::orchestrator
