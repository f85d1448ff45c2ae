// The published scenarios of docs/admission.md ("Published scenarios") and
// each Berth choice, through Admission::Iterate.
#include "fairshare/admission.h"

#include <gtest/gtest.h>

#include <map>

namespace berth::fairshare {
namespace {

const Timestamp kNow = Timestamp{Duration{1'800'000'000'000}};

// A class as the spec writes it: percent/running/waiting/jobs.
struct ClassSpec {
  std::string name;
  int64_t percent, running, waiting, jobs;
};

// Spreads a class's running and waiting tasks round-robin over its jobs;
// every job's requestor is the class name.
std::vector<Job> MakeJobs(const std::vector<ClassSpec>& classes) {
  std::vector<Job> jobs;
  for (const ClassSpec& c : classes) {
    const size_t first = jobs.size();
    for (int64_t j = 0; j < c.jobs; ++j)
      jobs.push_back({c.name + "-j" + std::to_string(j), c.name, {}, {}});
    for (int64_t i = 0; i < c.running; ++i) {
      Job& job = jobs[first + static_cast<size_t>(i % c.jobs)];
      job.running.push_back({"r" + std::to_string(job.running.size()), kNow - std::chrono::seconds(i)});
    }
    for (int64_t i = 0; i < c.waiting; ++i) {
      Job& job = jobs[first + static_cast<size_t>(i % c.jobs)];
      job.waiting.push_back({"t" + std::to_string(job.waiting.size()), std::nullopt});
    }
  }
  return jobs;
}

Admission MakeAdmission(const std::vector<ClassSpec>& classes) {
  Config config;
  std::vector<ClassShare> shares;
  std::vector<RequestorRule> rules;
  for (const ClassSpec& c : classes) {
    shares.push_back({c.name, c.percent});
    rules.push_back({"^" + c.name + "$", c.name});
  }
  EXPECT_TRUE(config.SetClassLoadPercents(shares).ok());
  EXPECT_TRUE(config.SetRequestorMap(rules).ok());
  return Admission(std::move(config));
}

// An admission for `classes` whose rebalance timer has run for `over_for`.
Admission MakeRebalancing(const std::vector<ClassSpec>& classes, int64_t threshold,
                          Duration min_duration, Duration over_for) {
  Admission admission = MakeAdmission(classes);
  admission.mutable_config().SetRebalanceThreshold(threshold);
  admission.mutable_config().SetRebalanceMinDuration(min_duration);
  admission.set_over_since(kNow - over_for);
  return admission;
}

// class name -> started count.
std::map<std::string, int64_t> Starts(const Admission& a, const IterationResult& r) {
  std::map<std::string, int64_t> out;
  for (size_t c = 0; c < r.start.size(); ++c) out[a.config().ClassName(c)] = r.start[c];
  return out;
}

std::map<std::string, int64_t> Published(const std::vector<ClassSpec>& classes,
                                         const std::vector<int64_t>& started) {
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < classes.size(); ++i) out[classes[i].name] = started[i];
  return out;
}

struct Scenario {
  const char* name;
  std::vector<ClassSpec> classes;
  std::vector<int64_t> started;
};

class PublishedScenario : public ::testing::TestWithParam<Scenario> {};

TEST_P(PublishedScenario, StartsTheSpecsNumbers) {
  const Scenario& s = GetParam();
  Admission admission = MakeAdmission(s.classes);
  const std::vector<Job> jobs = MakeJobs(s.classes);
  IterationResult r = admission.Iterate(1000, jobs, kNow);
  EXPECT_EQ(Starts(admission, r), Published(s.classes, s.started));
  int64_t total = 0;
  for (int64_t n : r.start) total += n;
  EXPECT_EQ(static_cast<int64_t>(r.start_tasks.size()), total);
  EXPECT_TRUE(r.stop_tasks.empty());
  EXPECT_FALSE(r.rebalanced);
}

INSTANTIATE_TEST_SUITE_P(
    Spec, PublishedScenario,
    ::testing::Values(
        Scenario{"S1",
                 {{"c0", 30, 200, 290, 10}, {"c1", 25, 300, 230, 50}, {"c2", 20, 0, 150, 20},
                  {"c3", 15, 100, 150, 3}, {"c4", 10, 110, 90, 2}, {"c5", 0, 0, 328, 1}},
                 {94, 0, 150, 46, 0, 0}},
        Scenario{"S2",
                 {{"c0", 30, 200, 290, 10}, {"c1", 25, 300, 230, 15}, {"c2", 20, 0, 0, 0},
                  {"c3", 15, 100, 50, 3}, {"c4", 10, 110, 90, 2}},
                 {194, 26, 0, 50, 20}},
        Scenario{"S3",
                 {{"c0", 30, 200, 10, 2}, {"c1", 25, 300, 230, 15}, {"c2", 20, 0, 0, 0},
                  {"c3", 15, 100, 50, 10}, {"c4", 10, 110, 90, 3}},
                 {10, 157, 0, 50, 73}},
        Scenario{"S4",
                 {{"c0", 30, 0, 300, 30}, {"c1", 25, 0, 230, 10}, {"c2", 20, 0, 400, 40},
                  {"c3", 15, 0, 650, 13}, {"c4", 10, 700, 800, 40}},
                 {105, 81, 66, 48, 0}},
        Scenario{"S5",
                 {{"c0", 35, 200, 100, 30}, {"c1", 30, 300, 50, 10}, {"c2", 20, 0, 200, 40},
                  {"c3", 0, 100, 300, 13}, {"c4", 15, 110, 500, 40}},
                 {100, 0, 159, 0, 31}},
        Scenario{"S6",
                 {{"c0", 30, 200, 100, 30}, {"c1", 25, 300, 50, 10}, {"c2", 15, 0, 200, 40},
                  {"c3", 0, 100, 300, 13}, {"c4", 10, 110, 500, 40}},
                 {100, 10, 172, 0, 8}}),
    [](const ::testing::TestParamInfo<Scenario>& info) { return std::string(info.param.name); });

TEST(Rebalance, R1StopsTheNewestTasksOfOverloadedClasses) {
  const std::vector<ClassSpec> classes = {
      {"c0", 70, 2, 20, 3}, {"c1", 20, 4, 10, 2}, {"c2", 10, 4, 30, 4}};
  Admission admission =
      MakeRebalancing(classes, 50, std::chrono::minutes(1), std::chrono::minutes(2));
  const std::vector<Job> jobs = MakeJobs(classes);
  IterationResult r = admission.Iterate(10, jobs, kNow);
  EXPECT_TRUE(r.rebalanced);
  EXPECT_EQ(r.start, (std::vector<int64_t>{5, 0, 0}));
  EXPECT_EQ(r.stop, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_FALSE(admission.over_since().has_value());  // fired: the timer stops
  // The newest running tasks of each class: c1's jobs started r0 at kNow and
  // kNow-1s; c2's four jobs each started one task, kNow..kNow-3s.
  auto id = [&](const TaskRef& t) { return jobs[t.job].id + "/" + jobs[t.job].running[t.task].id; };
  std::vector<std::string> stopped;
  for (const TaskRef& t : r.stop_tasks) stopped.push_back(id(t));
  EXPECT_EQ(stopped, (std::vector<std::string>{"c1-j0/r0", "c1-j1/r0", "c2-j0/r0", "c2-j1/r0",
                                               "c2-j2/r0"}));
}

TEST(Rebalance, TimerStartsWaitsLongerThanTheMinimumAndStopsWhenTheSpreadFalls) {
  const std::vector<ClassSpec> classes = {
      {"c0", 70, 2, 20, 3}, {"c1", 20, 4, 10, 2}, {"c2", 10, 4, 30, 4}};
  Admission admission = MakeAdmission(classes);
  admission.mutable_config().SetRebalanceThreshold(50);
  admission.mutable_config().SetRebalanceMinDuration(std::chrono::minutes(1));
  const std::vector<Job> jobs = MakeJobs(classes);
  // Spread 80 > 50: the timer starts, nothing fires yet (all workers busy).
  IterationResult first = admission.Iterate(10, jobs, kNow);
  EXPECT_FALSE(first.rebalanced);
  EXPECT_EQ(admission.over_since(), kNow);
  // Exactly the minimum duration later: not longer than it, so no rebalance.
  EXPECT_FALSE(admission.Iterate(10, jobs, kNow + std::chrono::minutes(1)).rebalanced);
  // A balanced cluster stops the timer (Berth: Scoot never stopped it).
  const std::vector<ClassSpec> balanced = {
      {"c0", 70, 7, 20, 3}, {"c1", 20, 2, 10, 2}, {"c2", 10, 1, 30, 4}};
  admission.Iterate(10, MakeJobs(balanced), kNow + std::chrono::seconds(61));
  EXPECT_FALSE(admission.over_since().has_value());
  // Over again: it starts afresh, so one minute later it still waits.
  admission.Iterate(10, jobs, kNow + std::chrono::minutes(2));
  EXPECT_FALSE(admission.Iterate(10, jobs, kNow + std::chrono::minutes(3)).rebalanced);
  EXPECT_TRUE(admission.Iterate(10, jobs, kNow + std::chrono::minutes(3) + Duration{1}).rebalanced);
}

TEST(Rebalance, StartsAreCappedByWaitingTasks) {
  // c0 is owed 8 workers but has only 3 waiting: Scoot started 8.
  const std::vector<ClassSpec> classes = {{"c0", 80, 0, 3, 1}, {"c1", 20, 10, 5, 1}};
  Admission admission = MakeRebalancing(classes, 10, Duration{1}, std::chrono::minutes(1));
  IterationResult r = admission.Iterate(10, MakeJobs(classes), kNow);
  ASSERT_TRUE(r.rebalanced);
  EXPECT_EQ(r.start[0], 3);
  EXPECT_EQ(r.start_tasks.size(), 3u);
  // c1 (target 2) would stop 8, leaving c0's 3 + c1's 2 = 5 of 10 workers
  // used; the loan pass lends the other 5 to c1, the only class still
  // waiting, so it stops 3.
  EXPECT_EQ(r.stop[1], 3);
}

// docs/admission.md, "Rebalancing": a rebalance runs one loan pass over the
// remainder, as Scoot's code does. Here c0 (60%) has one task left after its target and c1
// (20%) eight: the pass gives c0's loan share of the two idle workers to its
// one task and c1's floor share (0) to c1, so one worker stays idle until
// the next iteration (further rounds would have lent it to c1 at once).
TEST(Rebalance, OneLoanPassCanLeaveAWorkerIdleUntilTheNextIteration) {
  const std::vector<ClassSpec> classes = {
      {"c0", 60, 0, 7, 1}, {"c1", 20, 0, 10, 1}, {"c2", 20, 0, 0, 1}};
  Admission admission = MakeRebalancing(classes, 10, Duration{1}, std::chrono::minutes(1));
  IterationResult r = admission.Iterate(10, MakeJobs(classes), kNow);
  ASSERT_TRUE(r.rebalanced);
  EXPECT_EQ(r.start, (std::vector<int64_t>{7, 2, 0}));  // 9 of 10 workers
  // The next iteration (no rebalance: the timer stopped) lends it to c1.
  const std::vector<ClassSpec> after = {
      {"c0", 60, 7, 0, 1}, {"c1", 20, 2, 8, 1}, {"c2", 20, 0, 0, 1}};
  IterationResult next = admission.Iterate(10, MakeJobs(after), kNow + std::chrono::seconds(1));
  EXPECT_FALSE(next.rebalanced);
  EXPECT_EQ(next.start, (std::vector<int64_t>{0, 1, 0}));
}

TEST(Rebalance, NothingStopsWhenNothingWouldStart) {
  // c1 is far over its share but c0 has nothing waiting: stopping would only idle workers.
  const std::vector<ClassSpec> classes = {{"c0", 80, 0, 0, 1}, {"c1", 20, 10, 5, 1}};
  Admission admission = MakeRebalancing(classes, 10, Duration{1}, std::chrono::minutes(1));
  IterationResult r = admission.Iterate(10, MakeJobs(classes), kNow);
  EXPECT_FALSE(r.rebalanced);
  EXPECT_TRUE(r.stop_tasks.empty());
  EXPECT_EQ(r.stop, (std::vector<int64_t>{0, 0}));
}

TEST(Choices, ZeroLoanTotalFallsBackToShares) {
  // a and b each hold 3 workers over their target of 40 and c leaves one idle:
  // L = 3 + 3 + 1 = 7, floor(7 / 2) - 3 = 0 for both, so T = 0. Scoot divided
  // 0 by 0 and started almost every waiting task; Berth splits the one idle
  // worker by the normalised shares (50% each), in class order.
  const std::vector<ClassSpec> classes = {
      {"a", 40, 43, 10, 1}, {"b", 40, 43, 10, 1}, {"c", 20, 13, 0, 1}};
  Admission admission = MakeAdmission(classes);
  IterationResult r = admission.Iterate(100, MakeJobs(classes), kNow);
  EXPECT_EQ(r.start, (std::vector<int64_t>{1, 0, 0}));
}

TEST(Choices, CeilingsAreExactIntegers) {
  // 25 idle, entitlement percents 60/40: ceil(25 * 60 / 100) = 15 exactly
  // (float32 arithmetic gives 16), and 25 - 15 = 10 for the other.
  const std::vector<ClassSpec> classes = {{"a", 60, 0, 100, 1}, {"b", 40, 0, 100, 1}};
  Admission admission = MakeAdmission(classes);
  IterationResult r = admission.Iterate(25, MakeJobs(classes), kNow);
  EXPECT_EQ(r.start, (std::vector<int64_t>{15, 10}));
}

TEST(Choices, UnmatchedRequestorsJoinTheLastClass) {
  Config config;
  ASSERT_TRUE(config.SetClassLoadPercents({{"big", 70}, {"small", 30}}).ok());
  ASSERT_TRUE(config.SetRequestorMap({{"^big", "big"}}).ok());
  Admission admission(config);
  std::vector<Job> jobs = {{"j", "nobody-matches", {}, {{"t0", {}}, {"t1", {}}}}};
  IterationResult r = admission.Iterate(10, jobs, kNow);
  EXPECT_EQ(r.start, (std::vector<int64_t>{0, 2}));  // class order: big, small
}

TEST(Choices, ZeroPercentClassesNeverStart) {
  const std::vector<ClassSpec> classes = {{"a", 100, 0, 1, 1}, {"zero", 0, 0, 50, 2}};
  Admission admission = MakeAdmission(classes);
  IterationResult r = admission.Iterate(10, MakeJobs(classes), kNow);
  EXPECT_EQ(r.start, (std::vector<int64_t>{1, 0}));
}

TEST(Choices, FirstMatchingRuleWinsAndMatchingIsUnanchored) {
  Config config;
  ASSERT_TRUE(config.SetClassLoadPercents({{"land", 50}, {"other", 50}}).ok());
  ASSERT_TRUE(config.SetRequestorMap({{"land.*", "land"}, {"is", "other"}}).ok());
  EXPECT_EQ(config.ClassName(config.ClassOf("island")), "land");  // both match; first wins
  ASSERT_TRUE(config.SetRequestorMap({{"is", "other"}, {"land.*", "land"}}).ok());
  EXPECT_EQ(config.ClassName(config.ClassOf("island")), "other");
}

TEST(Choices, AChangedMapTakesEffectAtOnce) {
  Config config;
  ASSERT_TRUE(config.SetClassLoadPercents({{"a", 50}, {"b", 50}}).ok());
  ASSERT_TRUE(config.SetRequestorMap({{"x", "a"}}).ok());
  Admission admission(config);
  std::vector<Job> jobs = {{"j", "x", {}, {{"t0", {}}}}};
  EXPECT_EQ(admission.Iterate(10, jobs, kNow).start, (std::vector<int64_t>{1, 0}));
  ASSERT_TRUE(admission.mutable_config().SetRequestorMap({{"x", "b"}}).ok());
  EXPECT_EQ(admission.Iterate(10, jobs, kNow).start, (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace berth::fairshare
