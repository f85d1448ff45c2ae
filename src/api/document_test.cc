#include "api/document.h"

#include <gtest/gtest.h>

#include <sstream>

namespace berth::api {
namespace {

TEST(ParseDocumentText, JsonAndYamlDecodeAlike) {
  auto json = ParseDocumentText(R"({"a": 1, "b": [true, null, "x"], "c": {"d": 1.5}})");
  auto yaml = ParseDocumentText("a: 1\nb: [true, ~, x]\nc:\n  d: 1.5\n");
  ASSERT_TRUE(json.ok()) << json.status().message();
  ASSERT_TRUE(yaml.ok()) << yaml.status().message();
  EXPECT_EQ(*json, *yaml);
}

TEST(ParseDocumentText, YamlScalarsFollowTheCoreSchema) {
  auto doc = ParseDocumentText(
      "int: 42\nneg: -7\nhex: 0x1f\noct: 0o17\nfloat: 2.5e3\nquoted: \"42\"\n"
      "tagged: !!str 42\nbool: False\nword: yes\nversion: 1.2.3\n");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ((*doc)["int"], 42);
  EXPECT_TRUE((*doc)["int"].is_number_integer());
  EXPECT_EQ((*doc)["neg"], -7);
  EXPECT_EQ((*doc)["hex"], 31);
  EXPECT_EQ((*doc)["oct"], 15);
  EXPECT_EQ((*doc)["float"], 2500.0);
  EXPECT_EQ((*doc)["quoted"], "42");
  EXPECT_EQ((*doc)["tagged"], "42");
  EXPECT_EQ((*doc)["bool"], false);
  EXPECT_EQ((*doc)["word"], "yes");  // YAML 1.2: not a boolean
  EXPECT_EQ((*doc)["version"], "1.2.3");
}

TEST(ParseDocumentText, DuplicateKeysAreErrorsInBothSpellings) {
  auto json = ParseDocumentText(R"({"a": {"x": 1, "x": 2}})");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().message(), "invalid JSON: duplicate key 'x'");
  auto yaml = ParseDocumentText("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(yaml.ok());
  EXPECT_EQ(yaml.status().message(), "invalid YAML at line 3, column 1: duplicate key 'a'");
}

TEST(ParseDocumentText, SyntaxErrorsNameTheLine) {
  auto json = ParseDocumentText("{\"a\": 1,\n \"b\": }");
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(json.status().message().find("invalid JSON: parse error at line 2"), std::string::npos)
      << json.status().message();
  auto yaml = ParseDocumentText("a: [1, 2\nb: 3\n");
  ASSERT_FALSE(yaml.ok());
  EXPECT_EQ(yaml.status().message().rfind("invalid YAML at line", 0), 0u)
      << yaml.status().message();
}

// Found by fuzz/document_fuzz: yaml-cpp 0.7's LoadAll never returns on a
// stray comma (its parser reports empty documents without end), and took
// `berth plan` down with it.
TEST(ParseDocumentText, AStrayCommaEndsInsteadOfHangingTheParser) {
  auto doc = ParseDocumentText("\n,\n    ");
  ASSERT_TRUE(doc.ok()) << doc.status().message();  // yaml-cpp reads it as an empty document
  EXPECT_TRUE(doc->is_null());
}

// Found by fuzz/document_fuzz: a YAML string with invalid UTF-8 became a
// JSON string that nlohmann::json cannot print, and quoting it in an error
// message aborted `berth plan`. JSON text itself is always valid UTF-8.
TEST(ParseDocumentText, InvalidUtf8InYamlIsAnError) {
  auto doc = ParseDocumentText("requestors: [[\"\xff\", land]]\n");
  ASSERT_FALSE(doc.ok());
  EXPECT_NE(doc.status().message().find("invalid UTF-8"), std::string::npos)
      << doc.status().message();
  EXPECT_FALSE(ParseDocumentText("key\xc0\xaf: 1\n").ok());                      // overlong '/'
  EXPECT_FALSE(ParseDocumentText("a: \"\xed\xa0\x80\"\n").ok());                 // a surrogate
  EXPECT_TRUE(ParseDocumentText("a: \"caf\xc3\xa9 \xf0\x9f\x9a\xa2\"\n").ok());  // é and an emoji
}

TEST(ParseDocumentText, UnsupportedYamlIsRejected) {
  EXPECT_EQ(ParseDocumentText("a: 1\n---\nb: 2\n").status().message(),
            "invalid YAML: expected one document, found more");
  EXPECT_NE(ParseDocumentText("a: !!binary aGk=\n").status().message().find("unsupported tag"),
            std::string::npos);
  EXPECT_NE(ParseDocumentText("? [1, 2]\n: x\n").status().message().find("keys must be scalars"),
            std::string::npos);
}

TEST(ParseDocumentText, DeepNestingIsAnErrorNotACrash) {
  // Issue 13: 100,000 levels of labels crashed berthd.
  std::string json = R"({"id": "n1", "labels": )";
  for (int i = 0; i < 100'000; ++i) json += R"({"a": )";
  auto parsed = ParseJsonText(json + "1" + std::string(100'000, '}') + "}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "invalid JSON: nested deeper than 32 levels");
  EXPECT_EQ(ParseDocumentText(std::string(10000, '[')).status().message(),
            "invalid JSON: nested deeper than 32 levels");
  std::string yaml;
  for (int i = 0; i < 1000; ++i) yaml += "- ";
  auto deep_yaml = ParseDocumentText(yaml + "x\n");
  ASSERT_FALSE(deep_yaml.ok());
  EXPECT_EQ(deep_yaml.status().message().rfind("invalid YAML", 0), 0u)
      << deep_yaml.status().message();
  EXPECT_NE(deep_yaml.status().message().find("nested deeper than 32 levels"), std::string::npos);
  std::string nested_32 = std::string(32, '[') + std::string(32, ']');
  EXPECT_TRUE(ParseDocumentText(nested_32).ok());
}

TEST(ParseDocumentText, StringsListsAndValuesAreBounded) {
  DocumentLimits limits;
  limits.max_string_bytes = 8;
  limits.max_items = 3;
  limits.max_values = 20;
  EXPECT_TRUE(ParseJsonText(R"({"abcdefgh": "12345678"})", limits).ok());
  EXPECT_EQ(ParseJsonText(R"({"a": "123456789"})", limits).status().message(),
            "invalid JSON: a string longer than 8 bytes: '123456789'");
  EXPECT_EQ(ParseJsonText(R"({"abcdefghi": 1})", limits).status().message(),
            "invalid JSON: a string longer than 8 bytes: 'abcdefghi'");
  EXPECT_TRUE(ParseJsonText("[1, 2, 3]", limits).ok());
  EXPECT_EQ(ParseJsonText("[1, 2, 3, 4]", limits).status().message(),
            "invalid JSON: a list or object with more than 3 items");
  EXPECT_EQ(ParseJsonText(R"({"a": 1, "b": 2, "c": 3, "d": 4})", limits).status().message(),
            "invalid JSON: a list or object with more than 3 items");
  EXPECT_FALSE(ParseDocumentText("a: [1, 2, 3, 4]\n", limits).ok());
  // An alias is expanded each time it is used: a small document, many values.
  const std::string bomb = "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n";
  const auto expanded = ParseDocumentText(bomb, limits);
  ASSERT_FALSE(expanded.ok());
  EXPECT_NE(expanded.status().message().find("more than 20 values in all"), std::string::npos)
      << expanded.status().message();
}

TEST(ParseDocumentText, InvalidUtf8IsAnErrorSayingWhere) {
  EXPECT_EQ(ParseJsonText("{\"id\":\n \"n\xe9\"}").status().message(),
            "invalid JSON: invalid UTF-8 at line 2, column 4 (byte 10)");
  EXPECT_EQ(ParseDocumentText("id: n\xff\n").status().message(),
            "invalid YAML: invalid UTF-8 at line 1, column 6 (byte 5)");
}

TEST(ReadDocumentFile, RefusesMoreThanTheLimitBeforeReadingItAll) {
  std::istringstream in(std::string(100, 'x'));
  EXPECT_EQ(ReadDocumentFile("-", in, 64).status().message(), "'-' is larger than 64 bytes");
  std::istringstream small("nodes: []\n");
  EXPECT_EQ(*ReadDocumentFile("-", small), "nodes: []\n");
  EXPECT_EQ(ReadDocumentFile("/nonexistent/doc.yaml", small).status().message(),
            "cannot read '/nonexistent/doc.yaml': No such file or directory");
  EXPECT_EQ(ReadDocumentFile("/", small).status().message(), "cannot read '/': Is a directory");
}

TEST(ParseDocumentText, AJsonListIsJsonNotYaml) {
  auto list = ParseDocumentText(R"([{"id": "n1"}])");
  ASSERT_TRUE(list.ok()) << list.status().message();
  EXPECT_TRUE(list->is_array());
  EXPECT_EQ(ParseDocumentText("[1,").status().message().rfind("invalid JSON", 0), 0u);
}

TEST(ParseDocumentText, EmptyTextIsNull) {
  auto doc = ParseDocumentText("  \n");
  ASSERT_TRUE(doc.ok());
  EXPECT_TRUE(doc->is_null());
}

}  // namespace
}  // namespace berth::api
