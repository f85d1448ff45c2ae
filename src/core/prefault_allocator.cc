#include "core/prefault_allocator.h"

#include <sys/mman.h>

namespace berth {

void* MapPrefaulted(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void UnmapPrefaulted(void* p, size_t bytes) { munmap(p, bytes); }

}  // namespace berth
