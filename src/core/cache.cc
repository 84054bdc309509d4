#include "core/cache.h"

namespace triton_embed::detail {

std::unique_ptr<EntryTable::Slots> EntryTable::make_slots(size_t capacity) {
  auto s = std::make_unique<Slots>();
  s->mask = capacity - 1;
  s->slots = std::make_unique<std::atomic<Entry*>[]>(capacity);
  for (size_t i = 0; i < capacity; ++i) s->slots[i].store(nullptr, std::memory_order_relaxed);
  return s;
}

EntryTable::EntryTable() {
  all_.push_back(make_slots(16));
  current_.store(all_.back().get(), std::memory_order_release);
}

void EntryTable::insert(Entry* e) {
  Slots* s = current_.load(std::memory_order_relaxed);
  if ((count_ + 1) * 2 > s->mask + 1) {
    // Grow into a new table; readers of the old one still find every entry it had, and the
    // old table stays allocated (until clear() retires it).
    auto bigger = make_slots((s->mask + 1) * 2);
    for (size_t i = 0; i <= s->mask; ++i) {
      Entry* old = s->slots[i].load(std::memory_order_relaxed);
      if (old == nullptr) continue;
      size_t j = old->hash & bigger->mask;
      while (bigger->slots[j].load(std::memory_order_relaxed) != nullptr)
        j = (j + 1) & bigger->mask;
      bigger->slots[j].store(old, std::memory_order_relaxed);
    }
    all_.push_back(std::move(bigger));
    s = all_.back().get();
    current_.store(s, std::memory_order_release);
  }
  size_t j = e->hash & s->mask;
  while (s->slots[j].load(std::memory_order_relaxed) != nullptr) j = (j + 1) & s->mask;
  s->slots[j].store(e, std::memory_order_release);
  ++count_;
}

void EntryTable::clear(Retired& retired) {
  std::unique_ptr<Slots> fresh = make_slots(16);
  Slots* now = fresh.get();
  retired.add_all(all_);             // reserves first: nothing changes if it throws
  all_.push_back(std::move(fresh));  // in the capacity add_all left
  current_.store(now, std::memory_order_release);
  count_ = 0;
}

}  // namespace triton_embed::detail
