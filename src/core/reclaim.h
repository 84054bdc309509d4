#pragma once

// Freeing what an unload forgot (core/registry.h) once no thread can still read it.
//
// The launch path reads the kernels' tables without a lock: the cache's open-addressing
// table and its entries, the memos' values (a tuned Choice, a whole call's entry and
// CallTail) and the plans they are keyed on. An unload unpublishes all of them at once, so
// what a thread found before it may still be in use. The scheme is epoch-based: each entry
// point of the launch path runs in a ReadSection, and what an unload forgot (a Retired batch)
// is freed once every thread that was inside a section when it was forgotten has left it.
// Hazard pointers were the alternative: they would cost a store and a fence for each pointer
// a hit follows (the table, the entry, a memo's value: three to five), and a check that the
// pointer is still published after each; a section costs two plain stores per call and reads
// nothing shared. The price is on the unloading side: it makes the readers' stores visible with
// a process-wide barrier (membarrier), and a thread that stays inside a section (a compile, a
// tuning) holds back what was forgotten before it entered until it leaves.
//
// Nothing here blocks: an unload retires its batch and frees whatever batches the readers have
// let go of (its own, when no thread is launching). A batch a thread still reads is freed by a
// later unload. A cache entry a captured CUDA graph uses (Entry::graph_holds) stays, with its
// modules loaded, until CUDA has destroyed every graph holding it.

#include <atomic>  // std::atomic_signal_fence
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "base/internal_api.h"

namespace triton_embed::detail {

struct Entry;

// A thread's place in the read sections, in its thread-local storage. Written by its thread
// only, with plain (not atomic) read-modify-writes; other threads read it with atomic loads
// (reclaim()). Registered with the reclaiming side at the thread's first section, and taken off
// when the thread ends.
struct Reader {
  uint32_t depth;  // how deep the thread is inside sections
  uint32_t left;   // how many times it has left the outermost one
  bool joined;     // registered (join_readers)
};

// The calling thread's reader. Initial-exec: one load of its offset, no call, on the launch path.
TE_INTERNAL_API extern __thread Reader t_reader __attribute__((tls_model("initial-exec")));

// Registers the calling thread's reader (its first section).
TE_INTERNAL_API void join_readers();

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TE_SECTION_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TE_SECTION_TSAN 1
#endif
#if defined(__x86_64__) && !defined(TE_SECTION_TSAN)
#define TE_SECTION_ASM 1
#else
#define TE_SECTION_ASM 0
#endif

// While one lives, nothing the calling thread finds in the kernels' tables is freed. Nests.
// The stores need no fence: the reclaiming side's barrier (membarrier) makes a section's entry
// visible before it looks (or the section's reads see what it unpublished before), and x86
// keeps a store after the loads before it; elsewhere, and under ThreadSanitizer (which must
// see the ordering), they are atomic loads and stores, the exit's a release.
class ReadSection {
 public:
  ReadSection() {
    if (TE_UNLIKELY(!t_reader.joined)) join_readers();
#if TE_SECTION_ASM
    asm volatile("addl $1, %0" : "+m"(t_reader.depth) : : "memory", "cc");
#else
    __atomic_store_n(&t_reader.depth, __atomic_load_n(&t_reader.depth, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
  }
  ~ReadSection() {
#if TE_SECTION_ASM
    asm volatile(
        "subl $1, %0\n\t"
        "jnz 1f\n\t"
        "addl $1, %1\n"
        "1:"
        : "+m"(t_reader.depth), "+m"(t_reader.left)
        :
        : "memory", "cc");
#else
    const uint32_t d = __atomic_load_n(&t_reader.depth, __ATOMIC_RELAXED) - 1;
    if (d == 0) {
      __atomic_store_n(&t_reader.left, __atomic_load_n(&t_reader.left, __ATOMIC_RELAXED) + 1,
                       __ATOMIC_RELEASE);
    }
    __atomic_store_n(&t_reader.depth, d, __ATOMIC_RELEASE);
#endif
  }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;
};

// What one unload forgot: the objects the launch path may have been reading, freed together
// once the readers have let go of them (reclaim() frees them; a batch destroyed otherwise, as
// when an exception leaves the unload half done, leaks them rather than free what a reader may
// still hold). Cache entries are apart: a captured graph may hold one.
class Retired {
 public:
  template <class T>
  void add(std::unique_ptr<T> p) {
    if (p) items_.push_back({p.release(), [](void* q) { delete static_cast<T*>(q); }});
  }
  template <class T>
  void add_all(std::vector<std::unique_ptr<T>>& v) {
    items_.reserve(items_.size() + v.size());
    for (auto& p : v) add(std::move(p));
    v.clear();
  }
  void add_entries(std::vector<std::unique_ptr<Entry>>& v);
  bool empty() const noexcept { return items_.empty() && entries_.empty(); }

  Retired() = default;
  Retired(Retired&&) noexcept = default;
  Retired& operator=(Retired&& o) noexcept;  // leaks what this held, then takes o's
  ~Retired() { leak(); }

 private:
  friend struct ReclaimAccess;
  void free_items() noexcept;  // the objects, not the entries
  void leak() noexcept;
  struct Item {
    void* p;
    void (*free)(void*);
  };
  std::vector<Item> items_;
  std::vector<std::unique_ptr<Entry>> entries_;
};

// Hands over what an unload has just unpublished, then frees what no reader holds any more.
// Never blocks on a reader.
TE_INTERNAL_API void retire(Retired r);

// Frees the batches every reader has let go of, and the entries no graph holds any more.
// Returns how many objects it freed.
TE_INTERNAL_API size_t reclaim();

// What is waiting to be freed (tests; testing.h).
struct ReclaimCounts {
  size_t batches = 0;        // retired batches some reader may still hold
  size_t objects = 0;        // their objects, entries included
  size_t graph_entries = 0;  // entries past their readers that a captured graph still holds
  size_t kept = 0;           // objects retired with no process-wide barrier: never freed
  size_t freed = 0;          // objects freed so far in this process
};
TE_INTERNAL_API ReclaimCounts reclaim_counts();

}  // namespace triton_embed::detail
