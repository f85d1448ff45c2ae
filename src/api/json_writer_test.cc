#include "api/json_writer.h"

#include <gtest/gtest.h>

#include "api/json_fields.h"

namespace berth::api {
namespace {

// Every byte below 0x80, and UTF-8 beyond, comes out as nlohmann's dump
// writes it, and reads back as it went in.
TEST(JsonWriter, EscapesAsNlohmannDoes) {
  std::string text;
  for (int c = 1; c < 0x80; ++c) text += static_cast<char>(c);
  text += "zürich \xE2\x82\xAC";
  std::string out;
  AppendJsonString(out, text);
  EXPECT_EQ(out, Json(text).dump());
  EXPECT_EQ(Json::parse(out).get<std::string>(), text);
}

TEST(JsonWriter, WritesOneObjectWithDataKeys) {
  std::string out;
  {
    ObjectWriter w(out);
    w.String("id", "n\"1");
    w.Text("empty", "");
    w.Number("n", -3);
    w.Bool("up", true);
    w.Key("labels");
    ObjectWriter labels(out);
    labels.DataKey("a\\b");
    AppendJsonString(out, "v");
  }
  EXPECT_EQ(Json::parse(out),
            Json::parse(R"({"id": "n\"1", "n": -3, "up": true, "labels": {"a\\b": "v"}})"));
}

}  // namespace
}  // namespace berth::api
