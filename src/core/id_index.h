// IdIndex: finds the dense index of an entry by its string id, for arrays
// whose entries already hold their ids (nodes, tasks).
//
// An open-addressing table of 32-bit indices (load at most 1/2), so an id costs
// 8 to 16 bytes here instead of a second copy of the string in a hash map. The
// caller passes `id_of(index) -> std::string_view` to every call rather than
// the index storing a pointer to the array, so owners stay freely movable.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace berth {

class IdIndex {
 public:
  template <typename IdOf>
  std::optional<uint32_t> Find(std::string_view id, const IdOf& id_of) const {
    if (slots_.empty()) return std::nullopt;
    const size_t mask = slots_.size() - 1;
    for (size_t i = Hash(id) & mask;; i = (i + 1) & mask) {
      uint32_t slot = slots_[i];
      if (slot == kEmpty) return std::nullopt;
      if (id_of(slot) == id) return slot;
    }
  }

  // Adds entry `index`; its id must not be in the index yet.
  template <typename IdOf>
  void Insert(uint32_t index, const IdOf& id_of) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 16 : slots_.size() * 2, id_of);
    Place(index, id_of);
    ++size_;
  }

  // Removes entry `index`, whose id_of must still give its id. Linear
  // probing has no tombstones: later entries of the run shift back.
  template <typename IdOf>
  void Erase(uint32_t index, const IdOf& id_of) {
    if (slots_.empty()) return;
    const size_t mask = slots_.size() - 1;
    size_t hole = Hash(id_of(index)) & mask;
    for (; slots_[hole] != index; hole = (hole + 1) & mask)
      if (slots_[hole] == kEmpty) return;
    for (size_t j = (hole + 1) & mask; slots_[j] != kEmpty; j = (j + 1) & mask) {
      const size_t home = Hash(id_of(slots_[j])) & mask;
      // The entry at j may move to the hole unless its home lies in (hole, j].
      const bool stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
      if (stays) continue;
      slots_[hole] = slots_[j];
      hole = j;
    }
    slots_[hole] = kEmpty;
    --size_;
  }

  // Makes room for `count` entries in all, so that adding up to that many
  // does not grow the table step by step (each step re-places every entry).
  template <typename IdOf>
  void Reserve(size_t count, const IdOf& id_of) {
    if (count * 2 <= slots_.size()) return;
    size_t slots = slots_.empty() ? 16 : slots_.size();
    while (count * 2 > slots) slots *= 2;
    Rehash(slots, id_of);
  }

  size_t size() const { return size_; }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  static size_t Hash(std::string_view id) { return std::hash<std::string_view>{}(id); }

  template <typename IdOf>
  void Rehash(size_t slots, const IdOf& id_of) {
    std::vector<uint32_t> old = std::move(slots_);
    slots_.assign(slots, kEmpty);
    for (uint32_t slot : old)
      if (slot != kEmpty) Place(slot, id_of);
  }

  template <typename IdOf>
  void Place(uint32_t index, const IdOf& id_of) {
    const size_t mask = slots_.size() - 1;
    size_t i = Hash(id_of(index)) & mask;
    while (slots_[i] != kEmpty) i = (i + 1) & mask;
    slots_[i] = index;
  }

  std::vector<uint32_t> slots_;
  size_t size_ = 0;
};

}  // namespace berth
