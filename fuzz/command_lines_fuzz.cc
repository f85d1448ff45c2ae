// libFuzzer target: the commands file of `berth job submit --commands-file`
// (cli/job/command_lines.h). Any input must give command lines or an error,
// never a crash or a sanitizer report; every line it gives has a word, and
// no word holds a NUL or a newline (a word never spans lines).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cli/job/command_lines.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  berth::Result<std::vector<std::vector<std::string>>> lines = berth::cli::ParseCommandLines(text);
  if (!lines.ok()) return 0;
  for (const std::vector<std::string>& words : *lines) {
    if (words.empty()) __builtin_trap();
    for (const std::string& word : words)
      if (word.find('\0') != std::string::npos || word.find('\n') != std::string::npos)
        __builtin_trap();
  }
  return 0;
}
