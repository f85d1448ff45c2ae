// libFuzzer target: a task block's value as etcd holds it
// (store/task_blocks.h). Any input must decode or be refused, never crash;
// what decodes encodes back to entries that decode the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "store/task_blocks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace blocks = berth::store::blocks;
  const std::string_view value(reinterpret_cast<const char*>(data), size);
  berth::Result<std::vector<blocks::Entry>> entries = blocks::Decode(value);
  if (!entries.ok()) return 0;
  berth::Result<std::vector<blocks::Entry>> again = blocks::Decode(blocks::Encode(*entries));
  if (!again.ok() || *again != *entries) __builtin_trap();
  for (const blocks::Entry& e : *entries)
    if (!blocks::BlockOf(e.id).starts_with(blocks::BlockPrefix(e.id))) __builtin_trap();
  return 0;
}
