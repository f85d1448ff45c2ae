#include "api/json_writer.h"

#include <array>
#include <cstdio>

namespace berth::api {
namespace {

void AppendEscaped(std::string& out, unsigned char c) {
  out += '\\';
  switch (c) {
    case '"':
      out += '"';
      return;
    case '\\':
      out += '\\';
      return;
    case '\n':
      out += 'n';
      return;
    case '\t':
      out += 't';
      return;
    case '\r':
      out += 'r';
      return;
    case '\b':
      out += 'b';
      return;
    case '\f':
      out += 'f';
      return;
    default: {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "u%04x", static_cast<unsigned>(c));
      out += escaped;
    }
  }
}

// Which bytes a JSON string must escape: the quote, the backslash and the
// control characters.
constexpr auto kEscaped = [] {
  std::array<bool, 256> escaped{};
  for (int c = 0; c < 0x20; ++c) escaped[c] = true;
  escaped['"'] = escaped['\\'] = true;
  return escaped;
}();

}  // namespace

// Runs without escapes are copied whole.
void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  size_t run = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (!kEscaped[c]) continue;
    out.append(text, run, i - run);
    AppendEscaped(out, c);
    run = i + 1;
  }
  out.append(text, run, text.size() - run);
  out += '"';
}

}  // namespace berth::api
