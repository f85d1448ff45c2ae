// Invariants of one iteration over 10,000 random scenarios (fixed seed, so a
// failure reproduces): the algorithm's promises (docs/admission.md, "The
// iteration" and "Tests"), checked without rebalancing.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "fairshare/admission.h"

namespace berth::fairshare {
namespace {

struct RandomScenario {
  Config config;
  int64_t workers = 0;
  std::vector<Job> jobs;
};

RandomScenario Make(std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  RandomScenario s;
  const int classes = static_cast<int>(pick(1, 6));
  std::vector<ClassShare> shares;
  std::vector<RequestorRule> rules;
  for (int c = 0; c < classes; ++c) {
    const std::string name = "c" + std::to_string(c);
    shares.push_back({name, pick(0, 3) == 0 ? 0 : pick(1, 60)});
    rules.push_back({"^" + name + "-", name});
  }
  if (shares[0].percent == 0 && classes == 1) shares[0].percent = 100;
  int64_t sum = 0;
  for (const auto& share : shares) sum += share.percent;
  if (sum == 0) shares[0].percent = 10;
  EXPECT_TRUE(s.config.SetClassLoadPercents(shares).ok());
  EXPECT_TRUE(s.config.SetRequestorMap(rules).ok());
  s.workers = pick(0, 300);
  const int jobs = static_cast<int>(pick(0, 25));
  for (int j = 0; j < jobs; ++j) {
    // Some requestors match no rule: they join the last class.
    const std::string requestor =
        pick(0, 9) == 0 ? "stranger" : "c" + std::to_string(pick(0, classes - 1)) + "-user";
    Job job{"j" + std::to_string(j), requestor, {}, {}};
    const int64_t running = pick(0, 30), waiting = pick(0, 40);
    for (int64_t i = 0; i < running; ++i) job.running.push_back({"r" + std::to_string(i), Timestamp{}});
    for (int64_t i = 0; i < waiting; ++i) {
      std::optional<Duration> d;
      if (pick(0, 1)) d = Duration{pick(1, 5) * 1000};
      job.waiting.push_back({"t" + std::to_string(i), d});
    }
    s.jobs.push_back(std::move(job));
  }
  return s;
}

TEST(AdmissionProperties, HoldOnRandomScenarios) {
  std::mt19937_64 rng(20261123);
  for (int round = 0; round < 10'000; ++round) {
    RandomScenario s = Make(rng);
    Admission admission(s.config);
    const IterationResult r = admission.Iterate(s.workers, s.jobs, Timestamp{});
    const Config& config = admission.config();
    SCOPED_TRACE("round " + std::to_string(round));
    // Per-class waiting and idle, independently of the algorithm.
    std::vector<int64_t> waiting(config.class_count());
    int64_t running = 0;
    std::vector<ClassIndex> class_of(s.jobs.size());
    for (size_t j = 0; j < s.jobs.size(); ++j) {
      class_of[j] = config.ClassOf(s.jobs[j].requestor);
      running += static_cast<int64_t>(s.jobs[j].running.size());
      waiting[class_of[j]] += static_cast<int64_t>(s.jobs[j].waiting.size());
    }
    const int64_t idle = std::max<int64_t>(0, s.workers - running);
    int64_t started = 0, startable = 0;
    for (ClassIndex c = 0; c < config.class_count(); ++c) {
      ASSERT_GE(r.start[c], 0);
      ASSERT_LE(r.start[c], waiting[c]);
      if (config.Percent(c) == 0) {
        ASSERT_EQ(r.start[c], 0) << "a 0% class started tasks";
      }
      ASSERT_EQ(r.stop[c], 0);
      started += r.start[c];
      if (config.Percent(c) > 0) startable += waiting[c];
    }
    ASSERT_LE(started, idle);
    // Every idle worker is used while a class with a share has waiting tasks.
    ASSERT_EQ(started, std::min(idle, startable));
    // The chosen tasks: the right number per class, distinct, of that class.
    ASSERT_EQ(static_cast<int64_t>(r.start_tasks.size()), started);
    std::set<std::pair<uint32_t, uint32_t>> seen;
    std::vector<int64_t> per_class(config.class_count());
    for (const TaskRef& t : r.start_tasks) {
      ASSERT_LT(t.job, s.jobs.size());
      ASSERT_LT(t.task, s.jobs[t.job].waiting.size());
      ASSERT_TRUE(seen.insert({t.job, t.task}).second) << "a task was chosen twice";
      ++per_class[class_of[t.job]];
    }
    ASSERT_EQ(per_class, r.start);
  }
}

}  // namespace
}  // namespace berth::fairshare
