// PrefaultAllocator: an allocator for the control loop's large contiguous
// arrays (berthd's task entries, the placement engine's task records), whose
// first fill is otherwise largely page faults: 100,000 task entries are
// 38 MiB, 9,300 faults of 4 KiB at 2-3 us each on this project's virtual
// machines (docs/benchmarks.md).
//
// An allocation of at least kPrefaultBytes is mapped on its own with
// MAP_POPULATE: the kernel fills its page tables in the mmap call, without
// a trap per page. Smaller ones come from operator new. Releasing unmaps.
// The whole capacity is resident at once, so a vector's unused capacity
// costs memory too (at most what its growth leaves free).
//
// Stateless; safe from any thread, as operator new.
#pragma once

#include <cstddef>
#include <new>

namespace berth {

inline constexpr size_t kPrefaultBytes = size_t{2} << 20;

// The mapping behind PrefaultAllocator: `bytes` (>= kPrefaultBytes), or
// std::bad_alloc. Release with UnmapPrefaulted(p, bytes).
void* MapPrefaulted(size_t bytes);
void UnmapPrefaulted(void* p, size_t bytes);

template <typename T>
struct PrefaultAllocator {
  using value_type = T;

  PrefaultAllocator() = default;
  template <typename U>
  PrefaultAllocator(const PrefaultAllocator<U>&) {}  // NOLINT: rebinding converts

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kPrefaultBytes) return static_cast<T*>(::operator new(bytes));
    return static_cast<T*>(MapPrefaulted(bytes));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kPrefaultBytes)
      ::operator delete(p);
    else
      UnmapPrefaulted(p, bytes);
  }
  template <typename U>
  bool operator==(const PrefaultAllocator<U>&) const {
    return true;
  }
};

}  // namespace berth
