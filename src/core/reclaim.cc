// Freeing what an unload forgot, once no reader holds it (core/reclaim.h).

#include "core/reclaim.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <mutex>
#include <new>

#include "core/cache.h"
#include "core/module.h"

namespace triton_embed::detail {

TE_INTERNAL_API __thread Reader t_reader __attribute__((tls_model("initial-exec"))) = {0, 0, false};

namespace {

// A batch of one unload, and the readers that were inside a section when it was retired, with
// their count of outermost exits then.
struct Batch {
  Retired retired;
  std::vector<std::pair<Reader*, uint32_t>> waiting;
};

struct Domain {
  std::mutex mu;  // guards all below; a reader's thread-local storage is read under it only
  std::vector<Reader*> readers;  // the live threads' (each in its own thread-local storage)
  std::deque<Batch> batches;
  std::vector<std::unique_ptr<Entry>> graph_held;  // past their readers, held by a graph
  std::vector<Retired> kept;                       // retired with no barrier available: never freed
  size_t freed = 0;
};

Domain* g_domain = nullptr;  // made on first use, never destroyed (threads may launch at exit)
pthread_key_t g_reader_key;  // its destructor takes an ending thread's reader off

void lock_for_fork() noexcept;
void unlock_after_fork() noexcept;
void forget_other_threads() noexcept;
void reader_gone(void* reader) noexcept;

Domain& domain() {
  static Domain* d = [] {
    g_domain = new Domain();
    // A key's destructor runs after the thread's C++ thread_local destructors, which may
    // still launch.
    pthread_key_create(&g_reader_key, reader_gone);
    pthread_atfork(lock_for_fork, unlock_after_fork, forget_other_threads);
    return g_domain;
  }();
  return *d;
}

// Takes reader r off the domain, and off every batch waiting for it (a thread ends outside
// any section). Caller holds the domain's lock.
void drop_reader(Domain& d, Reader* r) noexcept {
  d.readers.erase(std::remove(d.readers.begin(), d.readers.end(), r), d.readers.end());
  for (Batch& b : d.batches) {
    b.waiting.erase(std::remove_if(b.waiting.begin(), b.waiting.end(),
                                   [r](const auto& w) { return w.first == r; }),
                    b.waiting.end());
  }
}

// A thread ends: its reader (in its thread-local storage, which goes with it) is taken off. A
// section after this (another key's destructor) joins again, and is taken off again.
void reader_gone(void* reader) noexcept {
  Domain& d = domain();
  std::lock_guard<std::mutex> lock(d.mu);
  drop_reader(d, static_cast<Reader*>(reader));
  static_cast<Reader*>(reader)->joined = false;
}

// A fork waits for the domain's lock, so that the child never sees it half updated; the child,
// which has only the thread that forked, takes the others' readers off.
void lock_for_fork() noexcept {
  if (g_domain != nullptr) g_domain->mu.lock();
}
void unlock_after_fork() noexcept {
  if (g_domain != nullptr) g_domain->mu.unlock();
}
void forget_other_threads() noexcept {
  if (g_domain == nullptr) return;
  Domain& d = *g_domain;
  const std::vector<Reader*> all = d.readers;
  for (Reader* r : all) {
    if (r != &t_reader) drop_reader(d, r);
  }
  d.mu.unlock();
}

long membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

// Every thread of the process executes a full memory barrier before this returns (the
// readers' section stores are visible to the loads after it, or their loads after their
// stores see what was unpublished before it). False when the kernel offers no such barrier.
bool process_barrier() {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return true;
  if (errno == EPERM && membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0 &&
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) {
    return true;
  }
  return membarrier(MEMBARRIER_CMD_GLOBAL) == 0;  // older kernels: slower, the same guarantee
}

// Whether reader r has been outside every section since it left `left` outermost sections.
bool has_left(const Reader* r, uint32_t left) noexcept {
  return __atomic_load_n(&r->depth, __ATOMIC_ACQUIRE) == 0 ||
         __atomic_load_n(&r->left, __ATOMIC_ACQUIRE) != left;
}

bool readers_left(const Batch& b) noexcept {
  for (const auto& [r, left] : b.waiting) {
    if (!has_left(r, left)) return false;
  }
  return true;
}

size_t free_entry(std::unique_ptr<Entry> e) noexcept {
  unload_modules(*e);
  e.reset();
  return 1;
}

}  // namespace

struct ReclaimAccess {
  static std::vector<std::unique_ptr<Entry>>& entries(Retired& r) { return r.entries_; }
  static size_t size(const Retired& r) { return r.items_.size() + r.entries_.size(); }
  static size_t items(const Retired& r) { return r.items_.size(); }
  static void free_items(Retired& r) { r.free_items(); }
};

void join_readers() {
  Domain& d = domain();
  std::lock_guard<std::mutex> lock(d.mu);
  d.readers.push_back(&t_reader);
  pthread_setspecific(g_reader_key, &t_reader);  // reader_gone when the thread ends
  t_reader.joined = true;
}

void Retired::add_entries(std::vector<std::unique_ptr<Entry>>& v) {
  entries_.reserve(entries_.size() + v.size());
  for (auto& e : v) entries_.push_back(std::move(e));
  v.clear();
}

void Retired::free_items() noexcept {
  for (const Item& i : items_) i.free(i.p);
  items_.clear();
}

void Retired::leak() noexcept {
  items_.clear();
  for (auto& e : entries_) (void)e.release();
  entries_.clear();
}

Retired& Retired::operator=(Retired&& o) noexcept {
  if (this != &o) {
    leak();
    items_ = std::move(o.items_);
    entries_ = std::move(o.entries_);
  }
  return *this;
}

void retire(Retired r) {
  if (!r.empty()) {
    Batch b;
    b.retired = std::move(r);
    const bool fenced = process_barrier();
    Domain& d = domain();
    std::lock_guard<std::mutex> lock(d.mu);
    if (!fenced) {
      d.kept.push_back(std::move(b.retired));  // no way to know when readers let go: kept
      return;
    }
    for (Reader* c : d.readers) {
      // The count first: a section left between the two loads is then seen as left.
      const uint32_t left = __atomic_load_n(&c->left, __ATOMIC_ACQUIRE);
      if (__atomic_load_n(&c->depth, __ATOMIC_ACQUIRE) != 0) b.waiting.emplace_back(c, left);
    }
    d.batches.push_back(std::move(b));
  }
  reclaim();
}

size_t reclaim() {
  Domain& d = domain();
  std::vector<std::unique_ptr<Entry>> unload;  // freed after the lock: driver calls
  size_t freed = 0;
  {
    std::lock_guard<std::mutex> lock(d.mu);
    for (auto it = d.batches.begin(); it != d.batches.end();) {
      if (!readers_left(*it)) {
        ++it;
        continue;
      }
      Retired& r = it->retired;
      freed += ReclaimAccess::items(r);
      ReclaimAccess::free_items(r);
      for (auto& e : ReclaimAccess::entries(r)) {
        // Held by a graph: freed when CUDA has destroyed the last graph holding it.
        (e->graph_holds.load(std::memory_order_acquire) != 0 ? d.graph_held : unload)
            .push_back(std::move(e));
      }
      ReclaimAccess::entries(r).clear();
      it = d.batches.erase(it);
    }
    for (auto it = d.graph_held.begin(); it != d.graph_held.end();) {
      if ((*it)->graph_holds.load(std::memory_order_acquire) != 0) {
        ++it;
        continue;
      }
      unload.push_back(std::move(*it));
      it = d.graph_held.erase(it);
    }
    freed += unload.size();
    d.freed += freed;
  }
  for (auto& e : unload) free_entry(std::move(e));
  return freed;
}

ReclaimCounts reclaim_counts() {
  Domain& d = domain();
  std::lock_guard<std::mutex> lock(d.mu);
  ReclaimCounts c;
  c.batches = d.batches.size();
  for (const Batch& b : d.batches) c.objects += ReclaimAccess::size(b.retired);
  c.graph_entries = d.graph_held.size();
  for (const Retired& r : d.kept) c.kept += ReclaimAccess::size(r);
  c.freed = d.freed;
  return c;
}

}  // namespace triton_embed::detail
