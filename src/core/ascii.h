// ASCII case folding for names, keys and protocol words: constraint keys and
// `==` comparisons, spread descriptors, the HTTP bearer scheme and media
// types. ASCII only on purpose: a locale-dependent tolower would make
// matching differ between hosts. Pure functions; any thread.
#pragma once

#include <string_view>

namespace berth {

inline char AsciiLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  return true;
}

inline bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

}  // namespace berth
