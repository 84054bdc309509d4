// Freeing what an unload forgot (core/reclaim.h) on its own: a retired batch is freed once
// every thread that was inside a read section when it was retired has left it, whatever the
// threads do after (nested sections, new sections, ending); a cache entry a CUDA graph holds
// is freed only after that. ReclaimConcurrent runs threads (the ThreadSanitizer build runs it):
// readers follow a pointer the writer keeps replacing and retiring, and never find a freed
// object (under AddressSanitizer, a read of one would be reported).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/cache.h"
#include "core/reclaim.h"

namespace d = triton_embed::detail;

namespace {

// An object that counts its destruction.
struct Counted {
  explicit Counted(std::atomic<int>* freed) : freed(freed) {}
  ~Counted() {
    *static_cast<volatile uint64_t*>(&canary) = 0;  // a reader of a freed one sees it dead
    freed->fetch_add(1);
  }
  std::atomic<int>* freed;
  uint64_t canary = 0xC0FFEEull;
};

d::Retired batch_of(int n, std::atomic<int>* freed) {
  d::Retired r;
  for (int i = 0; i < n; ++i) r.add(std::make_unique<Counted>(freed));
  return r;
}

// A thread parked inside `depth` nested sections until told to leave, then (with `again`)
// entering and leaving sections until it is joined.
class Parked {
 public:
  explicit Parked(int depth, bool again = false)
      : thread_([this, depth, again] {
          std::vector<std::unique_ptr<d::ReadSection>> sections;
          for (int i = 0; i < depth; ++i) sections.push_back(std::make_unique<d::ReadSection>());
          std::unique_lock<std::mutex> lock(mu_);
          set_stage(1);
          cv_.wait(lock, [&] { return asked_ >= 1; });
          sections.pop_back();  // the innermost only
          set_stage(2);
          cv_.wait(lock, [&] { return asked_ >= 2; });
          sections.clear();
          lock.unlock();
          while (again && !stop_.load()) {
            const d::ReadSection s;
          }
        }) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return stage_ >= 1; });
  }
  ~Parked() { join(); }
  // Leaves the innermost section (and waits until it has).
  void leave_inner() {
    std::unique_lock<std::mutex> lock(mu_);
    asked_ = 1;
    cv_.notify_all();
    cv_.wait(lock, [&] { return stage_ >= 2; });
  }
  // Leaves every section (then, with `again`, keeps entering new ones).
  void leave_all() {
    std::lock_guard<std::mutex> lock(mu_);
    asked_ = 2;
    cv_.notify_all();
  }
  void join() {
    leave_all();
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }

 private:
  void set_stage(int s) {  // caller holds mu_
    stage_ = s;
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  int stage_ = 0, asked_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Calls reclaim() until `done` holds, for up to ten seconds.
template <class F>
bool reclaimed_until(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    d::reclaim();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(Reclaim, WithNoReaderABatchIsFreedAtOnce) {
  d::reclaim();  // what earlier tests' readers held
  std::atomic<int> freed{0};
  d::retire(batch_of(5, &freed));
  EXPECT_EQ(freed.load(), 5);
  d::retire(d::Retired());  // an empty batch frees nothing and keeps nothing
  EXPECT_EQ(d::reclaim_counts().batches, 0u);
}

TEST(Reclaim, TheCallersOwnSectionHoldsItsBatch) {
  d::reclaim();
  std::atomic<int> freed{0};
  {
    const d::ReadSection outer;
    {
      const d::ReadSection inner;
      d::retire(batch_of(3, &freed));
    }
    d::reclaim();  // the outer section is still open
    EXPECT_EQ(freed.load(), 0);
    EXPECT_EQ(d::reclaim_counts().batches, 1u);
  }
  d::reclaim();
  EXPECT_EQ(freed.load(), 3);
  EXPECT_EQ(d::reclaim_counts().batches, 0u);
}

TEST(ReclaimConcurrent, ABatchWaitsForTheThreadsInsideWhenItWasRetired) {
  std::atomic<int> freed{0};
  Parked deep(2);  // inside two nested sections
  d::retire(batch_of(4, &freed));
  EXPECT_EQ(freed.load(), 0);
  deep.leave_inner();  // still inside the outer one
  d::reclaim();
  EXPECT_EQ(freed.load(), 0);
  // A thread that enters after the batch was retired does not hold it.
  std::thread later([] { const d::ReadSection s; });
  later.join();
  deep.leave_all();
  EXPECT_TRUE(reclaimed_until([&] { return freed.load() == 4; }));
}

TEST(ReclaimConcurrent, AThreadThatKeepsEnteringSectionsLetsGo) {
  std::atomic<int> freed{0};
  Parked busy(1, /*again=*/true);
  d::retire(batch_of(2, &freed));
  EXPECT_EQ(freed.load(), 0);
  busy.leave_all();  // then enters and leaves sections without pause
  EXPECT_TRUE(reclaimed_until([&] { return freed.load() == 2; }));
  busy.join();
}

TEST(ReclaimConcurrent, AThreadThatEndsLetsGo) {
  std::atomic<int> freed{0};
  auto parked = std::make_unique<Parked>(1);
  d::retire(batch_of(2, &freed));
  parked->leave_all();
  parked.reset();  // the thread has ended: its reader is gone
  EXPECT_TRUE(reclaimed_until([&] { return freed.load() == 2; }));
  EXPECT_EQ(d::reclaim_counts().batches, 0u);
}

TEST(Reclaim, AnEntryAGraphHoldsIsFreedWhenTheGraphIsGone) {
  d::reclaim();
  const size_t before = d::reclaim_counts().freed;
  std::vector<std::unique_ptr<d::Entry>> entries;
  entries.push_back(std::make_unique<d::Entry>());
  entries.push_back(std::make_unique<d::Entry>());
  d::Entry* held = entries[0].get();
  held->graph_holds.store(1);
  d::Retired r;
  r.add_entries(entries);
  d::retire(std::move(r));
  const d::ReclaimCounts c = d::reclaim_counts();
  EXPECT_EQ(c.batches, 0u);
  EXPECT_EQ(c.graph_entries, 1u);
  EXPECT_EQ(c.freed, before + 1);  // the other entry
  held->graph_holds.store(0);      // what the graph's user object does when CUDA destroys it
  EXPECT_EQ(d::reclaim(), 1u);
  EXPECT_EQ(d::reclaim_counts().graph_entries, 0u);
}

// Readers follow a published pointer inside sections and check the object they reach; the
// writer replaces it and retires the old one, thousands of times. No reader reaches a freed
// object, and once the readers stop everything retired is freed.
TEST(ReclaimConcurrent, ReadersNeverReachAFreedObject) {
  constexpr int kReaders = 3, kRounds = 3000;
  std::atomic<int> freed{0};
  std::atomic<Counted*> current{new Counted(&freed)};
  std::atomic<bool> stop{false};
  std::atomic<long> reads{0}, bad{0};
  std::atomic<int> reading{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&] {
      for (bool counted = false; !stop.load(std::memory_order_relaxed);) {
        const d::ReadSection s;
        const Counted* c = current.load(std::memory_order_acquire);
        if (c->canary != 0xC0FFEEull) bad.fetch_add(1);
        {
          const d::ReadSection nested;  // leaving a nested section lets nothing go
        }
        std::this_thread::yield();
        if (c->canary != 0xC0FFEEull) bad.fetch_add(1);
        reads.fetch_add(1, std::memory_order_relaxed);
        if (!counted) reading.fetch_add(1);
        counted = true;
      }
    });
  }
  while (reading.load() < kReaders) std::this_thread::yield();  // every reader is reading
  for (int i = 0; i < kRounds; ++i) {
    Counted* old = current.exchange(new Counted(&freed), std::memory_order_acq_rel);
    d::Retired r;
    r.add(std::unique_ptr<Counted>(old));
    d::retire(std::move(r));
  }
  stop.store(true);
  for (auto& t : readers) t.join();
  d::reclaim();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(reads.load(), kReaders);
  const d::ReclaimCounts c = d::reclaim_counts();
  EXPECT_EQ(freed.load(), kRounds)  // every retired object, none of them early
      << c.batches << " batches (" << c.objects << " objects) waiting, " << c.kept << " kept";
  delete current.load();
}

}  // namespace
