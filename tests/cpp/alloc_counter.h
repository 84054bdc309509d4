#pragma once

// Counts heap allocations made by this thread while a CountAllocations scope is alive
// (global operator new is replaced in alloc_counter.cc).

#include <cstddef>

namespace te_test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  size_t count() const;
};

}  // namespace te_test
