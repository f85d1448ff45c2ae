#include "cli/app.h"

#include "cli/cli_test_support.h"

namespace berth::cli {
namespace {

TEST(BerthApp, HelpListsTheCommands) {
  Outcome r = Berth({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("plan"), std::string::npos) << r.out;
  Outcome plan_help = Berth({"plan", "--help"});
  EXPECT_EQ(plan_help.status, 0);
  EXPECT_NE(plan_help.out.find("--seed"), std::string::npos) << plan_help.out;
}

TEST(BerthApp, VersionPrintsTheVersion) {
  Outcome r = Berth({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, std::string("berth ") + BERTH_VERSION + "\n");
}

TEST(BerthApp, BadUsageExitsTwoWithAMessage) {
  Outcome none = Berth({});
  EXPECT_EQ(none.status, 2);
  EXPECT_NE(none.err.find("plan"), std::string::npos);
  Outcome unknown = Berth({"frobnicate"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("berth: "), std::string::npos) << unknown.err;
  EXPECT_TRUE(unknown.out.empty());
  Outcome missing_file = Berth({"plan"});
  EXPECT_EQ(missing_file.status, 2);
  EXPECT_NE(missing_file.err.find("FILE"), std::string::npos) << missing_file.err;
  Outcome bad_seed = Berth({"plan", "-", "--seed", "many"});
  EXPECT_EQ(bad_seed.status, 2);
  EXPECT_NE(bad_seed.err.find("--seed"), std::string::npos) << bad_seed.err;
  Outcome bad_strategy = Berth({"plan", "-", "--placement-strategy", "tight"});
  EXPECT_EQ(bad_strategy.status, 2);
  EXPECT_NE(bad_strategy.err.find("--placement-strategy"), std::string::npos) << bad_strategy.err;
}

// Issue 13: `berth node add $'n\xe9'` aborted (exit 134) with an uncaught
// nlohmann::type_error; ids with '/' made requests no command could undo.
TEST(BerthApp, ArgumentsThatAreNotUtf8OrNotIdsExitTwoBeforeAnyRequest) {
  const std::vector<std::string> nowhere = {"--server", "127.0.0.1:1", "--token", "t"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), nowhere.begin(), nowhere.end());
    return Berth(args);
  };
  Outcome latin1 = with({"node", "add", "n\xe9"});
  EXPECT_EQ(latin1.status, 2);
  EXPECT_EQ(latin1.err, "berth: argument 3 'n\\xe9' is not valid UTF-8 (at byte 1)\n");
  EXPECT_EQ(with({"service", "create", "web\xff"}).status, 2);
  for (const std::vector<std::string>& args : {std::vector<std::string>{"node", "rm", "a/b"},
                                               {"service", "inspect", "../x"},
                                               {"job", "kill", "a b"},
                                               {"task", "why", "web.1/x"},
                                               {"service", "scale", "a/b=3"},
                                               {"task", "ls", "--service", "a?b"}}) {
    Outcome refused = with(args);
    EXPECT_EQ(refused.status, 2) << args[0] << " " << args[1];
    EXPECT_NE(refused.err.find("is not a valid"), std::string::npos) << refused.err;
  }
}

TEST(BerthApp, PlanReadsStandardInput) {
  Outcome r =
      Berth({"plan", "-", "--compact"}, R"({"nodes": [{"id": "n"}], "tasks": [{"id": "t"}]})");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, R"({"assignments":[{"task":"t","node":"n"}],"pending":[]})"
                   "\n");
  EXPECT_TRUE(r.err.empty());
}

// Only a command that takes one (service create) gets the words after
// `--`; for the others the line is parsed as it is, `--` included.
TEST(BerthApp, DoubleDashIsACommandsOnlyWhereOneIsTaken) {
  Outcome plan = Berth({"plan", "--compact", "--", "-"}, R"({"nodes": [], "tasks": []})");
  EXPECT_EQ(plan.status, 0) << plan.err;
  EXPECT_EQ(plan.out, R"({"assignments":[],"pending":[]})"
                      "\n");
  Outcome ls = Berth({"node", "ls", "--", "extra", "--server", "127.0.0.1:1", "--token", "t"});
  EXPECT_EQ(ls.status, 2);
  EXPECT_NE(ls.err.find("extra"), std::string::npos) << ls.err;
  Outcome help = Berth({"service", "create", "--help", "--", "x"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("Everything after --"), std::string::npos) << help.out;
}

}  // namespace
}  // namespace berth::cli
