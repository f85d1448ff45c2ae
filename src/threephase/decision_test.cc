#include "threephase/decision.h"

#include <gtest/gtest.h>

namespace berth::threephase {
namespace {

agent::NodeSample Sample(std::string agent, std::string node, int64_t score_sum = 0,
                         int64_t weight_sum = 0, int64_t free_cpu = 1000) {
  agent::NodeSample s;
  s.agent_id = std::move(agent);
  s.node_id = std::move(node);
  s.score_sum = score_sum;
  s.weight_sum = weight_sum;
  s.free_milli_cpu = s.total_milli_cpu = free_cpu;
  s.total_milli_cpu = 1000;
  return s;
}

agent::PlacementTask Task(int64_t cpu) {
  auto spec = std::make_shared<TaskSpec>();
  spec->reservations.milli_cpu = cpu;
  return {"t", 0, spec, {}, {}, {}};
}

TEST(FinalScore, DividesByTheWeightsInIntegers) {
  // Agent: two plugins, weights 1 and 3, scores 80 and 40 -> 80 + 120 = 200 over 4;
  // scheduler: one plugin, weight 2, score 50 -> 100 over 2. (200 + 100) / 6 = 50.
  EXPECT_EQ(FinalScore(200, 4, 100, 2), 50);
  EXPECT_EQ(FinalScore(299, 3, 0, 0), 99);  // floor
  EXPECT_EQ(FinalScore(0, 0, 0, 0), 0);     // never divides by zero
  EXPECT_EQ(FinalScore(500, 5, 0, 0), 100);
}

TEST(KeepBest, BestFirstTiesByAgentThenNode) {
  std::vector<Candidate> c = {{Sample("b", "n1"), 70, 0},
                              {Sample("a", "n9"), 90, 0},
                              {Sample("a", "n2"), 70, 0},
                              {Sample("a", "n1"), 70, 0},
                              {Sample("c", "n1"), 10, 0}};
  KeepBest(c, 3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].sample.node_id, "n9");
  EXPECT_EQ(c[1].sample.agent_id + "/" + c[1].sample.node_id, "a/n1");
  EXPECT_EQ(c[2].sample.agent_id + "/" + c[2].sample.node_id, "a/n2");
  KeepBest(c, 1);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].score, 90);
}

TEST(DecisionPipeline, FiltersScoresAndKeepsM) {
  InFlightDemand in_flight;
  DecisionPipeline pipeline(in_flight, {2, agent::ResourceScoring::kLeastAllocated, 1});
  const agent::PlacementTask task = Task(400);
  std::vector<agent::NodeSample> samples = {Sample("a", "small", 0, 0, 300),  // too full
                                            Sample("a", "half", 0, 0, 500),
                                            Sample("a", "empty", 0, 0, 1000)};
  std::vector<Candidate> best = pipeline.Decide(task, samples);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].sample.node_id, "empty");  // least allocated: (400)/1000 -> 60
  EXPECT_EQ(best[0].score, 60);
  EXPECT_EQ(best[1].sample.node_id, "half");  // (500 + 400)/1000 -> 10
  EXPECT_EQ(best[1].score, 10);
}

TEST(DecisionPipeline, ReserveMakesInstanceCandidatesLookFuller) {
  InFlightDemand in_flight;
  DecisionPipeline first(in_flight, {1, agent::ResourceScoring::kLeastAllocated, 1});
  DecisionPipeline second(in_flight, {1, agent::ResourceScoring::kLeastAllocated, 1});
  const agent::PlacementTask task = Task(600);
  const std::vector<agent::NodeSample> samples = {Sample("a", "n", 0, 0, 1000)};
  std::vector<Candidate> chosen = first.Decide(task, samples);
  ASSERT_EQ(chosen.size(), 1u);
  first.Reserve(task, chosen);
  EXPECT_TRUE(second.Decide(task, samples).empty());  // 1000 - 600 in flight < 600
  first.Release(task, chosen);
  EXPECT_EQ(in_flight.size(), 0u);
  EXPECT_EQ(second.Decide(task, samples).size(), 1u);
}

agent::PlacementTask SpreadTask(std::shared_ptr<TaskSpec> spec) {
  spec->preferences.push_back(PlacementPreference::Spread("node.labels.zone"));
  return {"t", 0, spec, {}, {}, {}};
}

TEST(KeepBest, TheLeastUsedSpreadValueComesBeforeTheScore) {
  std::vector<Candidate> c = {
      {Sample("a", "n1"), 90, 2}, {Sample("a", "n2"), 10, 0}, {Sample("a", "n3"), 50, 1}};
  KeepBest(c, 3);
  EXPECT_EQ(c[0].sample.node_id, "n2");
  EXPECT_EQ(c[1].sample.node_id, "n3");
  EXPECT_EQ(c[2].sample.node_id, "n1");
}

TEST(SpreadCounts, CountsPerSpecAndValue) {
  SpreadCounts counts;
  auto spec = std::make_shared<TaskSpec>();
  const agent::PlacementTask task = SpreadTask(spec);
  counts.Add(task.spec, "a");
  counts.Add(task.spec, "a");
  counts.Add(task.spec, "b");
  EXPECT_EQ(counts.Get(task.spec, "a"), 2);
  EXPECT_EQ(counts.Get(task.spec, "b"), 1);
  EXPECT_EQ(counts.Get(task.spec, "c"), 0);
  auto other = std::make_shared<TaskSpec>();  // another service: its own counts
  EXPECT_EQ(counts.Get(SpreadTask(other).spec, "a"), 0);
  // A spec without a spread preference is never counted.
  auto plain = std::make_shared<const TaskSpec>();
  counts.Add(plain, "a");
  EXPECT_EQ(counts.Get(plain, "a"), 0);
}

TEST(DecisionPipeline, SpreadPrefersTheLeastUsedLabelValue) {
  InFlightDemand in_flight;
  SpreadCounts counts;
  DecisionPipeline pipeline(in_flight, {1, agent::ResourceScoring::kMostAllocated, 1}, &counts);
  const agent::PlacementTask task = SpreadTask(std::make_shared<TaskSpec>());
  std::vector<agent::NodeSample> samples = {Sample("a", "x1", 0, 0, 1000),
                                            Sample("a", "y1", 0, 0, 1000),
                                            Sample("a", "x2", 0, 0, 900)};  // fullest
  samples[0].spread_value = samples[2].spread_value = "x";
  samples[1].spread_value = "y";
  // Nothing bound yet: packing picks the fullest node, x2.
  ASSERT_EQ(pipeline.Decide(task, samples).at(0).sample.node_id, "x2");
  counts.Add(task.spec, "x");
  // Now y is the least used value, though its node scores lower.
  EXPECT_EQ(pipeline.Decide(task, samples).at(0).sample.node_id, "y1");
  counts.Add(task.spec, "y");
  EXPECT_EQ(pipeline.Decide(task, samples).at(0).sample.node_id, "x2");
}

}  // namespace
}  // namespace berth::threephase
