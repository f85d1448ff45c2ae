#include "executor/log_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace berth::executor {
namespace {

constexpr std::string_view kBaseName = "output.log";

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// The whole file; nullopt when it does not exist (rotated away), an error
// when it cannot be read.
Result<std::optional<std::string>> ReadFileIfThere(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>();
    return Status::Internal(Errno("cannot open " + path));
  }
  std::string content;
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status error = Status::Internal(Errno("cannot read " + path));
      ::close(fd);
      return error;
    }
    if (n == 0) break;
    content.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return std::optional<std::string>(std::move(content));
}

// The highest k of the output.log.<k> in `dir`; -1 when `dir` is missing.
Result<int> HighestRotated(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) {
    if (errno == ENOENT) return -1;
    return Status::Internal(Errno("cannot list " + dir));
  }
  int highest = 0;
  while (const dirent* entry = ::readdir(d)) {
    const std::string_view name = entry->d_name;
    if (name.size() <= kBaseName.size() + 1 || !name.starts_with(kBaseName) ||
        name[kBaseName.size()] != '.') {
      continue;
    }
    int k = 0;
    if (ParseNumber(name.substr(kBaseName.size() + 1), &k) && k > highest) highest = k;
  }
  ::closedir(d);
  return highest;
}

// Complete records of `content`, oldest first (a last line without its
// newline is being written: left out).
std::vector<LogLine> ParseRecords(std::string_view content) {
  std::vector<LogLine> lines;
  size_t start = 0;
  for (size_t end; (end = content.find('\n', start)) != std::string_view::npos; start = end + 1) {
    if (std::optional<LogLine> line = ParseLogRecord(content.substr(start, end - start))) {
      lines.push_back(std::move(*line));
    }
  }
  return lines;
}

}  // namespace

std::string LogFilePath(const std::string& dir, int k) {
  std::string path = dir + "/" + std::string(kBaseName);
  if (k > 0) path += "." + std::to_string(k);
  return path;
}

std::optional<LogLine> ParseLogRecord(std::string_view line) {
  LogLine out;
  std::string_view fields[3];
  for (std::string_view& field : fields) {
    const size_t space = line.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    field = line.substr(0, space);
    line.remove_prefix(space + 1);
  }
  if (!ParseNumber(fields[0], &out.seq) || !ParseNumber(fields[1], &out.time_ns) ||
      fields[2].empty()) {
    return std::nullopt;
  }
  out.stream = fields[2];
  out.text = line;
  return out;
}

// Newest file first: rotation only moves contents to higher numbers, so a
// rotation during the reading shows a file's records again (dropped: their
// seq is not below what was read already) but never hides any. Older files
// hold only lower seqs, so the reading stops once it has enough.
Result<std::vector<LogLine>> ReadLog(const std::string& dir, uint64_t after_seq, size_t tail) {
  const Result<int> highest = HighestRotated(dir);
  if (!highest.ok()) return highest.status();
  if (*highest < 0) return Status::NotFound("no log directory " + dir);
  std::vector<std::vector<LogLine>> newest_first;
  size_t count = 0;
  uint64_t lowest_seq = UINT64_MAX;
  for (int k = 0; k <= *highest; ++k) {
    Result<std::optional<std::string>> content = ReadFileIfThere(LogFilePath(dir, k));
    if (!content.ok()) return content.status();
    if (!*content) continue;
    std::vector<LogLine> lines = ParseRecords(**content);
    const bool reached_after = !lines.empty() && lines.front().seq <= after_seq;
    std::erase_if(lines,
                  [&](const LogLine& l) { return l.seq <= after_seq || l.seq >= lowest_seq; });
    if (!lines.empty()) lowest_seq = lines.front().seq;
    count += lines.size();
    newest_first.push_back(std::move(lines));
    if (reached_after || (tail > 0 && count >= tail)) break;
  }
  std::vector<LogLine> out;
  out.reserve(count);
  for (auto file = newest_first.rbegin(); file != newest_first.rend(); ++file) {
    std::move(file->begin(), file->end(), std::back_inserter(out));
  }
  if (tail > 0 && out.size() > tail)
    out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(tail));
  return out;
}

std::vector<std::string> LineBuffer::Add(std::string_view bytes) {
  std::vector<std::string> texts;
  for (;;) {
    const size_t room = kMaxRecordText - partial_.size();
    const size_t newline = bytes.find('\n');
    size_t skip = 0;  // the newline ending the text, if it does
    if (newline != std::string_view::npos && newline <= room) {
      skip = 1;
    } else if (bytes.size() <= room) {
      // Held even when it fills the room: a newline next ends the same line.
      partial_.append(bytes);
      return texts;
    }
    const size_t take = skip ? newline : room;
    partial_.append(bytes.substr(0, take));
    bytes.remove_prefix(take + skip);
    texts.push_back(std::move(partial_));
    partial_.clear();
  }
}

std::optional<std::string> LineBuffer::Finish() {
  if (partial_.empty()) return std::nullopt;
  std::string rest = std::move(partial_);
  partial_.clear();
  return rest;
}

LogWriter::LogWriter(std::string dir, LogWriterOptions options)
    : dir_(std::move(dir)), options_(options) {}

LogWriter::~LogWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Status LogWriter::Open() {
  if (options_.max_bytes < 1 || options_.max_files < 1) {
    return Status::InvalidArgument("a log needs max_bytes and max_files of at least 1");
  }
  const Result<std::vector<LogLine>> last = ReadLog(dir_, 0, 1);
  if (!last.ok()) return last.status();
  if (!last->empty()) seq_ = last->back().seq;
  return OpenNewest();
}

Status LogWriter::OpenNewest() {
  if (fd_ >= 0) ::close(fd_);
  const std::string path = LogFilePath(dir_, 0);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) return Status::Internal(Errno("cannot open " + path));
  struct stat st;
  if (::fstat(fd_, &st) != 0) return Status::Internal(Errno("cannot stat " + path));
  size_ = st.st_size;
  return Status::Ok();
}

Status LogWriter::Append(int64_t time_ns, std::string_view stream, std::string_view text) {
  for (;;) {
    const size_t newline = text.find('\n');
    BERTH_RETURN_IF_ERROR(AppendRecord(time_ns, stream, text.substr(0, newline)));
    if (newline == std::string_view::npos) return Status::Ok();
    text.remove_prefix(newline + 1);
  }
}

Status LogWriter::AppendRecord(int64_t time_ns, std::string_view stream, std::string_view text) {
  if (fd_ < 0) return Status::Internal("the log of " + dir_ + " is not open");
  std::string record = std::to_string(seq_ + 1) + " " + std::to_string(time_ns) + " ";
  record.append(stream).append(" ").append(text).append("\n");
  if (size_ > 0 && size_ + static_cast<int64_t>(record.size()) > options_.max_bytes) {
    BERTH_RETURN_IF_ERROR(Rotate());
  }
  // O_APPEND writes to a regular file do not come back short but for a full
  // disk; what was written of the record then stays as a damaged line,
  // which readers skip, and the seq is used up so none is given twice.
  ++seq_;
  std::string_view rest = record;
  while (!rest.empty()) {
    const ssize_t n = ::write(fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(Errno("cannot write " + LogFilePath(dir_, 0)));
    size_ += n;
    rest.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status LogWriter::Rotate() {
  if (options_.max_files == 1) {
    if (::unlink(LogFilePath(dir_, 0).c_str()) != 0 && errno != ENOENT) {
      return Status::Internal(Errno("cannot remove " + LogFilePath(dir_, 0)));
    }
    return OpenNewest();
  }
  // rename(2) replaces the target: the oldest file goes as the next one
  // takes its name.
  for (int k = options_.max_files - 1; k >= 1; --k) {
    const std::string from = LogFilePath(dir_, k - 1), to = LogFilePath(dir_, k);
    if (::rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) {
      return Status::Internal(Errno("cannot rename " + from + " to " + to));
    }
  }
  return OpenNewest();
}

}  // namespace berth::executor
