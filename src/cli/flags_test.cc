// The shared flag groups: what each makes of the values given.
#include "cli/flags.h"

#include <gtest/gtest.h>

namespace berth::cli {
namespace {

using api::Json;

TEST(ParsePublish, ReadsDockerStylePorts) {
  Result<Json> port = ParsePublish("mode=host,target=80,published=8080");
  ASSERT_TRUE(port.ok());
  EXPECT_EQ(*port, (Json{{"mode", "host"}, {"target", 80}, {"published", 8080}}));
  EXPECT_EQ(ParsePublish("mode=host,target=eighty").status().message(),
            "--publish 'mode=host,target=eighty': target must be a port number");
  EXPECT_EQ(ParsePublish("colour=red").status().code(), StatusCode::kInvalidArgument);
}

TEST(ParsePublish, ReadsTheShortForm) {
  EXPECT_EQ(*ParsePublish("8080:80/udp"),
            (Json{{"published", 8080}, {"target", 80}, {"protocol", "udp"}}));
  EXPECT_EQ(ParsePublish("x:80").status().message(),
            "--publish 'x:80': expected PUBLISHED:TARGET[/tcp|udp|sctp]");
}

TEST(ParsePlacementPref, ReadsSpreadWeightsPackAndPrefer) {
  EXPECT_EQ(*ParsePlacementPref("spread=node.labels.az"), (Json{{"spread", "node.labels.az"}}));
  EXPECT_EQ(*ParsePlacementPref("spread=node.labels.az:east=3,west=1,*=0"),
            Json::parse(R"({"spread": "node.labels.az",
                            "weights": {"east": 3, "west": 1, "*": 0}})"));
  EXPECT_EQ(*ParsePlacementPref("pack=node.id"), (Json{{"pack", "node.id"}}));
  EXPECT_EQ(*ParsePlacementPref("prefer=node.labels.disk==ssd"),
            (Json{{"prefer", "node.labels.disk==ssd"}}));
  EXPECT_EQ(ParsePlacementPref("pack=node.labels.rack:r1=2").status().message(),
            "--placement-pref 'pack=node.labels.rack:r1=2': only spread takes weights");
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=many").status().message(),
            "--placement-pref 'spread=node.labels.az:east=many': expected VALUE=WEIGHT (a whole "
            "number) after ':', got 'east=many'");
  EXPECT_EQ(ParsePlacementPref("binpack").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=+3").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ParsePlacementPref("spread=node.labels.az:east=1,east=2").status().message(),
            "--placement-pref 'spread=node.labels.az:east=1,east=2': 'east' is given two weights");
}

TEST(ParseAffinity, ReadsClassicSwarmForms) {
  EXPECT_EQ(*ParseAffinity("service==db"), (Json{{"service", "db"}}));
  EXPECT_EQ(*ParseAffinity("service!=web"), (Json{{"service", "web"}, {"anti", true}}));
  EXPECT_EQ(*ParseAffinity("service==~db"), (Json{{"service", "db"}, {"soft", true}}));
  EXPECT_EQ(*ParseAffinity("service!=~web"),
            (Json{{"service", "web"}, {"anti", true}, {"soft", true}}));
  EXPECT_EQ(ParseAffinity("container==db").status().message(),
            "--affinity 'container==db': expected service==ID, service!=ID, service==~ID or "
            "service!=~ID");
  EXPECT_EQ(ParseAffinity("service=db").status().code(), StatusCode::kInvalidArgument);
}

TEST(ParsePairs, SplitsCommasAndRepeats) {
  auto pairs = ParsePairs({"a=1,b=2", "c=3"}, "--percents");
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(pairs->size(), 3u);
  EXPECT_EQ((*pairs)[2], (std::pair<std::string, std::string>{"c", "3"}));
  EXPECT_EQ(ParsePairs({"a="}, "--requestor").status().message(),
            "--requestor 'a=': expected KEY=VALUE");
  EXPECT_EQ(ParseLabels({"=x"}).status().message(), "--label '=x': expected KEY=VALUE");
}

TEST(ProcessFlags, SetTheCommandAndEditTheEnvironment) {
  ProcessFlags flags;
  flags.env = {"A=2", "C=3"};
  flags.env_rm = {"B"};
  flags.workdir = "/srv";
  Json task = {{"command", "old"}, {"args", {"x"}}, {"env", {"A=1", "B=1"}}};
  ASSERT_TRUE(flags.Apply({"sh", "-c", "echo hi"}, &task).ok());
  EXPECT_EQ(task, Json::parse(R"({"command": "sh", "args": ["-c", "echo hi"],
                                  "env": ["A=2", "C=3"], "workdir": "/srv"})"));
  EXPECT_EQ(flags.Apply({}, &task).message(),  // B is gone now
            "--env-rm 'B': the service sets no such variable");
}

// The limits go as the API takes them: cpu and memory as written (berthd
// reads the units), pids as a number; a pids limit that is no number is
// refused before anything is sent.
TEST(ProcessFlags, SetTheLimits) {
  ProcessFlags flags;
  flags.limit_cpu = "500m";
  flags.limit_memory = "64Mi";
  flags.limit_pids = "100";
  Json task = Json::object();
  ASSERT_TRUE(flags.Apply({}, &task).ok());
  EXPECT_EQ(task, Json::parse(R"({"limits": {"cpu": "500m", "memory": "64Mi", "pids": 100}})"));
  for (const char* bad : {"many", "10k", "1.5"}) {
    flags.limit_pids = bad;
    EXPECT_EQ(flags.Apply({}, &task).message(),
              "--limit-pids '" + std::string(bad) + "': expected a whole number of processes");
  }
}

TEST(ConstraintFlags, RemoveThenAdd) {
  ConstraintFlags flags;
  flags.rm = {"node.labels.az==a"};
  flags.add = {"node.labels.az==b", "node.labels.az==b"};
  Json task = {{"constraints", {"node.labels.az==a"}}};
  ASSERT_TRUE(flags.Apply(&task).ok());
  EXPECT_EQ(task["constraints"], Json::array({"node.labels.az==b"}));
  EXPECT_EQ(flags.Apply(&task).message(),
            "--constraint-rm 'node.labels.az==a': the service has no such constraint");
}

TEST(RestartAndRolloutFlags, OnlyTheFieldsGiven) {
  RestartFlags restart;
  restart.condition = "on-failure";
  restart.max_attempts = 3;
  RolloutFlags rollout;
  rollout.update["parallelism"] = "2";
  rollout.rollback["max_failure_ratio"] = "0.5";
  rollout.rebalance = "on-join";
  Json body = Json::object();
  ASSERT_TRUE(restart.Apply(&body).ok());
  ASSERT_TRUE(rollout.Apply(&body).ok());
  EXPECT_EQ(body, Json::parse(R"({"restart_policy": {"condition": "on-failure", "max_attempts": 3},
                                  "update_config": {"parallelism": 2},
                                  "rollback_config": {"max_failure_ratio": 0.5},
                                  "rebalance": "on-join"})"));
  rollout.update["parallelism"] = "1.5";
  EXPECT_EQ(rollout.Apply(&body).message(), "--update-parallelism '1.5': expected a number");
  restart.delay = "soon";
  EXPECT_EQ(restart.Apply(&body).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace berth::cli
