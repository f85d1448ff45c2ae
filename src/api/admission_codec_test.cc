#include "api/admission_codec.h"

#include <gtest/gtest.h>

#include "api/document.h"

namespace berth::api {
namespace {

const Timestamp kNow = *ParseRfc3339("2026-01-01T00:10:00Z");

Result<AdmissionDocument> Decode(std::string_view text) {
  Result<nlohmann::json> doc = ParseDocumentText(text);
  if (!doc.ok()) return doc.status();
  return DecodeAdmissionDocument(*doc, kNow);
}

std::string ErrorOf(std::string_view text) {
  Result<AdmissionDocument> r = Decode(text);
  return r.ok() ? "<decoded>" : r.status().message();
}

TEST(DecodeAdmission, TheSpecExample) {
  auto doc = Decode(R"({
    "workers": 1000,
    "classes": {"land": 40, "diff": 25},
    "requestors": [["^land", "land"], ["^diff", "diff"]],
    "rebalance": {"threshold": 50, "min_duration_s": 60, "over_since_s": 120},
    "jobs": [
      {"id": "j1", "requestor": "land-ci", "running": 3, "waiting": 5},
      {"id": "j2", "requestor": "diff-x",
       "running": [{"id": "r1", "started_at": "2026-01-01T00:00:00Z"}],
       "waiting": [{"id": "a", "duration_s": 30}, {"id": "b"}]}]})");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->now, kNow);
  EXPECT_EQ(doc->workers, 1000);
  EXPECT_EQ(doc->classes.size(), 2u);
  EXPECT_EQ(doc->requestors,
            (std::vector<fairshare::RequestorRule>{{"^land", "land"}, {"^diff", "diff"}}));
  EXPECT_EQ(doc->rebalance_threshold, 50);
  EXPECT_EQ(doc->rebalance_min_duration, std::chrono::seconds(60));
  EXPECT_EQ(doc->over_since, std::chrono::seconds(120));
  ASSERT_EQ(doc->jobs.size(), 2u);
  const auto& j1 = doc->jobs[0];
  ASSERT_EQ(j1.running.size(), 3u);
  EXPECT_EQ(j1.running[0].id, "r0");
  EXPECT_EQ(j1.running[2].id, "r2");
  EXPECT_GT(j1.running[0].started_at, j1.running[1].started_at);  // r0 started most recently
  ASSERT_EQ(j1.waiting.size(), 5u);
  EXPECT_EQ(j1.waiting[4].id, "t4");
  EXPECT_FALSE(j1.waiting[0].expected_duration.has_value());
  const auto& j2 = doc->jobs[1];
  EXPECT_EQ(FormatRfc3339(j2.running[0].started_at), "2026-01-01T00:00:00Z");
  EXPECT_EQ(j2.waiting[0].expected_duration, std::chrono::seconds(30));
  EXPECT_FALSE(j2.waiting[1].expected_duration.has_value());
}

TEST(DecodeAdmission, WithoutRequestorsEachClassMatchesItsOwnName) {
  auto doc = Decode("workers: 10\nclasses: {a-b: 60, c: 40}\n");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc->requestors,
            (std::vector<fairshare::RequestorRule>{{"^a\\-b$", "a-b"}, {"^c$", "c"}}));
  EXPECT_FALSE(doc->over_since.has_value());
  EXPECT_EQ(doc->rebalance_threshold, 0);
}

TEST(DecodeAdmission, ShapeErrorsNameTheField) {
  EXPECT_EQ(ErrorOf(R"({"classes": {"a": 100}})"), "missing field 'workers'");
  EXPECT_EQ(ErrorOf(R"({"workers": 1})"), "missing field 'classes'");
  EXPECT_EQ(ErrorOf(R"({"workers": -1, "classes": {}})"),
            "workers: expected a non-negative integer, got -1");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1.5}})"),
            "classes.a: expected an integer, got 1.5");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "colour": 1})"),
            "unknown field 'colour'");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "requestors": [["x"]]})"),
            R"(requestors[0]: expected a [pattern, class] pair, got ["x"])");
  EXPECT_EQ(
      ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "rebalance": {"threshold": 1, "after": 2}})"),
      "rebalance: unknown field 'after'");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "rebalance": {"min_duration_s": -5}})"),
            "rebalance.min_duration_s: expected a non-negative number of seconds, got -5");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "jobs": [{"id": "j"}, {"id": "j"}]})"),
            "jobs[1].id: duplicate job id 'j'");
  EXPECT_EQ(
      ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "jobs": [{"id": "j", "running": "3"}]})"),
      "jobs[0].running: expected a count or a list of running tasks, got string");
  EXPECT_EQ(ErrorOf(R"({"workers": 1, "classes": {"a": 1},
    "jobs": [{"id": "j", "running": [{"id": "x"}], "waiting": [{"id": "x"}]}]})"),
            "jobs[0].waiting[0].id: duplicate task id 'x'");
  EXPECT_EQ(
      ErrorOf(R"({"workers": 1, "classes": {"a": 1}, "jobs": [{"id": "j", "waiting": 1e12}]})"),
      "jobs[0].waiting: expected a non-negative integer, got 1000000000000.0");
}

TEST(IsAdmissionDocument, ByItsFields) {
  EXPECT_TRUE(IsAdmissionDocument(nlohmann::json::parse(R"({"workers": 1})")));
  EXPECT_TRUE(IsAdmissionDocument(nlohmann::json::parse(R"({"jobs": []})")));
  EXPECT_FALSE(IsAdmissionDocument(nlohmann::json::parse(R"({"nodes": []})")));
  EXPECT_FALSE(IsAdmissionDocument(nlohmann::json::parse(R"({})")));
}

}  // namespace
}  // namespace berth::api
