#include "cli/job/command_lines.h"

#include <gtest/gtest.h>

namespace berth::cli {
namespace {

using Words = std::vector<std::string>;

Words Split(std::string_view line) {
  Result<Words> words = SplitCommandLine(line);
  EXPECT_TRUE(words.ok()) << words.status().message();
  return words.ok() ? *words : Words{"<error>"};
}

std::string Refusal(std::string_view text) {
  Result<std::vector<Words>> lines = ParseCommandLines(text);
  return lines.ok() ? "accepted" : lines.status().message();
}

TEST(CommandLines, WordsSplitAtBlanksAndQuotesKeepThemTogether) {
  EXPECT_EQ(Split("make  -C\tlib test"), (Words{"make", "-C", "lib", "test"}));
  EXPECT_EQ(Split("sh -c 'echo \"two words\" > $out'"),
            (Words{"sh", "-c", "echo \"two words\" > $out"}));
  EXPECT_EQ(Split(R"(grep "a \"quoted\" \$word \n" file\ name)"),
            (Words{"grep", R"(a "quoted" $word \n)", "file name"}));
  EXPECT_EQ(Split("a'b'\"c\"d"), (Words{"abcd"}));  // adjacent parts are one word
  EXPECT_EQ(Split("printf '' \"\" x"), (Words{"printf", "", "", "x"}));
  EXPECT_EQ(Split("echo a#b # a comment 'not closed"), (Words{"echo", "a#b"}));
  EXPECT_EQ(Split("echo '#' \\#"), (Words{"echo", "#", "#"}));
  EXPECT_EQ(Split("   "), Words{});
}

TEST(CommandLines, NothingIsExpandedAsAShellWould) {
  EXPECT_EQ(Split("echo $HOME ~ * `id` $(id) a;b | c"),
            (Words{"echo", "$HOME", "~", "*", "`id`", "$(id)", "a;b", "|", "c"}));
}

TEST(CommandLines, AFileGivesOneCommandLinePerLineSkippingBlanksAndComments) {
  Result<std::vector<Words>> lines =
      ParseCommandLines("# build\n\nmake lib\r\n  # indented comment\nsh -c 'exit 3'");
  ASSERT_TRUE(lines.ok()) << lines.status().message();
  EXPECT_EQ(*lines, (std::vector<Words>{{"make", "lib"}, {"sh", "-c", "exit 3"}}));
}

TEST(CommandLines, MalformedLinesAreRefusedWithTheirNumber) {
  EXPECT_EQ(Refusal("true\n\necho 'oops\n"), "line 3: unterminated single quote (')");
  EXPECT_EQ(Refusal("echo \"oops\ntrue"), "line 1: unterminated double quote (\")");
  EXPECT_EQ(Refusal("true\necho \\"), "line 2: a backslash ends the line (a line cannot continue)");
  EXPECT_EQ(Refusal(std::string("echo a\0b", 8)), "line 1: contains a NUL character");
}

TEST(CommandLines, AFileWithoutCommandLinesIsRefused) {
  const std::string none =
      "no command lines (the file is empty or holds only blank lines and comments)";
  EXPECT_EQ(Refusal(""), none);
  EXPECT_EQ(Refusal("\n  \n# only a comment\n"), none);
}

}  // namespace
}  // namespace berth::cli
