#include "core/names.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

namespace berth {
namespace {

constexpr size_t kQuotedBytes = 64;

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// The length of the UTF-8 sequence at text[i], or 0 when it is not valid.
size_t SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  const size_t length = c < 0x80           ? 1
                        : (c >> 5) == 0x6  ? 2
                        : (c >> 4) == 0xE  ? 3
                        : (c >> 3) == 0x1E ? 4
                                           : 0;
  if (length == 0 || i + length > text.size()) return 0;
  uint32_t code = length == 1 ? c : c & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

bool IsControl(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }

Status Invalid(std::string_view what, std::string_view value, const std::string& rule) {
  return Status::InvalidArgument(Quoted(value) + " is not a valid " + std::string(what) + " (" +
                                 rule + ")");
}

Status TooLong(std::string_view value, size_t max, std::string_view unit) {
  return Status::InvalidArgument(Quoted(value) + " is longer than " + std::to_string(max) + " " +
                                 std::string(unit));
}

// Letters and digits, '-' and '_' inside: one id, or one segment of a task id.
bool IsIdShape(std::string_view id) {
  if (id.empty() || !IsAlnum(id.front()) || !IsAlnum(id.back())) return false;
  for (char c : id)
    if (!IsAlnum(c) && c != '-' && c != '_') return false;
  return true;
}

}  // namespace

Status CheckId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("must not be empty");
  if (id.size() > kMaxIdBytes) return TooLong(id, kMaxIdBytes, "characters");
  if (!IsIdShape(id))
    return Invalid("id", id,
                   "use letters, digits, '-' and '_', starting and ending with a letter or digit");
  return Status::Ok();
}

Status CheckTaskId(std::string_view id) {
  if (id.empty()) return Status::InvalidArgument("must not be empty");
  if (id.size() > kMaxTaskIdBytes) return TooLong(id, kMaxTaskIdBytes, "characters");
  for (size_t start = 0; start <= id.size();) {
    const size_t dot = std::min(id.find('.', start), id.size());
    if (!IsIdShape(id.substr(start, dot - start)))
      return Invalid("task id", id,
                     "expected ids joined by '.', each of letters, digits, '-' and '_', "
                     "starting and ending with a letter or digit");
    start = dot + 1;
  }
  return Status::Ok();
}

Status CheckLabelKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("a label key must not be empty");
  if (key.size() > kMaxLabelKeyBytes) return TooLong(key, kMaxLabelKeyBytes, "characters");
  for (char c : key)
    if (!IsAlnum(c) && c != '.' && c != '-' && c != '_')
      return Invalid("label key", key, "use letters, digits, '.', '-' and '_'");
  return Status::Ok();
}

Status CheckLabelValue(std::string_view value) { return CheckText(value, kMaxLabelValueBytes); }

Status CheckText(std::string_view text, size_t max_bytes) {
  if (text.size() > max_bytes) return TooLong(text, max_bytes, "bytes");
  if (const size_t bad = FindInvalidUtf8(text); bad != std::string_view::npos)
    return Status::InvalidArgument(Quoted(text) + " is not valid UTF-8 (at byte " +
                                   std::to_string(bad) + ")");
  for (char c : text)
    if (IsControl(c)) return Status::InvalidArgument(Quoted(text) + " has a control character");
  return Status::Ok();
}

size_t FindInvalidUtf8(std::string_view text) {
  constexpr uint64_t kHighBits = 0x8080808080808080ULL;
  for (size_t i = 0; i < text.size();) {
    // Request bodies are mostly ASCII: skip it eight bytes at a time.
    uint64_t word = 0;
    if (i + sizeof word <= text.size() &&
        (std::memcpy(&word, text.data() + i, sizeof word), (word & kHighBits) == 0)) {
      i += sizeof word;
      continue;
    }
    const size_t length = SequenceLength(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

std::string Quoted(std::string_view value) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "'";
  size_t i = 0;
  while (i < value.size() && i < kQuotedBytes) {
    const size_t length = SequenceLength(value, i);
    if (length == 0 || (length == 1 && IsControl(value[i]))) {
      const auto c = static_cast<unsigned char>(value[i]);
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    out.append(value.substr(i, length));
    i += length;
  }
  out += "'";
  if (i < value.size())
    out.insert(out.size() - 1, "...") += " (" + std::to_string(value.size()) + " bytes)";
  return out;
}

}  // namespace berth
