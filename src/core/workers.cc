// The compile workers (core/workers.h): the worker count setting, and run_jobs over a pool of
// helper threads started on first use and kept for the process.

#include "core/workers.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/errors.h"
#include "core/python_host.h"
#include "core/target.h"
#include "cuda/driver.h"
#include "triton_embed/runtime.h"

namespace triton_embed::detail {

namespace {

std::atomic<size_t> g_workers{0};  // set_compile_workers's; 0: the default

// TRITON_EMBED_COMPILE_WORKERS, else the CPUs this process may run on.
size_t default_workers() {
  static const size_t n = [] {
    const char* env = std::getenv("TRITON_EMBED_COMPILE_WORKERS");
    if (env != nullptr && *env != '\0') {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(env, &end, 10);
      TE_CHECK(*end == '\0' && v >= 1 && v <= 4096 && env[0] != '-', ValueError)
          << "TRITON_EMBED_COMPILE_WORKERS='" << env
          << "': expected the number of threads that compile at once, 1 to 4096 (1: one at a "
          << "time; unset: one per CPU this process may run on)";
      return static_cast<size_t>(v);
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      const int cpus = CPU_COUNT(&set);
      if (cpus > 0) return static_cast<size_t>(cpus);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw > 0 ? static_cast<size_t>(hw) : size_t{1};
  }();
  return n;
}

// One run_jobs call: its jobs, which are claimed in order, and what they threw.
struct Batch {
  const std::function<void(size_t)>* job = nullptr;
  size_t n = 0;
  size_t next = 0;      // the next job to claim (under the pool's mutex)
  size_t finished = 0;  // jobs that returned or threw (under the pool's mutex)
  std::vector<std::exception_ptr> errors;
  uint32_t target = 0;
  CUcontext ctx = nullptr;
  std::condition_variable done;
};

struct Pool {
  std::mutex mu;
  std::condition_variable work;
  std::deque<Batch*> open;  // batches with jobs not yet claimed, oldest first
  size_t threads = 0;       // helper threads started
  size_t limit = 0;         // helpers 0 .. limit - 1 take jobs (the worker count less one)
};

// Never destroyed: its threads wait on it until the process ends. A forked child (which has
// none of the threads, and maybe a locked mutex) starts again from a new one.
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  static Pool* first = [] {
    Pool* p = new Pool();
    g_pool.store(p, std::memory_order_release);
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(new Pool(), std::memory_order_release); });
    return p;
  }();
  (void)first;
  return *g_pool.load(std::memory_order_acquire);
}

// Claims batch b's next job (the pool's mutex held): its index.
size_t claim(Pool& p, Batch& b) {
  const size_t i = b.next++;
  if (b.next == b.n) {
    for (auto it = p.open.begin(); it != p.open.end(); ++it) {
      if (*it == &b) {
        p.open.erase(it);
        break;
      }
    }
  }
  return i;
}

// Runs job i of b on this thread, with b's target and CUDA context.
void run_one(Batch& b, size_t i) {
  JobTarget target(b.target);
  const cuda::Api& api = cuda::api();
  CUcontext prev = nullptr;
  bool switched = false;
  if (b.ctx != nullptr && api.ok && api.cuCtxGetCurrent(&prev) == CUDA_SUCCESS && prev != b.ctx) {
    switched = api.cuCtxSetCurrent(b.ctx) == CUDA_SUCCESS;
  }
  try {
    (*b.job)(i);
  } catch (...) {
    b.errors[i] = std::current_exception();
  }
  if (switched) api.cuCtxSetCurrent(prev);
}

// Marks a job of b finished (the pool's mutex held).
void finished(Batch& b) {
  if (++b.finished == b.n) b.done.notify_all();
}

void helper(Pool* pp, size_t index) {
  Pool& p = *pp;
  std::unique_lock<std::mutex> lock(p.mu);
  for (;;) {
    // Helpers beyond the worker count (after set_compile_workers lowered it) stay idle.
    p.work.wait(lock, [&] { return !p.open.empty() && index < p.limit; });
    Batch& b = *p.open.front();
    const size_t i = claim(p, b);
    lock.unlock();
    run_one(b, i);
    lock.lock();
    finished(b);
  }
}

}  // namespace

size_t compile_workers() {
  const size_t set = g_workers.load(std::memory_order_relaxed);
  return set != 0 ? set : default_workers();
}

void run_jobs(size_t n, const std::function<void(size_t)>& job) {
  if (n == 0) return;
  const size_t workers = compile_workers();
  Batch b;
  b.job = &job;
  b.n = n;
  b.errors.resize(n);
  b.target = known_target_code();
  const cuda::Api& api = cuda::api();
  if (api.ok) api.cuCtxGetCurrent(&b.ctx);
  ReleaseGil no_gil;
  Pool& p = pool();
  if (workers <= 1 || n == 1) {
    for (size_t i = 0; i < n; ++i) run_one(b, i);
  } else {
    std::unique_lock<std::mutex> lock(p.mu);
    p.limit = workers - 1;
    const size_t helpers = std::min(workers, n) - 1;
    while (p.threads < helpers) {
      try {
        std::thread(helper, &p, p.threads).detach();
      } catch (...) {
        break;  // no more threads: fewer helpers (this thread runs what they do not)
      }
      ++p.threads;
    }
    p.open.push_back(&b);
    p.work.notify_all();
    // This thread runs its own batch's jobs too, so a batch finishes even when every helper
    // is busy with another (a job's own jobs, another thread's batch).
    while (b.next < b.n) {
      const size_t i = claim(p, b);
      lock.unlock();
      run_one(b, i);
      lock.lock();
      finished(b);
    }
    b.done.wait(lock, [&] { return b.finished == b.n; });
  }
  for (const std::exception_ptr& e : b.errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace triton_embed::detail

namespace triton_embed {

void set_compile_workers(size_t workers) {
  TE_CHECK(workers <= 4096, ValueError)
      << "set_compile_workers(" << workers
      << "): expected the number of threads that compile at once, 1 to 4096, or 0 for the "
      << "default (TRITON_EMBED_COMPILE_WORKERS, else one per CPU this process may run on)";
  detail::g_workers.store(workers, std::memory_order_relaxed);
}

size_t compile_workers() { return detail::compile_workers(); }

}  // namespace triton_embed
