#include "cli/plan_command.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace berth::cli {
namespace {

const Timestamp kNow = Timestamp{Duration{1'700'000'000'000}};

nlohmann::json Plan(std::string_view text, PlanOptions options = {}) {
  Result<std::string> out = PlanDocument(text, options, kNow);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? nlohmann::json::parse(*out) : nlohmann::json();
}

TEST(PlanDocument, YamlAndJsonGiveTheSamePlan) {
  auto json = Plan(R"({"nodes": [{"id": "n1"}, {"id": "n2"}],
                       "services": [{"id": "s", "spec_version": 1, "replicas": 3}]})");
  auto yaml = Plan(
      "nodes: [{id: n1}, {id: n2}]\n"
      "services:\n  - id: s\n    spec_version: 1\n    replicas: 3\n");
  EXPECT_EQ(json, yaml);
  EXPECT_EQ(json["assignments"].size(), 3u);
}

TEST(PlanDocument, SeedShufflesOnlyTies) {
  std::string doc = R"({"nodes": [)";
  for (int i = 0; i < 20; ++i)
    doc += (i ? "," : "") + std::string(R"({"id": "n)") + std::to_string(i) + "\"}";
  doc +=
      R"(], "services": [{"id": "s", "spec_version": 1}], "tasks": [{"id": "t", "service": "s"}]})";
  auto by_id = Plan(doc);
  EXPECT_EQ(by_id["assignments"][0]["node"], "n0");  // smallest id wins ties
  std::set<std::string> chosen;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlanOptions options;
    options.seed = seed;
    auto shuffled = Plan(doc, options);
    ASSERT_EQ(shuffled["assignments"].size(), 1u);
    chosen.insert(shuffled["assignments"][0]["node"].get<std::string>());
    EXPECT_EQ(shuffled, Plan(doc, options));  // the same seed, the same plan
  }
  EXPECT_GT(chosen.size(), 1u);
}

TEST(PlanDocument, ErrorsNameTheField) {
  Result<std::string> out = PlanDocument(R"({"nodes": [{"id": "n", "cpu": 1}]})", {}, kNow);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "nodes[0]: unknown field 'cpu'");
  EXPECT_EQ(PlanDocument("[1, 2]", {}, kNow).status().message(),
            "expected the document to be an object, got array");
  EXPECT_EQ(PlanDocument("just text", {}, kNow).status().message(),
            "expected the document to be an object, got string");
  // Issue 13: text starting with '[' went to the YAML parser, which called
  // deep nesting "invalid YAML at line 1, column 501: bad file".
  EXPECT_EQ(PlanDocument(R"([{"id": "n1"}])", {}, kNow).status().message(),
            "expected the document to be an object, got array");
  EXPECT_EQ(PlanDocument(std::string(600, '['), {}, kNow).status().message(),
            "invalid JSON: nested deeper than 32 levels");
  EXPECT_EQ(PlanDocument(R"({"nodes": [{"id": "a/b"}]})", {}, kNow).status().message(),
            "nodes[0].id: 'a/b' is not a valid id (use letters, digits, '-' and '_', starting and "
            "ending with a letter or digit)");
  EXPECT_EQ(PlanDocument(R"({"nodes": [{"id": "n", "resources": {"cpu": 1.2345}}]})", {}, kNow)
                .status()
                .message(),
            "nodes[0].resources.cpu: invalid cpu quantity 1.2345 (expected a non-negative number "
            "with at most 3 decimals)");
}

TEST(RunPlan, UnreadableFileExitsTwoAndPrintsNothing) {
  std::istringstream in;
  std::ostringstream out, err;
  ManualClock clock(kNow);
  PlanOptions options;
  options.file = "/nonexistent/berth/plan.yaml";
  EXPECT_EQ(RunPlan(options, in, out, err, clock), 2);
  EXPECT_TRUE(out.str().empty());
  EXPECT_EQ(err.str(),
            "berth plan: cannot read '/nonexistent/berth/plan.yaml': No such file or directory\n");
}

TEST(RunPlan, InvalidDocumentExitsTwoNamingTheSource) {
  std::istringstream in(R"({"tasks": [{"id": "t", "state": "sleeping"}]})");
  std::ostringstream out, err;
  ManualClock clock(kNow);
  PlanOptions options;
  options.file = "-";
  EXPECT_EQ(RunPlan(options, in, out, err, clock), 2);
  EXPECT_TRUE(out.str().empty());
  EXPECT_EQ(
      err.str().rfind("berth plan: <stdin>: tasks[0].state: invalid task state 'sleeping'", 0), 0u)
      << err.str();
}

TEST(RunPlan, NowDefaultsToTheClock) {
  // A failure 1 minute before the clock's time is recent; 5 of them make n1
  // faulty, so the task goes to n2 although n2 already runs one.
  std::string tasks;
  for (int i = 0; i < 5; ++i)
    tasks += R"({"id": "f)" + std::to_string(i) + R"(", "service": "s", "node": "n1",
                 "state": "failed", "updated_at": "2026-01-01T00:09:00Z"},)";
  std::istringstream in(R"({"nodes": [{"id": "n1"}, {"id": "n2"}],
    "services": [{"id": "s", "spec_version": 1}],
    "tasks": [)" + tasks +
                        R"({"id": "r", "service": "s", "node": "n2", "state": "running"},
                              {"id": "new", "service": "s"}]})");
  std::ostringstream out, err;
  ManualClock clock(*ParseRfc3339("2026-01-01T00:10:00Z"));
  PlanOptions options;
  options.file = "-";
  ASSERT_EQ(RunPlan(options, in, out, err, clock), 0) << err.str();
  EXPECT_EQ(nlohmann::json::parse(out.str())["assignments"][0]["node"], "n2");
}

}  // namespace
}  // namespace berth::cli
