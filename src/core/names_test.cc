#include "core/names.h"

#include <gtest/gtest.h>

#include <string>

namespace berth {
namespace {

TEST(Names, IdsAreSwarmKitServiceNames) {
  for (const char* id : {"a", "web", "Web-2", "a_b", "a--b", "n1", "0"})
    EXPECT_TRUE(CheckId(id).ok()) << id;
  EXPECT_TRUE(CheckId(std::string(63, 'a')).ok());
  for (const std::string& id :
       {std::string(""), std::string(64, 'a'), std::string("a/b"), std::string("../../etc/passwd"),
        std::string("a b"), std::string(" a"), std::string("a "), std::string("a\0b", 3),
        std::string("a\nb"), std::string("-a"), std::string("a-"), std::string("_a"),
        std::string("a.b"), std::string("\xc3\xa9"), std::string("n\xe9")})
    EXPECT_FALSE(CheckId(id).ok()) << id;
}

TEST(Names, ErrorsQuoteTheValueSafelyAndSayTheRule) {
  EXPECT_EQ(CheckId("a/b").message(),
            "'a/b' is not a valid id (use letters, digits, '-' and '_', starting and ending "
            "with a letter or digit)");
  EXPECT_EQ(CheckId(std::string(100'000, 'x')).message(),
            "'" + std::string(64, 'x') + "...' (100000 bytes) is longer than 63 characters");
  EXPECT_EQ(CheckId(std::string("n\xe9\n", 3)).message().substr(0, 12), "'n\\xe9\\x0a' ");
  EXPECT_EQ(CheckId("").message(), "must not be empty");
}

TEST(Names, TaskIdsAreIdsJoinedByDots) {
  for (const char* id : {"web.1", "edge.n7.2", "j", "a-b.c_d"})
    EXPECT_TRUE(CheckTaskId(id).ok()) << id;
  for (const char* id : {"web.", ".1", "a..b", "a/b", "a b.1", "web.-1"})
    EXPECT_FALSE(CheckTaskId(id).ok()) << id;
  EXPECT_TRUE(CheckTaskId(std::string(255, 'a')).ok());
  EXPECT_FALSE(CheckTaskId(std::string(256, 'a')).ok());
}

TEST(Names, LabelKeysAreWhatAConstraintCanName) {
  for (const char* key : {"az", "com.example.tier", "rack_1", "a-b", "9"})
    EXPECT_TRUE(CheckLabelKey(key).ok()) << key;
  for (const char* key : {"", "a b", "a=b", "a/b", "k\xff"})
    EXPECT_FALSE(CheckLabelKey(key).ok()) << key;
  EXPECT_TRUE(CheckLabelKey(std::string(128, 'k')).ok());
  EXPECT_FALSE(CheckLabelKey(std::string(129, 'k')).ok());
}

TEST(Names, TextIsBoundedUtf8WithoutControlCharacters) {
  EXPECT_TRUE(CheckLabelValue("").ok());
  EXPECT_TRUE(CheckLabelValue("us east 1 \xc3\xa9\xe2\x82\xac").ok());
  EXPECT_TRUE(CheckLabelValue(std::string(4096, 'v')).ok());
  EXPECT_FALSE(CheckLabelValue(std::string(4097, 'v')).ok());
  EXPECT_FALSE(CheckText("a\tb").ok());
  EXPECT_FALSE(CheckText(std::string("a\0b", 3)).ok());
  EXPECT_EQ(CheckText("ab\xff").message(), "'ab\\xff' is not valid UTF-8 (at byte 2)");
  EXPECT_TRUE(CheckText(std::string(255, 't')).ok());
  EXPECT_FALSE(CheckText(std::string(256, 't')).ok());
}

TEST(Names, FindInvalidUtf8NamesTheFirstBadByte) {
  EXPECT_EQ(FindInvalidUtf8("plain \xc3\xa9 \xf0\x9f\x98\x80"), std::string_view::npos);
  EXPECT_EQ(FindInvalidUtf8("ab\x80"), 2u);              // stray continuation byte
  EXPECT_EQ(FindInvalidUtf8("a\xc0\xaf"), 1u);           // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("\xed\xa0\x80"), 0u);        // surrogate
  EXPECT_EQ(FindInvalidUtf8("xy\xf4\x90\x80\x80"), 2u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("abc\xe2\x82"), 3u);         // truncated
  // Past and across the eight-byte ASCII steps.
  EXPECT_EQ(FindInvalidUtf8("abcdefghijklmnop\xff"), 16u);
  EXPECT_EQ(FindInvalidUtf8("abcdefg\xc3\xa9hijklmno\xe2\x82"), 17u);
  EXPECT_EQ(FindInvalidUtf8(std::string(1000, 'a') + "\xc3\xa9"), std::string_view::npos);
}

TEST(Names, QuotedIsAlwaysValidUtf8) {
  for (const std::string& value : {std::string("\xff\xfe"), std::string(200, '\x80'),
                                   std::string("\xc3\xa9") + std::string(70, '\xe2')}) {
    const std::string quoted = Quoted(value);
    EXPECT_EQ(FindInvalidUtf8(quoted), std::string_view::npos) << quoted;
  }
}

}  // namespace
}  // namespace berth
