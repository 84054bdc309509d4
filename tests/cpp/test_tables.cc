// The runtime's lock-free tables on their own, in a program linked to triton_embed::runtime
// only: EntryTable (core/cache.h: the compile cache's lookups), MemoTable (core/memo.h: the
// layers' memos) and OncePerKey (core/once.h: one build per key). Each test asserts exact
// values and counts. The suites named *Concurrent run threads against one table; they are
// what the ThreadSanitizer build runs (label threads, GTEST_FILTER=*Thread*:*Concurrent*).
// The program links the runtime's object files, not its shared library, so that the members
// the library does not export (EntryTable::clear, OncePerKey::get) are reachable too.

#include <gtest/gtest.h>
#include <triton_embed/error.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/cache.h"
#include "core/memo.h"
#include "core/once.h"
#include "core/reclaim.h"

namespace d = triton_embed::detail;

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kTarget = 90 | 32u << 16;  // sm_90, warp size 32: arch | warp_size << 16

// Spins until done() or `limit` passed; says which.
template <class F>
bool wait_until(F done, std::chrono::milliseconds limit = std::chrono::milliseconds(10000)) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

// Counts this thread in, then waits until all `n` threads are in, so that they start together.
void start_together(std::atomic<int>& started, int n) {
  started.fetch_add(1);
  wait_until([&] { return started.load() == n; });
}

// Waits until each of the n readers has looked up round `round` (looked[i]: the last round
// reader i looked up); false when the time limit passed.
bool all_looked_at(const std::atomic<int>* looked, int n, int round) {
  return wait_until([&] {
    for (int i = 0; i < n; ++i) {
      if (looked[i].load(std::memory_order_acquire) < round) return false;
    }
    return true;
  });
}

// A compile-cache key as build_key makes one: the target, an interned options id and n words,
// distinct for each (id, n).
d::Key key_of(uint64_t id, uint32_t n, uint32_t options = 1, uint32_t target = kTarget) {
  d::Key k;
  k.target = target;
  k.options = options;
  k.n = n;
  for (uint32_t i = 0; i < n; ++i) k.w[i] = id << 20 | i;
  return k;
}

// An entry for key k with hash h, filled as a source fills one (bundle/store.cc) before it is
// published; `tag` goes into launch constants the tests read back through the table.
std::unique_ptr<d::Entry> entry_for(const d::Key& k, uint64_t h, uint32_t tag = 0) {
  auto e = std::make_unique<d::Entry>();
  e->target = k.target;
  e->options = k.options;
  e->hash = h;
  e->set_key(k);
  e->block_x = tag;
  e->shared = tag * 7;
  return e;
}

// EntryTable, one thread

TEST(EntryTable, EmptyTableFindsNothing) {
  d::EntryTable t;
  const d::Key k = key_of(1, 4);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.find(k, k.hash()), nullptr);
}

TEST(EntryTable, FindsEachEntryByItsWholeKey) {
  d::EntryTable t;
  // No words, a short key, one at the inline limit, one past it (the key_words copy), the
  // longest.
  const uint32_t lengths[] = {0, 3, d::kInlineKeyWords, d::kInlineKeyWords + 1,
                              static_cast<uint32_t>(d::kMaxKeyWords)};
  std::vector<d::Key> keys;
  std::vector<std::unique_ptr<d::Entry>> entries;
  for (uint32_t n : lengths) {
    keys.push_back(key_of(n + 100, n));
    entries.push_back(entry_for(keys.back(), keys.back().hash(), n));
    t.insert(entries.back().get());
  }
  ASSERT_EQ(t.size(), 5u);
  for (size_t i = 0; i < keys.size(); ++i) {
    d::Entry* e = t.find(keys[i], keys[i].hash());
    ASSERT_EQ(e, entries[i].get()) << "key of " << keys[i].n << " words";
    EXPECT_EQ(e->block_x, keys[i].n);
  }
  // A key that differs in one field or word is another key, even under the same hash (what
  // matches() compares, not the hash, tells them apart).
  for (size_t i = 1; i < keys.size(); ++i) {
    const d::Key& k = keys[i];
    const uint64_t h = k.hash();
    d::Key first = k, last = k, target = k, options = k, shorter = k;
    first.w[0] ^= 1;
    last.w[k.n - 1] ^= 1ull << 63;
    target.target = 80 | 32u << 16;
    options.options = 2;
    shorter.n = k.n - 1;
    EXPECT_EQ(t.find(first, h), nullptr) << k.n;
    EXPECT_EQ(t.find(last, h), nullptr) << k.n;
    EXPECT_EQ(t.find(target, h), nullptr) << k.n;
    EXPECT_EQ(t.find(options, h), nullptr) << k.n;
    EXPECT_EQ(t.find(shorter, h), nullptr) << k.n;
    EXPECT_EQ(t.find(first, first.hash()), nullptr) << k.n;
    // The right key under another hash is not found either: the entry's hash is compared.
    EXPECT_EQ(t.find(k, h ^ 1), nullptr) << k.n;
  }
  // process_local is not part of the comparison: the same key with it set is the same entry.
  d::Key local = keys[1];
  local.process_local = 1;
  EXPECT_EQ(t.find(local, local.hash()), entries[1].get());
}

TEST(EntryTable, CollidingHashesProbeOnAndWrapAround) {
  d::EntryTable t;  // 16 slots until its 9th entry
  std::vector<d::Key> keys;
  std::vector<std::unique_ptr<d::Entry>> entries;
  // Four keys with the very same hash at the last slot (they wrap to slots 0..2), two whose
  // hashes differ from it but start at the same slot (15 + 16, 15 + 32), and one whose home
  // slot 0 the others took.
  const uint64_t hashes[] = {15, 15, 15, 15, 31, 47, 0};
  for (size_t i = 0; i < std::size(hashes); ++i) {
    keys.push_back(key_of(i, 2));
    entries.push_back(entry_for(keys.back(), hashes[i], static_cast<uint32_t>(i)));
    t.insert(entries.back().get());
  }
  ASSERT_EQ(t.size(), std::size(hashes));
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(t.find(keys[i], hashes[i]), entries[i].get()) << i;
  }
  // A key of the same hash that was never inserted walks the whole run and finds nothing.
  EXPECT_EQ(t.find(key_of(99, 2), 15), nullptr);
  EXPECT_EQ(t.find(key_of(99, 2), 1), nullptr);
}

TEST(EntryTable, GrowsAndKeepsEveryEntry) {
  d::EntryTable t;
  constexpr int kN = 600;  // grows 16 -> 32 -> ... -> 2048
  std::vector<d::Key> keys, absent;
  std::vector<std::unique_ptr<d::Entry>> entries;
  for (int i = 0; i < kN; ++i) {
    keys.push_back(key_of(i, 1 + i % 12));
    absent.push_back(key_of(i + 1000000, 1 + i % 12));
  }
  // Every tenth key shares one hash, so that a long probe run is rehashed at each growth.
  auto hash_of = [&](int i) { return i % 10 == 0 ? uint64_t{7} : keys[i].hash(); };
  for (int i = 0; i < kN; ++i) {
    entries.push_back(entry_for(keys[i], hash_of(i), static_cast<uint32_t>(i)));
    t.insert(entries.back().get());
    ASSERT_EQ(t.size(), static_cast<size_t>(i + 1));
    for (int j = 0; j <= i; ++j) {
      ASSERT_EQ(t.find(keys[j], hash_of(j)), entries[j].get()) << j << " after " << i + 1;
    }
    ASSERT_EQ(t.find(absent[i], absent[i].hash()), nullptr);
    ASSERT_EQ(t.find(absent[i], 7), nullptr);
  }
}

TEST(EntryTable, ClearForgetsEveryEntryAndTheTableFillsAgain) {
  d::EntryTable t;
  d::Retired tables;
  t.clear(tables);               // an empty table clears to an empty table
  d::retire(std::move(tables));  // freed at once: no reader here
  EXPECT_EQ(t.size(), 0u);
  constexpr int kN = 100;
  std::vector<d::Key> keys;
  std::vector<std::unique_ptr<d::Entry>> entries;
  for (int i = 0; i < kN; ++i) {
    keys.push_back(key_of(i, 4));
    entries.push_back(entry_for(keys[i], keys[i].hash(), static_cast<uint32_t>(i)));
    t.insert(entries[i].get());
  }
  ASSERT_EQ(t.size(), static_cast<size_t>(kN));
  t.clear(tables);
  d::retire(std::move(tables));
  EXPECT_EQ(t.size(), 0u);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(t.find(keys[i], keys[i].hash()), nullptr) << i;
  // The table does not own its entries: clearing leaves them as they were.
  EXPECT_EQ(entries[5]->block_x, 5u);
  EXPECT_TRUE(entries[5]->matches(keys[5], keys[5].hash()));
  // Filled again past its first growth: the new entries only (even of the same keys).
  std::vector<std::unique_ptr<d::Entry>> again;
  for (int i = 0; i < kN; i += 2) {
    again.push_back(entry_for(keys[i], keys[i].hash(), static_cast<uint32_t>(1000 + i)));
    t.insert(again.back().get());
  }
  EXPECT_EQ(t.size(), static_cast<size_t>(kN / 2));
  for (int i = 0; i < kN; ++i) {
    d::Entry* e = t.find(keys[i], keys[i].hash());
    if (i % 2 == 0) {
      EXPECT_EQ(e, again[i / 2].get()) << i;
    } else {
      EXPECT_EQ(e, nullptr) << i;
    }
  }
}

// EntryTable, threads

// Writers insert under one mutex (the cache's), growing the table 16 -> 2048, while readers
// look up: an entry whose insert finished before a lookup started is found, with the fields
// its writer set before inserting it; nothing else is ever returned.
TEST(EntryTableConcurrent, ReadersFindEveryPublishedEntryWhileWritersInsertAndGrow) {
  constexpr int kWriters = 4, kReaders = 4, kPerWriter = 256, kN = kWriters * kPerWriter;
  std::vector<d::Key> keys, absent;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < kN; ++i) {
    keys.push_back(key_of(i, i % 3 == 0 ? 12 : 4));  // some past the inline key
    absent.push_back(key_of(i + 1000000, 4));
    hashes.push_back(i % 16 == 0 ? uint64_t{5} : keys[i].hash());  // and some long runs
  }
  d::EntryTable table;
  std::mutex mu;
  std::vector<std::unique_ptr<d::Entry>> entries(kN);  // written by the writers only
  std::unique_ptr<std::atomic<int>[]> inserted(new std::atomic<int>[kN]());
  std::atomic<int> writers_left{kWriters}, started{0};
  std::atomic<long> lookups{0}, wrong{0}, missed{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start_together(started, kWriters + kReaders);
      for (int i = w; i < kN; i += kWriters) {
        // Made on this thread: only the insert's release publishes its fields to readers.
        entries[i] = entry_for(keys[i], hashes[i], static_cast<uint32_t>(1000 + i));
        {
          std::lock_guard<std::mutex> lock(mu);
          table.insert(entries[i].get());
        }
        inserted[i].store(1, std::memory_order_release);
        if (i % 64 == w) {  // let the readers look while the table grows
          const long seen = lookups.load();
          wait_until([&] { return lookups.load() > seen + 16; }, std::chrono::milliseconds(200));
        }
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937 rng(1234 + r);
      start_together(started, kWriters + kReaders);
      long n = 0;
      while (writers_left.load() > 0 || n < 2000) {
        const int i = static_cast<int>(rng() % kN);
        const bool was_inserted = inserted[i].load(std::memory_order_acquire) != 0;
        const d::Entry* e = table.find(keys[i], hashes[i]);
        if (e != nullptr && (!e->matches(keys[i], hashes[i]) || e->block_x != 1000u + i ||
                             e->shared != (1000u + i) * 7 || e->key_words.size() != keys[i].n)) {
          wrong.fetch_add(1);
        }
        if (was_inserted && e == nullptr) missed.fetch_add(1);
        if (table.find(absent[i], absent[i].hash()) != nullptr) wrong.fetch_add(1);
        if (table.find(absent[i], 5) != nullptr) wrong.fetch_add(1);
        ++n;
        lookups.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();

  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(missed.load(), 0);
  EXPECT_GE(lookups.load(), kReaders * 2000);
  ASSERT_EQ(table.size(), static_cast<size_t>(kN));
  for (int i = 0; i < kN; ++i) EXPECT_EQ(table.find(keys[i], hashes[i]), entries[i].get()) << i;
}

// Rounds of: a writer inserts 12 entries (the table grows past 16 slots) and clears the table,
// as unloading bundles does; every fifth round it waits until each reader has looked one up
// before clearing. A reader's lookup that ends before the round's clear starts finds the entry; one
// that starts after a clear ended finds none of that round's; no lookup finds anything but the
// entry of its key.
TEST(EntryTableConcurrent, ReadersDuringClearSeeTheEntriesOrNothing) {
  constexpr int kRounds = 150, kPerRound = 12, kReaders = 3;
  std::vector<std::vector<d::Key>> keys(kRounds + 1);
  for (int r = 0; r <= kRounds; ++r) {
    for (int j = 0; j < kPerRound; ++j) keys[r].push_back(key_of(r * 100 + j, 3 + j % 10));
  }
  d::EntryTable table;
  std::mutex mu;
  // The entries stay until the end; the tables a clear retires are freed once the readers, each
  // lookup in a read section, have let go of them (core/reclaim.h).
  std::vector<std::unique_ptr<d::Entry>> retired;
  std::atomic<int> published{0}, cleared{0}, started{0};  // rounds, from 1
  std::unique_ptr<std::atomic<int>[]> looked(new std::atomic<int>[kReaders]());
  std::atomic<bool> done{false};
  std::atomic<long> lookups{0}, wrong{0}, missed{0}, stale{0}, timeouts{0};

  std::thread writer([&] {
    start_together(started, kReaders + 1);
    for (int r = 1; r <= kRounds; ++r) {
      {
        std::lock_guard<std::mutex> lock(mu);
        for (int j = 0; j < kPerRound; ++j) {
          const d::Key& k = keys[r][j];
          retired.push_back(entry_for(k, k.hash(), static_cast<uint32_t>(r * 100 + j)));
          table.insert(retired.back().get());
        }
      }
      published.store(r, std::memory_order_release);
      const bool all_looked = r % 5 != 0 || all_looked_at(looked.get(), kReaders, r);
      if (!all_looked) timeouts.fetch_add(1);
      d::Retired tables;
      {
        std::lock_guard<std::mutex> lock(mu);
        table.clear(tables);
      }
      d::retire(std::move(tables));
      cleared.store(r, std::memory_order_release);
    }
    done.store(true);
  });
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(77 + t);
      int my_round = 0;  // the last round this reader looked up before its clear
      start_together(started, kReaders + 1);
      while (!done.load()) {
        const int c = cleared.load(std::memory_order_acquire);
        const int p = published.load(std::memory_order_acquire);
        // Round p's first lookup here, which the writer waits for before it clears; else the
        // round just cleared, the one published, or the next one.
        const bool first = p % 5 == 0 && p > my_round;
        const int r = first ? p : std::min(kRounds, std::max(1, c + static_cast<int>(rng() % 3)));
        const int j = static_cast<int>(rng() % kPerRound);
        const d::Key& k = keys[r][j];
        const d::ReadSection reading;
        const d::Entry* e = table.find(k, k.hash());
        if (e != nullptr &&
            (!e->matches(k, k.hash()) || e->block_x != static_cast<uint32_t>(r * 100 + j))) {
          wrong.fetch_add(1);
        }
        if (e != nullptr && r <= c) stale.fetch_add(1);
        if (first) {
          if (e == nullptr) missed.fetch_add(1);
          my_round = p;
          looked[t].store(p, std::memory_order_release);
        }
        lookups.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& th : readers) th.join();

  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(missed.load(), 0);
  EXPECT_EQ(timeouts.load(), 0);
  EXPECT_GE(lookups.load(), kRounds / 5 * kReaders);
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(retired.size(), static_cast<size_t>(kRounds * kPerRound));
}

// MemoTable, one thread

d::MemoKey memo_key(uint64_t id, uint32_t n) {
  d::MemoKey k;
  for (uint32_t i = 0; i < n; ++i) k.push(id << 8 | i);
  return k;
}

// find()'s answer as {found, v0, v1}.
struct Found {
  bool found;
  uint64_t v0, v1;
  bool operator==(const Found& o) const {
    return found == o.found && (!found || (v0 == o.v0 && v1 == o.v1));
  }
};
std::ostream& operator<<(std::ostream& os, const Found& f) {
  return f.found ? os << "{" << f.v0 << ", " << f.v1 << "}" : os << "absent";
}
Found lookup(const d::MemoTable& t, const d::MemoKey& k, uint64_t h) {
  uint64_t out[2] = {~0ull, ~0ull};
  const bool found = t.find(k, h, out);
  return {found, out[0], out[1]};
}
Found value(uint64_t v0, uint64_t v1) { return {true, v0, v1}; }
constexpr Found kAbsent{false, 0, 0};

void put(d::MemoTable& t, const d::MemoKey& k, uint64_t h, uint64_t v0, uint64_t v1) {
  const uint64_t v[2] = {v0, v1};
  t.insert(k, h, v);
}

TEST(MemoTable, KeyPushStopsAtItsCapacity) {
  d::MemoKey k = memo_key(1, d::kMemoWords);
  EXPECT_EQ(k.n, d::kMemoWords);
  EXPECT_FALSE(k.overflow);
  k.push(5);
  EXPECT_EQ(k.n, d::kMemoWords);
  EXPECT_TRUE(k.overflow);
  EXPECT_EQ(k.w[d::kMemoWords - 1], 1u << 8 | (d::kMemoWords - 1));
}

TEST(MemoTable, FindsWhatWasInsertedAndTheLatestValue) {
  d::MemoTable t;
  const d::MemoKey empty = memo_key(0, 0), a = memo_key(1, 3), full = memo_key(2, d::kMemoWords);
  EXPECT_EQ(lookup(t, a, a.hash()), kAbsent);
  put(t, a, a.hash(), 10, 11);
  put(t, empty, empty.hash(), 20, 21);
  put(t, full, full.hash(), 30, 31);
  EXPECT_EQ(lookup(t, a, a.hash()), value(10, 11));
  EXPECT_EQ(lookup(t, empty, empty.hash()), value(20, 21));
  EXPECT_EQ(lookup(t, full, full.hash()), value(30, 31));
  put(t, a, a.hash(), 12, 13);  // replaced in its slot
  EXPECT_EQ(lookup(t, a, a.hash()), value(12, 13));
  // Keys compare wholly: a prefix, one word changed, or another hash is another key.
  d::MemoKey prefix = memo_key(1, 2), changed = a;
  changed.w[2] ^= 1;
  EXPECT_EQ(lookup(t, prefix, a.hash()), kAbsent);
  EXPECT_EQ(lookup(t, changed, a.hash()), kAbsent);
  EXPECT_EQ(lookup(t, a, a.hash() + 1), kAbsent);
}

TEST(MemoTable, AFullProbeWindowReusesItsSlotsInTurn) {
  d::MemoTable t(16);
  const uint64_t h = 13;  // the window is slots 13, 14, 15, 0, 1, 2, 3, 4
  std::vector<d::MemoKey> keys;
  for (int i = 0; i < 20; ++i) keys.push_back(memo_key(100 + i, 1 + i % 4));
  // A key replaced in place takes no second slot: eight keys fill the window.
  put(t, keys[0], h, 0, 1);
  put(t, keys[0], h, 0, 0);
  for (int i = 1; i < 8; ++i) put(t, keys[i], h, i, i);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(lookup(t, keys[i], h), value(i, i)) << i;
  // Each further key takes the next slot of the window in turn: key 8 key 0's, ..., key 16
  // key 8's (the first slot again).
  for (int i = 8; i < 17; ++i) {
    put(t, keys[i], h, i, i);
    for (int j = 0; j <= i; ++j) {
      const bool kept = j > i - 8;
      EXPECT_EQ(lookup(t, keys[j], h), kept ? value(j, j) : kAbsent) << j << " after " << i;
    }
  }
  // A key whose window starts one slot later takes the first free slot after the full window.
  const d::MemoKey other = memo_key(999, 2);
  put(t, other, h + 1, 7, 8);
  EXPECT_EQ(lookup(t, other, h + 1), value(7, 8));
  for (int j = 9; j < 17; ++j) EXPECT_EQ(lookup(t, keys[j], h), value(j, j)) << j;
}

TEST(MemoTable, ClearForgetsEveryKeyAndFreesEverySlot) {
  d::MemoTable t(64);
  t.clear();  // never written: nothing to do
  std::vector<d::MemoKey> keys;
  for (int i = 0; i < 40; ++i) {
    keys.push_back(memo_key(i, 1 + i % 5));
    put(t, keys[i], keys[i].hash(), i, ~uint64_t(i));
  }
  const uint64_t h = 60;  // and a full window that wraps
  std::vector<d::MemoKey> same;
  for (int i = 0; i < 10; ++i) {
    same.push_back(memo_key(500 + i, 3));
    put(t, same[i], h, 500 + i, 0);
  }
  t.clear();
  for (int i = 0; i < 40; ++i) EXPECT_EQ(lookup(t, keys[i], keys[i].hash()), kAbsent) << i;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(lookup(t, same[i], h), kAbsent) << i;
  // Cleared slots are free again: eight keys of one hash all fit, none evicts another.
  for (int i = 0; i < 8; ++i) put(t, same[i], h, 600 + i, 1);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(lookup(t, same[i], h), value(600 + i, 1)) << i;
  // A key inserted again holds its new value; the others stay forgotten.
  put(t, keys[3], keys[3].hash(), 33, 34);
  EXPECT_EQ(lookup(t, keys[3], keys[3].hash()), value(33, 34));
  EXPECT_EQ(lookup(t, keys[4], keys[4].hash()), kAbsent);
  t.clear();
  EXPECT_EQ(lookup(t, keys[3], keys[3].hash()), kAbsent);
  EXPECT_EQ(lookup(t, same[0], h), kAbsent);
}

// MemoTable, threads

// One writer (the owner's mutex allows no more) rewrites sixteen keys, eight of them filling
// one probe window, while readers look them up: a value read is one whole value the writer
// wrote for that key, never older than one the reader saw before.
TEST(MemoTableConcurrent, ReadersSeeWholeValuesWhileAWriterReplacesThem) {
  constexpr int kKeys = 16, kReaders = 4, kWrites = 20000;
  d::MemoTable t(32);
  std::vector<d::MemoKey> keys;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back(memo_key(i, 1 + i % 6));
    // Keys 0..7 fill the window of slots 30, 31, 0..5; the others have a home slot each.
    hashes.push_back(i < 8 ? 30 : 8 + 2 * (i - 8));
  }
  std::atomic<int> started{0};
  std::atomic<bool> done{false};
  std::atomic<long> lookups{0}, wrong{0}, backwards{0}, hits{0};
  std::thread writer([&] {
    start_together(started, kReaders + 1);
    for (uint64_t g = 1; g <= kWrites; ++g) {
      const int i = static_cast<int>(g % kKeys);
      put(t, keys[i], hashes[i], g, ~g ^ i);  // the pair identifies the write and the key
      if (g % 1000 == 0) {                    // let the readers look
        const long seen = lookups.load();
        wait_until([&] { return lookups.load() > seen + 16; }, std::chrono::milliseconds(200));
      }
    }
    done.store(true);
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::mt19937 rng(5 + r);
      std::vector<uint64_t> last(kKeys, 0);
      start_together(started, kReaders + 1);
      while (!done.load()) {
        const int i = static_cast<int>(rng() % kKeys);
        uint64_t out[2];
        lookups.fetch_add(1);
        if (!t.find(keys[i], hashes[i], out)) continue;
        hits.fetch_add(1);
        if (out[1] != (~out[0] ^ static_cast<uint64_t>(i)) || out[0] % kKeys != uint64_t(i) ||
            out[0] > kWrites) {
          wrong.fetch_add(1);
        }
        if (out[0] < last[i]) backwards.fetch_add(1);
        last[i] = out[0];
      }
    });
  }
  writer.join();
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(backwards.load(), 0);
  EXPECT_GT(hits.load(), 0);
  for (int i = 0; i < kKeys; ++i) {
    const uint64_t g = kWrites - (kWrites - i) % kKeys;  // the last write of key i
    EXPECT_EQ(lookup(t, keys[i], hashes[i]), value(g, ~g ^ i)) << i;
  }
}

// Two keys of one hash take turns in one slot: insert A, clear, insert B, clear, ... Since a
// clear keeps the slot's sequence number, a reader that read A's words before a clear and B's
// insert sees the slot change and does not take B's value for A's. A reader finds a key only
// with a value the writer gave that key, and never one cleared before its lookup started.
// Every hundredth insert the writer waits until each reader has looked it up before clearing:
// that lookup finds it.
TEST(MemoTableConcurrent, ReadersDuringClearNeverSeeAnotherKeysValue) {
  constexpr int kReaders = 3, kRounds = 4000;
  d::MemoTable t(16);
  const uint64_t h = 9;
  // Keys of the longest length that differ in their first word only: a reader that compared
  // it for one key and then compares the rest while the other is written sees them equal.
  d::MemoKey keys[2] = {memo_key(1, d::kMemoWords), memo_key(1, d::kMemoWords)};
  keys[1].w[0] ^= 1;
  std::mutex mu;
  std::atomic<int> inserted{0}, cleared{0}, started{0};  // writes, from 1
  std::unique_ptr<std::atomic<int>[]> looked(new std::atomic<int>[kReaders]());
  std::atomic<bool> done{false};
  std::atomic<long> lookups{0}, wrong{0}, stale{0}, missed{0}, timeouts{0};
  std::thread writer([&] {
    start_together(started, kReaders + 1);
    for (int g = 1; g <= kRounds; ++g) {
      {
        std::lock_guard<std::mutex> lock(mu);
        put(t, keys[g % 2], h, static_cast<uint64_t>(g), static_cast<uint64_t>(g % 2));
      }
      inserted.store(g, std::memory_order_release);
      if (g % 100 == 0) {
        const bool all_looked = all_looked_at(looked.get(), kReaders, g);
        if (!all_looked) timeouts.fetch_add(1);
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        t.clear();
      }
      cleared.store(g, std::memory_order_release);
    }
    done.store(true);
  });
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      int which = 0, my_round = 0;
      start_together(started, kReaders + 1);
      while (!done.load()) {
        const int c = cleared.load(std::memory_order_acquire);
        const int i = inserted.load(std::memory_order_acquire);
        // Insert i's lookup, which the writer waits for before it clears; else either key.
        const bool first = i % 100 == 0 && i > my_round;
        which = first ? i % 2 : which ^ 1;
        uint64_t out[2];
        const bool found = t.find(keys[which], h, out);
        if (found && (out[1] != static_cast<uint64_t>(which) || out[0] % 2 != uint64_t(which) ||
                      out[0] > kRounds)) {
          wrong.fetch_add(1);
        }
        if (found && out[0] <= static_cast<uint64_t>(c)) stale.fetch_add(1);
        if (first) {
          if (!found || out[0] != static_cast<uint64_t>(i)) missed.fetch_add(1);
          my_round = i;
          looked[r].store(i, std::memory_order_release);
        }
        lookups.fetch_add(1);
      }
    });
  }
  writer.join();
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(stale.load(), 0);
  EXPECT_EQ(missed.load(), 0);
  EXPECT_EQ(timeouts.load(), 0);
  EXPECT_GE(lookups.load(), kRounds / 100 * kReaders);
  EXPECT_EQ(lookup(t, keys[0], h), kAbsent);
  EXPECT_EQ(lookup(t, keys[1], h), kAbsent);
}

// OncePerKey

// What a cache or a tuning layer holds: its mutex, what it published (by head and words),
// and counts of the build steps.
struct Owner {
  std::mutex mu;
  d::OncePerKey building;
  std::map<std::vector<uint64_t>, int*> published;  // guarded by mu
  std::vector<std::unique_ptr<int>> owned;          // guarded by mu
  std::atomic<int> makes{0}, publishes{0}, dropped{0};

  int waiters() {
    std::lock_guard<std::mutex> lock(mu);
    return building.waiters();
  }
};

// One thread's build of one key, as resolve_entry's EntryBuild does it: find looks in what
// the owner published, make builds an int (or throws), publish owns and publishes it.
class IntBuild final : public d::OncePerKey::Build {
 public:
  IntBuild(Owner& o, const d::Key& k, int value) : o_(o), id_{head(k)}, value_(value) {
    id_.insert(id_.end(), k.w, k.w + k.n);
  }
  static uint64_t head(const d::Key& k) {
    return static_cast<uint64_t>(k.target) << 32 | k.options;
  }

  void* find() override {
    auto it = o_.published.find(id_);
    return it == o_.published.end() ? nullptr : it->second;
  }
  void make() override {
    o_.makes.fetch_add(1);
    if (during_make) during_make();
    if (!make_error.empty()) throw triton_embed::CompileError(make_error);
    made_ = std::make_unique<int>(value_);
  }
  void* publish(bool keep) override {
    o_.publishes.fetch_add(1);
    if (!keep) o_.dropped.fetch_add(1);
    if (!publish_error.empty()) throw triton_embed::CompileError(publish_error);
    int* raw = made_.get();
    o_.owned.push_back(std::move(made_));
    o_.published.emplace(id_, raw);  // the first one published stays
    return raw;
  }

  std::function<void()> during_make;  // runs in make(), no lock held
  std::string make_error, publish_error;

 private:
  Owner& o_;
  std::vector<uint64_t> id_;
  int value_;
  std::unique_ptr<int> made_;
};

int* get(Owner& o, const d::Key& k, IntBuild& b, bool shared = true) {
  return static_cast<int*>(o.building.get(o.mu, IntBuild::head(k), k.w, k.n, k.hash(), b, shared));
}

TEST(OncePerKey, BuildsOnceThenFindsWhatItPublished) {
  Owner o;
  const d::Key k = key_of(1, 5);
  IntBuild first(o, k, 42);
  int* r = get(o, k, first);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(*r, 42);
  EXPECT_EQ(o.makes.load(), 1);
  EXPECT_EQ(o.publishes.load(), 1);
  EXPECT_EQ(o.dropped.load(), 0);  // the epoch did not pass: kept
  IntBuild second(o, k, 43);
  EXPECT_EQ(get(o, k, second), r);
  EXPECT_EQ(o.makes.load(), 1);
  EXPECT_EQ(o.publishes.load(), 1);
  // Another key (other words, or the same words under another options id) builds its own.
  const d::Key words = key_of(2, 5), options = key_of(1, 5, 2);
  IntBuild b1(o, words, 7), b2(o, options, 8);
  EXPECT_EQ(*get(o, words, b1), 7);
  EXPECT_EQ(*get(o, options, b2), 8);
  EXPECT_EQ(o.makes.load(), 3);
  EXPECT_EQ(o.waiters(), 0);
}

TEST(OncePerKey, AFailedBuildPublishesNothingAndTheNextCallBuildsAgain) {
  Owner o;
  const d::Key k = key_of(3, 2);
  IntBuild failing(o, k, 1);
  failing.make_error = "make failed";
  try {
    get(o, k, failing);
    ADD_FAILURE() << "no exception";
  } catch (const triton_embed::CompileError& e) {
    EXPECT_STREQ(e.what(), "make failed");
  }
  EXPECT_EQ(o.makes.load(), 1);
  EXPECT_EQ(o.publishes.load(), 0);
  IntBuild failing_publish(o, k, 2);
  failing_publish.publish_error = "publish failed";
  try {
    get(o, k, failing_publish);
    ADD_FAILURE() << "no exception";
  } catch (const triton_embed::CompileError& e) {
    EXPECT_STREQ(e.what(), "publish failed");
  }
  EXPECT_EQ(o.makes.load(), 2);
  EXPECT_EQ(o.publishes.load(), 1);
  EXPECT_TRUE(o.published.empty());
  IntBuild ok(o, k, 3);
  EXPECT_EQ(*get(o, k, ok), 3);
  EXPECT_EQ(o.makes.load(), 3);
  EXPECT_EQ(o.published.size(), 1u);
  EXPECT_EQ(o.waiters(), 0);
}

// OncePerKey, threads

constexpr int kMissers = 8;

// What each of kMissers threads got from missing key k together: the first builds, and its
// make() returns (or throws `error`) only once the seven others wait for it, so none of them
// can have found a published result instead.
struct Misses {
  bool all_waited = false;
  std::vector<int*> results = std::vector<int*>(kMissers, nullptr);
  std::vector<std::string> messages = std::vector<std::string>(kMissers);
  std::vector<std::exception_ptr> errors = std::vector<std::exception_ptr>(kMissers);
};
Misses miss_together(Owner& o, const d::Key& k, const std::string& error) {
  Misses m;
  std::atomic<int> started{0};
  std::atomic<bool> all_waited{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kMissers; ++t) {
    threads.emplace_back([&, t] {
      IntBuild b(o, k, 100 + t);
      b.make_error = error;
      b.during_make = [&] {
        all_waited.store(wait_until([&] { return o.waiters() == kMissers - 1; }));
      };
      start_together(started, kMissers);
      try {
        m.results[t] = get(o, k, b);
      } catch (const triton_embed::CompileError& e) {
        m.messages[t] = e.what();
        m.errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : threads) th.join();
  m.all_waited = all_waited.load();
  return m;
}

// Eight threads miss one key together: one build, and all get its result.
TEST(OncePerKeyConcurrent, FirstMissesOfOneKeyBuildOnce) {
  Owner o;
  const Misses m = miss_together(o, key_of(10, 9), "");
  EXPECT_TRUE(m.all_waited);
  EXPECT_EQ(o.makes.load(), 1);
  EXPECT_EQ(o.publishes.load(), 1);
  ASSERT_EQ(o.published.size(), 1u);
  int* built = o.published.begin()->second;
  for (int t = 0; t < kMissers; ++t) EXPECT_EQ(m.results[t], built) << t;
  EXPECT_GE(*built, 100);
  EXPECT_LT(*built, 100 + kMissers);
  EXPECT_EQ(o.waiters(), 0);
}

// The build fails while seven threads wait: all eight get the error, each its own copy of it,
// nothing is published, and the next miss builds again.
TEST(OncePerKeyConcurrent, AFailedBuildReachesEveryWaiter) {
  Owner o;
  const d::Key k = key_of(11, 3);
  const Misses m = miss_together(o, k, "the build of key 11 failed");
  EXPECT_TRUE(m.all_waited);
  EXPECT_EQ(o.makes.load(), 1);
  EXPECT_EQ(o.publishes.load(), 0);
  EXPECT_TRUE(o.published.empty());
  for (int t = 0; t < kMissers; ++t) {
    EXPECT_EQ(m.results[t], nullptr) << t;
    EXPECT_EQ(m.messages[t], "the build of key 11 failed") << t;
    for (int u = 0; u < t; ++u) EXPECT_FALSE(m.errors[t] == m.errors[u]) << t << " and " << u;
  }
  EXPECT_EQ(o.waiters(), 0);
  IntBuild again(o, k, 5);
  EXPECT_EQ(*get(o, k, again), 5);
  EXPECT_EQ(o.makes.load(), 2);
}

// Keys that differ in a word or in the head (options id) build at the same time, whether
// their hashes differ or not: each make() returns only once all five have started.
TEST(OncePerKeyConcurrent, DifferentKeysBuildAtTheSameTime) {
  Owner o;
  const d::Key a = key_of(20, 4), words = key_of(21, 4), options = key_of(20, 4, 9);
  const d::Key* keys[] = {&a, &words, &options, &words, &options};
  constexpr int kKeys = 5;  // the last two under a's hash
  std::atomic<int> making{0}, overlapped{0};
  std::vector<int*> results(kKeys, nullptr);
  std::vector<std::thread> threads;
  for (int t = 0; t < kKeys; ++t) {
    threads.emplace_back([&, t] {
      const d::Key& k = *keys[t];
      IntBuild b(o, k, 200 + t);
      b.during_make = [&] {
        making.fetch_add(1);
        if (wait_until([&] { return making.load() == kKeys; })) overlapped.fetch_add(1);
      };
      const uint64_t h = t < 3 ? k.hash() : a.hash();
      results[t] = static_cast<int*>(o.building.get(o.mu, IntBuild::head(k), k.w, k.n, h, b));
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlapped.load(), kKeys);
  EXPECT_EQ(o.makes.load(), kKeys);
  for (int t = 0; t < kKeys; ++t) EXPECT_EQ(*results[t], 200 + t) << t;
}

// With `shared` false (a key too long to memoise) each thread builds its own, nothing waits,
// and each gets what it built.
TEST(OncePerKeyConcurrent, UnsharedBuildsAreEachThreadsOwn) {
  Owner o;
  const d::Key k = key_of(40, 6);
  std::atomic<int> making{0}, overlapped{0}, waiting{0};
  int* results[2] = {nullptr, nullptr};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      IntBuild b(o, k, 400 + t);
      b.during_make = [&] {
        making.fetch_add(1);
        if (wait_until([&] { return making.load() == 2; })) overlapped.fetch_add(1);
        waiting.fetch_add(o.waiters());
      };
      results[t] = get(o, k, b, /*shared=*/false);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlapped.load(), 2);
  EXPECT_EQ(waiting.load(), 0);
  EXPECT_EQ(o.makes.load(), 2);
  EXPECT_EQ(o.publishes.load(), 2);
  EXPECT_EQ(*results[0], 400);
  EXPECT_EQ(*results[1], 401);
}

}  // namespace
