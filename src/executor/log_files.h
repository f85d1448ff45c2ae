// A task's output log: what its process wrote to stdout and stderr, kept in
// its directory by its shim (task_shim.h) and read by berth-node (`berth
// logs`), while the task runs and after it ended.
//
// The files are output.log (the newest) and output.log.1 .. output.log.<n>
// (older ones, .1 the newest of them). Each holds records, one a line:
//
//   <seq> <unix time in ns> <stream> <text>\n
//
// seq counts records from 1 across every file of the task, without gaps
// and never restarting; the time is when the shim read the line; stream is
// "stdout" or "stderr"; text is the line without its newline, or a piece of
// kMaxRecordText bytes of a longer line (which continues in the next
// record of its stream). Text is the bytes the task wrote, unchanged (it
// may hold any byte but '\n').
//
// Rotation: when a record would take output.log over max_bytes, each
// output.log.<k> becomes output.log.<k+1>, the one beyond max_files is
// dropped, output.log becomes output.log.1 and a new output.log starts. So
// a reader may find a file gone or renamed between listing and reading;
// ReadLog allows for that.
//
// LogWriter is for one writer (the shim's single thread); ReadLog may run
// on any thread, in any process, while the writer writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace berth::executor {

inline constexpr size_t kMaxRecordText = 16 * 1024;

struct LogLine {
  uint64_t seq = 0;
  int64_t time_ns = 0;  // unix time
  std::string stream;   // "stdout" or "stderr"
  std::string text;
  bool operator==(const LogLine&) const = default;
};

// The records of the log in `dir` with seq > after_seq, oldest first; when
// tail > 0 only the last `tail` of them. Lines that are not records (a
// record being written as it is read, a damaged file) are skipped. An
// empty list when the task wrote nothing yet; NotFound when `dir` does not
// exist.
Result<std::vector<LogLine>> ReadLog(const std::string& dir, uint64_t after_seq, size_t tail);

// One line of a log file without its newline; nullopt when it is not a record.
std::optional<LogLine> ParseLogRecord(std::string_view line);

// Cuts the bytes of one stream into record texts: each line without its
// newline, and a line longer than kMaxRecordText in pieces of that size.
class LineBuffer {
 public:
  // The texts that `bytes` completes, in order; a partial line is held.
  std::vector<std::string> Add(std::string_view bytes);
  // The stream ended: the partial line held, if any.
  std::optional<std::string> Finish();

 private:
  std::string partial_;
};

struct LogWriterOptions {
  int64_t max_bytes = 10 << 20;  // per file; a record alone larger still gets a file
  int max_files = 3;             // output.log included; at least 1
};

// Appends records to the log in a directory, rotating as above. Each
// record is written with one write(2), so another process reads it as soon
// as Append returns.
class LogWriter {
 public:
  explicit LogWriter(std::string dir, LogWriterOptions options = {});
  ~LogWriter();
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Opens output.log, creating it. seq carries on after the records
  // already in the directory, so a log is never numbered twice.
  Status Open();
  // Appends one record per line of `text` (a text without '\n' is one).
  Status Append(int64_t time_ns, std::string_view stream, std::string_view text);
  uint64_t last_seq() const { return seq_; }

 private:
  Status AppendRecord(int64_t time_ns, std::string_view stream, std::string_view text);
  Status Rotate();
  Status OpenNewest();

  std::string dir_;
  LogWriterOptions options_;
  int fd_ = -1;
  int64_t size_ = 0;  // of output.log
  uint64_t seq_ = 0;  // the last record's
};

// The path of output.log (k = 0) or output.log.<k>.
std::string LogFilePath(const std::string& dir, int k);

}  // namespace berth::executor
