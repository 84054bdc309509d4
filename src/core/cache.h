#pragma once

// The per-kernel compile cache.
//
// Key: fixed-size plain data (target, interned options id, and one or two 64-bit words per
// argument leaf: type code, specialisation bits, constexpr values). Lookups read a
// lock-free open-addressing table (acquire loads only); inserts take the cache mutex and
// publish with release stores; grown tables are kept alive, so a reader never sees freed
// memory. Unloading bundles (core/registry.h) empties the table and retires its tables and
// entries, freed once no launch can still read them (core/reclaim.h) and no CUDA graph that
// captured a launch of them exists (Entry::graph_holds).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "base/internal_api.h"
#include "core/once.h"
#include "core/reclaim.h"
#include "core/tma_meta.h"
#include "core/word_hash.h"
#include "triton_embed/jit.h"

namespace triton_embed::detail {

class PendingCompile;  // core/kernel_source.h

constexpr size_t kMaxKeyWords = 320;
constexpr size_t kMaxLeaves = 160;
constexpr size_t kMaxContexts = 32;

struct Key {
  uint32_t target = 0;         // arch | warp_size << 16
  uint32_t options = 0;        // interned options id
  uint32_t n = 0;              // words used
  uint32_t process_local = 0;  // a word holds a Python object's address (not compared)
  uint64_t w[kMaxKeyWords];

  uint64_t hash() const noexcept {
    return hash_words(0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(target) << 32 | options), w,
                      n);
  }
};

struct LoadedFunction {
  void* ctx = nullptr;       // CUcontext
  void* function = nullptr;  // CUfunction
  void* module = nullptr;    // CUmodule
};

// A compiled kernel with what a launch needs, plus its loaded functions per context.
// The fields a cache hit reads come first, in the entry's first three cache lines (header and
// launch constants, the key when it is short, the first loaded functions): after the driver's
// launch call has evicted them from the nearest caches, a hit brings back as few lines as it
// can.
constexpr uint32_t kInlineKeyWords = 8;

struct alignas(64) Entry {
  // ---- line 0: identity and launch constants ----
  uint64_t hash = 0;
  uint32_t target = 0;
  uint32_t options = 0;
  uint32_t nkey = 0;  // key words
  uint32_t block_x = 128;
  uint32_t num_ctas = 1;
  uint32_t shared = 0;
  uint32_t num_runtime_params = 0;  // packed leaves; hidden scratch pointers follow them
  bool cooperative = false;
  bool pdl = false;
  bool oversized_shared_mode = false;  // Triton >= 3.8 sets the oversized shared memory mode
  bool packs_ones = false;  // served by a less specialised entry: one_slots / one_leaves below
  std::atomic<uint32_t> nloaded{0};
  // CUDA graphs (and the executable graphs made from them) that captured a launch of it
  // (hold_for_graph, core/module.h): a retired entry is freed only once this is 0.
  std::atomic<uint32_t> graph_holds{0};
  uint64_t global_scratch_size = 0;
  uint64_t profile_scratch_size = 0;
  // ---- line 1: the key, when it has at most kInlineKeyWords words ----
  uint64_t key_inline[kInlineKeyWords] = {};
  // ---- then the loaded functions, one per context ----
  LoadedFunction loaded[kMaxContexts];

  // ---- the rest: read on slow paths, descriptor launches and scratch allocation ----
  uint64_t global_scratch_align = 1, profile_scratch_align = 1;
  std::vector<uint64_t> key_words;  // the whole key
  std::unique_ptr<CompiledKernel> kernel;
  std::vector<TmaMeta> tma;    // one per tensordesc leaf, in order
  int triton_version = 0;      // major * 100 + minor: how descriptors are passed
  bool process_local = false;  // keyed on a Python object: not recorded into bundles
  // A bundle entry compiled with fewer assumptions than the key (lookup.cc): not recorded into
  // bundles (its key and its code differ). Its constexpr 1s that the entry takes as runtime
  // ints: the call's leaves (ascending), and their final slots among a plain call's packed
  // values (insert_ones()).
  bool less_specialised = false;
  std::vector<uint32_t> one_leaves, one_slots;
  std::mutex load_mu;

  // Sets the launch constants from `kernel` (set first), as Triton's launcher reads them from
  // its metadata; `warp_size` is the target's.
  void set_launch_constants(int warp_size) {
    const CompiledKernel& k = *kernel;
    block_x = static_cast<uint32_t>(warp_size * k.num_warps());
    num_ctas = static_cast<uint32_t>(k.num_ctas());
    shared = static_cast<uint32_t>(k.shared());
    cooperative = k.launch_cooperative_grid();
    pdl = k.launch_pdl();
    global_scratch_size = k.global_scratch_size();
    global_scratch_align = k.global_scratch_align();
    profile_scratch_size = k.profile_scratch_size();
    profile_scratch_align = k.profile_scratch_align();
    num_runtime_params = static_cast<uint32_t>(k.num_kernel_params() - 2);  // + 2 scratch pointers
  }
  // Sets the key (both copies).
  void set_key(const Key& k) {
    key_words.assign(k.w, k.w + k.n);
    nkey = k.n;
    if (k.n <= kInlineKeyWords) std::memcpy(key_inline, k.w, k.n * sizeof(uint64_t));
  }
  bool matches(const Key& k, uint64_t h) const noexcept {
    if (hash != h || target != k.target || options != k.options || nkey != k.n) return false;
    const uint64_t* w = k.n <= kInlineKeyWords ? key_inline : key_words.data();
    return k.n == 0 || std::memcmp(w, k.w, k.n * sizeof(uint64_t)) == 0;
  }
  // The loaded function for context ctx, or nullptr.
  void* function_for(void* ctx) const noexcept {
    const uint32_t n = nloaded.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < n; ++i) {
      if (loaded[i].ctx == ctx) return loaded[i].function;
    }
    return nullptr;
  }
};

class EntryTable {
 public:
  TE_INTERNAL_API EntryTable();
  Entry* find(const Key& k, uint64_t h) const noexcept {
    const Slots* s = current_.load(std::memory_order_acquire);
    size_t i = h & s->mask;
    for (;;) {
      Entry* e = s->slots[i].load(std::memory_order_acquire);
      if (e == nullptr) return nullptr;
      if (e->matches(k, h)) return e;
      i = (i + 1) & s->mask;
    }
  }
  // Caller holds the cache mutex.
  TE_INTERNAL_API void insert(Entry* e);
  // Forgets every entry: readers find none from now on. The tables they may be reading go to
  // `retired`. Caller holds the cache mutex.
  void clear(Retired& retired);
  size_t size() const noexcept { return count_; }

 private:
  struct Slots {
    size_t mask;
    std::unique_ptr<std::atomic<Entry*>[]> slots;
  };
  static std::unique_ptr<Slots> make_slots(size_t capacity);
  std::atomic<Slots*> current_{nullptr};
  std::vector<std::unique_ptr<Slots>> all_;
  size_t count_ = 0;
};

struct Cache {
  EntryTable table;
  std::mutex mu;                                // guards inserts, entries and building
  std::vector<std::unique_ptr<Entry>> entries;  // those the table holds
  std::vector<std::unique_ptr<Entry>> retired;  // forgotten by an unload, or built as one ran
  OncePerKey building;                          // keys being compiled (or read from a bundle)
  // Keys compiled into the compiler's own cache and not kept (warm_entry; under mu): each is
  // warmed once per process, here (nullptr) or in another process (its pending compile, which
  // a build of the key waits for; one that failed there is warmed again).
  std::map<std::vector<uint64_t>, std::shared_ptr<PendingCompile>> warmed;
};

}  // namespace triton_embed::detail
