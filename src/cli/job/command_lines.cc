#include "cli/job/command_lines.h"

namespace berth::cli {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Splits one line; the state of a word is kept in `word`/`in_word` so that
// an empty quoted word ('') is still a word.
class Splitter {
 public:
  explicit Splitter(std::string_view line) : line_(line) {}

  Result<std::vector<std::string>> Run() {
    while (at_ < line_.size()) {
      const char c = line_[at_];
      if (IsBlank(c)) {
        EndWord();
        ++at_;
      } else if (c == '#' && !in_word_) {
        break;  // a comment, to the end of the line
      } else {
        BERTH_RETURN_IF_ERROR(WordCharacter(c));
      }
    }
    EndWord();
    return std::move(words_);
  }

 private:
  Status WordCharacter(char c) {
    in_word_ = true;
    if (c == '\'') return SingleQuoted();
    if (c == '"') return DoubleQuoted();
    if (c == '\\') {
      if (at_ + 1 >= line_.size())
        return Status::InvalidArgument("a backslash ends the line (a line cannot continue)");
      word_ += line_[at_ + 1];
      at_ += 2;
      return Status::Ok();
    }
    word_ += c;
    ++at_;
    return Status::Ok();
  }
  Status SingleQuoted() {
    const size_t close = line_.find('\'', at_ + 1);
    if (close == std::string_view::npos)
      return Status::InvalidArgument("unterminated single quote (')");
    word_.append(line_.substr(at_ + 1, close - at_ - 1));
    at_ = close + 1;
    return Status::Ok();
  }
  // As a POSIX shell: a backslash escapes only " \ $ and ` here.
  Status DoubleQuoted() {
    for (++at_; at_ < line_.size(); ++at_) {
      const char c = line_[at_];
      if (c == '"') {
        ++at_;
        return Status::Ok();
      }
      if (c == '\\' && at_ + 1 < line_.size() &&
          std::string_view("\"\\$`").find(line_[at_ + 1]) != std::string_view::npos)
        ++at_;
      word_ += line_[at_];
    }
    return Status::InvalidArgument("unterminated double quote (\")");
  }
  void EndWord() {
    if (in_word_) words_.push_back(std::move(word_));
    word_.clear();
    in_word_ = false;
  }

  std::string_view line_;
  size_t at_ = 0;
  std::string word_;
  bool in_word_ = false;
  std::vector<std::string> words_;
};

}  // namespace

Result<std::vector<std::string>> SplitCommandLine(std::string_view line) {
  if (line.find('\0') != std::string_view::npos)
    return Status::InvalidArgument("contains a NUL character");
  return Splitter(line).Run();
}

Result<std::vector<std::vector<std::string>>> ParseCommandLines(std::string_view text) {
  std::vector<std::vector<std::string>> lines;
  size_t number = 0;
  for (size_t at = 0; at < text.size();) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++number;
    if (line.ends_with('\r')) line.remove_suffix(1);
    Result<std::vector<std::string>> words = SplitCommandLine(line);
    if (!words.ok())
      return Status::InvalidArgument("line " + std::to_string(number) + ": " +
                                     words.status().message());
    if (!words->empty()) lines.push_back(std::move(*words));
  }
  if (lines.empty())
    return Status::InvalidArgument(
        "no command lines (the file is empty or holds only blank "
        "lines and comments)");
  return lines;
}

}  // namespace berth::cli
