// SortByIds: orders items by their string ids (byte order) fast, for the
// large sorts of the hot paths (a node ranking, a pass's writes).
//
// Comparisons use each id's first 16 bytes as two big-endian integers
// (zero-padded), held contiguously so they stay in cache; the full strings
// are compared only when both ids are longer and share those bytes.
//
// Pure; safe from any thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace berth {

// Sorts `items` (any integers naming items) by id_of(item), a string_view;
// equal ids keep no particular order.
template <typename IdOf>
void SortByIds(std::vector<uint32_t>& items, IdOf id_of) {
  struct Key {
    uint64_t hi = 0, lo = 0;
    uint32_t length = 0;
    uint32_t item = 0;
  };
  auto load = [](std::string_view id, size_t from) {
    uint64_t v = 0;
    for (size_t i = from; i < from + 8; ++i)
      v = (v << 8) | (i < id.size() ? static_cast<unsigned char>(id[i]) : 0u);
    return v;
  };
  std::vector<Key> keys(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const std::string_view id = id_of(items[i]);
    keys[i] = {load(id, 0), load(id, 8), static_cast<uint32_t>(id.size()), items[i]};
  }
  std::sort(keys.begin(), keys.end(), [&](const Key& a, const Key& b) {
    if (a.hi != b.hi) return a.hi < b.hi;
    if (a.lo != b.lo) return a.lo < b.lo;
    if (a.length > 16 && b.length > 16) return id_of(a.item) < id_of(b.item);
    return a.length < b.length;  // equal prefix: the shorter id is a prefix of the longer
  });
  for (size_t i = 0; i < keys.size(); ++i) items[i] = keys[i].item;
}

}  // namespace berth
