#include "alloc_counter.h"

#include <cstdlib>
#include <new>

namespace {
thread_local bool g_counting = false;
thread_local size_t g_count = 0;

void* allocate(std::size_t n) {
  if (g_counting) ++g_count;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t n) { return allocate(n); }
void* operator new[](std::size_t n) { return allocate(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting) ++g_count;
  return std::malloc(n == 0 ? 1 : n);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace te_test {
CountAllocations::CountAllocations() {
  g_count = 0;
  g_counting = true;
}
CountAllocations::~CountAllocations() { g_counting = false; }
size_t CountAllocations::count() const { return g_count; }
}  // namespace te_test
