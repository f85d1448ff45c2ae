#include "executor/log_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/test_dir.h"

namespace berth::executor {
namespace {

std::vector<uint64_t> Seqs(const std::vector<LogLine>& lines) {
  std::vector<uint64_t> seqs;
  for (const LogLine& line : lines) seqs.push_back(line.seq);
  return seqs;
}

std::vector<uint64_t> Range(uint64_t first, uint64_t last) {
  std::vector<uint64_t> seqs;
  for (uint64_t s = first; s <= last; ++s) seqs.push_back(s);
  return seqs;
}

TEST(LineBuffer, CutsLinesAndHoldsAPartialOne) {
  LineBuffer buffer;
  EXPECT_EQ(buffer.Add("one\ntw"), std::vector<std::string>{"one"});
  EXPECT_EQ(buffer.Add("o\n\nthr"), (std::vector<std::string>{"two", ""}));
  EXPECT_EQ(buffer.Finish(), "thr");
  EXPECT_EQ(buffer.Finish(), std::nullopt);
}

// A line longer than a record goes in pieces; one exactly a record long
// stays one record, even when its newline comes in a later read.
TEST(LineBuffer, CutsALongLineIntoPiecesOfARecord) {
  LineBuffer buffer;
  const std::string piece(kMaxRecordText, 'x');
  EXPECT_EQ(buffer.Add(piece + piece + "y"), (std::vector<std::string>{piece, piece}));
  EXPECT_EQ(buffer.Add("\n"), std::vector<std::string>{"y"});
  EXPECT_TRUE(buffer.Add(piece).empty());
  EXPECT_EQ(buffer.Add("\nz\n"), (std::vector<std::string>{piece, "z"}));
}

TEST(LogRecord, ParsesItsFourFields) {
  EXPECT_EQ(ParseLogRecord("7 1700000000000000000 stderr two  words "),
            (LogLine{7, 1700000000000000000, "stderr", "two  words "}));
  EXPECT_EQ(ParseLogRecord("1 5 stdout "), (LogLine{1, 5, "stdout", ""}));
  EXPECT_EQ(ParseLogRecord("1 5 stdout"), std::nullopt);  // cut short
  EXPECT_EQ(ParseLogRecord("x 5 stdout hi"), std::nullopt);
  EXPECT_EQ(ParseLogRecord(""), std::nullopt);
}

TEST(LogWriter, WritesRecordsThatReadLogReturns) {
  store::TestDir dir;
  LogWriter writer(dir.path());
  ASSERT_TRUE(writer.Open().ok());
  ASSERT_TRUE(writer.Append(100, "stdout", "hello world").ok());
  ASSERT_TRUE(writer.Append(200, "stderr", "").ok());
  ASSERT_TRUE(writer.Append(300, "stdout", "a\nb").ok());  // two records
  EXPECT_EQ(writer.last_seq(), 4u);
  const Result<std::vector<LogLine>> lines = ReadLog(dir.path(), 0, 0);
  ASSERT_TRUE(lines.ok()) << lines.status().message();
  EXPECT_EQ(*lines, (std::vector<LogLine>{{1, 100, "stdout", "hello world"},
                                          {2, 200, "stderr", ""},
                                          {3, 300, "stdout", "a"},
                                          {4, 300, "stdout", "b"}}));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 2, 0)), Range(3, 4));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 0, 1)), Range(4, 4));
  EXPECT_TRUE(ReadLog(dir.path(), 4, 0)->empty());
}

// Rotation keeps max_files files, and seq runs on across them; tail and
// after_seq work over the files kept.
TEST(LogWriter, RotatesKeepingAtMostMaxFiles) {
  store::TestDir dir;
  LogWriter writer(dir.path(), {.max_bytes = 100, .max_files = 3});
  ASSERT_TRUE(writer.Open().ok());
  for (int i = 1; i <= 60; ++i) {
    ASSERT_TRUE(writer.Append(i, "stdout", "line " + std::to_string(i)).ok());
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    files.push_back(entry.path().filename().string());
    EXPECT_LE(entry.file_size(), 100u);
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"output.log", "output.log.1", "output.log.2"}));

  const std::vector<LogLine> all = *ReadLog(dir.path(), 0, 0);
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(Seqs(all), Range(all.front().seq, 60));  // the newest, without a gap
  EXPECT_GT(all.front().seq, 1u);                    // the oldest were dropped
  EXPECT_EQ(all.back().text, "line 60");
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 0, 6)), Range(55, 60));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 55, 0)), Range(56, 60));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 50, 3)), Range(58, 60));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 1, 0)), Seqs(all));
}

TEST(LogWriter, KeepsOneFileWhenToldTo) {
  store::TestDir dir;
  LogWriter writer(dir.path(), {.max_bytes = 40, .max_files = 1});
  ASSERT_TRUE(writer.Open().ok());
  for (int i = 1; i <= 5; ++i) ASSERT_TRUE(writer.Append(i, "stdout", "twelve chars").ok());
  EXPECT_FALSE(std::filesystem::exists(LogFilePath(dir.path(), 1)));
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 0, 0)), Range(5, 5));
}

// A writer opened on a log that has records carries on numbering them.
TEST(LogWriter, CarriesOnTheSeqOfAnExistingLog) {
  store::TestDir dir;
  {
    LogWriter writer(dir.path(), {.max_bytes = 30, .max_files = 3});
    ASSERT_TRUE(writer.Open().ok());
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(writer.Append(1, "stdout", "x").ok());
  }
  LogWriter writer(dir.path(), {.max_bytes = 30, .max_files = 3});
  ASSERT_TRUE(writer.Open().ok());
  EXPECT_EQ(writer.last_seq(), 4u);
  ASSERT_TRUE(writer.Append(1, "stdout", "y").ok());
  EXPECT_EQ(ReadLog(dir.path(), 0, 1)->back(), (LogLine{5, 1, "stdout", "y"}));
}

// A line being written as it is read (no newline yet) and a damaged line
// are left out; a missing directory is NotFound, an empty one has no lines.
TEST(ReadLog, SkipsWhatIsNotARecord) {
  store::TestDir dir;
  EXPECT_TRUE(ReadLog(dir.path(), 0, 0)->empty());
  std::ofstream(LogFilePath(dir.path(), 0)) << "1 10 stdout a\ngarbage\n2 20 stdout b\n3 30 std";
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 0, 0)), Range(1, 2));
  EXPECT_EQ(ReadLog(dir.path() + "/none", 0, 0).status().code(), StatusCode::kNotFound);
}

// Rotation during a read shows a file's records twice, under two names:
// each is returned once.
TEST(ReadLog, ReturnsEachRecordOnceWhenFilesRepeatThem) {
  store::TestDir dir;
  std::ofstream(LogFilePath(dir.path(), 0)) << "3 30 stdout c\n";
  std::ofstream(LogFilePath(dir.path(), 1)) << "3 30 stdout c\n";
  std::ofstream(LogFilePath(dir.path(), 2)) << "1 10 stdout a\n2 20 stdout b\n";
  EXPECT_EQ(Seqs(*ReadLog(dir.path(), 0, 0)), Range(1, 3));
}

}  // namespace
}  // namespace berth::executor
