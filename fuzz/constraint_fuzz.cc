// libFuzzer target: the constraint parser and matcher. Any expression must
// parse or give an error Status; a parsed one must match a node without
// crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "constraint/constraint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  berth::Result<berth::constraint::Constraint> parsed = berth::constraint::Parse(text);
  if (parsed.ok()) {
    berth::Node node;
    node.id = "n1";
    node.hostname = "host";
    node.labels["az"] = "a";
    (void)berth::constraint::MatchesAll({*parsed}, node);
  }
  return 0;
}
