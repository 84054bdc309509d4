#include "core/once.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>

#include "base/errors.h"
#include "core/python_host.h"
#include "core/registry.h"

namespace triton_embed::detail {

struct OncePerKey::Pending {
  uint64_t head = 0, hash = 0, epoch = 0;
  std::vector<uint64_t> words;
  bool done = false;
  int waiters = 0;
  void* result = nullptr;
  std::exception_ptr error;
  std::condition_variable cv;

  bool matches(uint64_t h, const uint64_t* w, uint32_t n, uint64_t hs) const noexcept {
    return hash == hs && head == h && words.size() == n &&
           (n == 0 || std::memcmp(words.data(), w, n * sizeof(uint64_t)) == 0);
  }
};

void* OncePerKey::get(std::mutex& mu, uint64_t head, const uint64_t* words, uint32_t n,
                      uint64_t hash, Build& build, bool shared) {
  ReleaseGil no_gil;  // never wait on our mutex holding the GIL
  const uint64_t epoch = resolved_epoch();
  std::shared_ptr<Pending> mine;
  if (shared) {
    std::unique_lock<std::mutex> lock(mu);
    if (void* r = build.find()) return r;
    for (const auto& p : pending_) {
      if (p->epoch == epoch && p->matches(head, words, n, hash)) {
        std::shared_ptr<Pending> other = p;
        ++other->waiters;
        other->cv.wait(lock, [&] { return other->done; });
        --other->waiters;
        if (other->error) rethrow_copy(other->error);
        return other->result;
      }
    }
    mine = std::make_shared<Pending>();
    mine->head = head;
    mine->hash = hash;
    mine->epoch = epoch;
    mine->words.assign(words, words + n);
    pending_.push_back(mine);
  }

  std::exception_ptr error;
  try {
    build.make();
  } catch (...) {
    error = std::current_exception();
  }

  std::lock_guard<std::mutex> lock(mu);
  void* result = nullptr;
  if (!error) {
    try {
      result = build.publish(still_current(epoch));
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (mine) {
    // Every waiter wakes with the result or the error; a failure is not published, so the
    // next miss builds again.
    pending_.erase(std::remove(pending_.begin(), pending_.end(), mine), pending_.end());
    mine->result = result;
    mine->error = error;
    mine->done = true;
    mine->cv.notify_all();
  }
  if (error) rethrow_copy(error);
  return result;
}

int OncePerKey::waiters() const noexcept {
  int n = 0;
  for (const auto& p : pending_) n += p->waiters;
  return n;
}

}  // namespace triton_embed::detail
