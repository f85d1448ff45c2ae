#include "fairshare/task_choice.h"

#include <gtest/gtest.h>

namespace berth::fairshare {
namespace {

Job MakeJob(std::string id, int running, int waiting) {
  Job job{std::move(id), "r", {}, {}};
  for (int i = 0; i < running; ++i) job.running.push_back({"r" + std::to_string(i), Timestamp{}});
  for (int i = 0; i < waiting; ++i) job.waiting.push_back({"t" + std::to_string(i), std::nullopt});
  return job;
}

std::vector<std::string> Names(const std::vector<Job>& jobs, const std::vector<TaskRef>& refs) {
  std::vector<std::string> out;
  for (const TaskRef& t : refs) out.push_back(jobs[t.job].id + "/" + jobs[t.job].waiting[t.task].id);
  return out;
}

// The spec's task-order example: J1 (2 running, 5 waiting), J2 (0, 3), J3 (1, 4), J4 (0, 1).
TEST(ChooseStarts, TheSpecsTaskOrder) {
  const std::vector<Job> jobs = {MakeJob("J1", 2, 5), MakeJob("J2", 0, 3), MakeJob("J3", 1, 4),
                                 MakeJob("J4", 0, 1)};
  const std::vector<uint32_t> all = {0, 1, 2, 3};
  const std::vector<std::string> full = {"J2/t0", "J4/t0", "J3/t0", "J2/t1", "J1/t0",
                                         "J3/t1", "J2/t2", "J1/t1", "J3/t2", "J1/t2",
                                         "J3/t3", "J1/t3", "J1/t4"};
  ChoiceScratch scratch;
  std::vector<TaskRef> chosen;
  ChooseStarts(jobs, all, 95, scratch, &chosen);  // 95 idle: every waiting task
  EXPECT_EQ(Names(jobs, chosen), full);
  chosen.clear();
  ChooseStarts(jobs, all, 7, scratch, &chosen);
  EXPECT_EQ(Names(jobs, chosen), std::vector<std::string>(full.begin(), full.begin() + 7));
}

TEST(ChooseStarts, GapsBetweenRunningCountsAreSkipped) {
  // J1 runs 5, J2 runs 0 with 3 waiting: J2 climbs alone to level 3 before J1
  // (level 5) joins; at level 5 fresh J1 comes before carried J2.
  const std::vector<Job> jobs = {MakeJob("J1", 5, 2), MakeJob("J2", 0, 7)};
  ChoiceScratch scratch;
  std::vector<TaskRef> chosen;
  ChooseStarts(jobs, std::vector<uint32_t>{0, 1}, 9, scratch, &chosen);
  EXPECT_EQ(Names(jobs, chosen),
            (std::vector<std::string>{"J2/t0", "J2/t1", "J2/t2", "J2/t3", "J2/t4", "J1/t0",
                                      "J2/t5", "J1/t1", "J2/t6"}));
}

TEST(ChooseStarts, LongestExpectedDurationFirstUnknownLast) {
  Job job = MakeJob("J", 0, 0);
  job.waiting = {{"a", std::chrono::seconds(10)}, {"b", std::nullopt}, {"c", std::chrono::seconds(30)},
                 {"d", std::chrono::seconds(10)}, {"e", std::nullopt}};
  OrderWaitingTasks(job.waiting);
  const std::vector<Job> jobs = {job};
  ChoiceScratch scratch;
  std::vector<TaskRef> chosen;
  ChooseStarts(jobs, std::vector<uint32_t>{0}, 5, scratch, &chosen);
  EXPECT_EQ(Names(jobs, chosen), (std::vector<std::string>{"J/c", "J/a", "J/d", "J/b", "J/e"}));
}

TEST(ChooseStops, NewestFirstTiesByJobThenTask) {
  const Timestamp t0{Duration{1000}};
  Job a{"A", "r", {{"a0", t0}, {"a1", t0 + Duration{5}}}, {}};
  Job b{"B", "r", {{"b0", t0 + Duration{5}}, {"b1", t0 + Duration{9}}}, {}};
  const std::vector<Job> jobs = {a, b};
  ChoiceScratch scratch;
  std::vector<TaskRef> stops;
  ChooseStops(jobs, std::vector<uint32_t>{0, 1}, 3, scratch, &stops);
  EXPECT_EQ(stops, (std::vector<TaskRef>{{1, 1}, {0, 1}, {1, 0}}));
  stops.clear();
  ChooseStops(jobs, std::vector<uint32_t>{0, 1}, 10, scratch, &stops);
  EXPECT_EQ(stops.size(), 4u);
}

}  // namespace
}  // namespace berth::fairshare
