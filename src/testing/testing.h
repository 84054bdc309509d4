#pragma once

/*! \file
 *  \brief Dry runs, hooks and counters for triton_embed's own tests and benchmarks: the
 *  triton_embed_testing libraries (src/testing/), linked by tests/ and bench/ only and never
 *  installed. The runtime's side of each seam is internal (TE_INTERNAL_API in src/core/ and
 *  src/python/ headers).
 */

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/cache.h"
#include "core/cache_key.h"
#include "core/call_hooks.h"
#include "core/jit_internal.h"
#include "core/launch.h"
#include "core/launch_call.h"
#include "core/layers.h"
#include "core/reclaim.h"
#include "core/tensor_map.h"
#include "triton_embed/jit.h"

namespace triton_embed::detail {

namespace testing {

/*! The kernel state and the interned options behind a handle (jit.h keeps them private). */
inline KernelState* state(const JitFunction& fn) noexcept { return JitAccess::state(fn); }
inline const InternedOptions* interned_options(const JitFunction& fn) noexcept {
  return JitAccess::options(fn);
}
/*! The Meta a grid callable of \p fn sees for these values (every parameter's, in order). */
inline Meta meta(const JitFunction& fn, const ArgValue* args, size_t nargs) noexcept {
  return MetaAccess::make(state(fn), args, nargs);
}
/*! The 128 bytes of the CUtensorMap cached in descriptor \p d: what its last launch encoded
 *  (the benchmark's raw launches pass it). */
inline const unsigned char* tensor_map_bytes(const TensorDescriptor& d) noexcept {
  return TensorDescriptorAccess::cache(d).map;
}

/*! A new reference (as void*) to the tuple (specialization, bound_args) Triton's binder
 *  would see for these C++ arguments (defaults filled in for those left out). Raises what a
 *  launch raises for them. The caller holds the GIL. */
void* specialization(KernelState* kernel, const ArgValue* args, size_t nargs);

template <class... Args>
void* specialization_of(const JitFunction& fn, const Args&... args) {
  ArgValue vals[kArgSlots<Args...> + 1];
  fill_args(vals, args...);
  return specialization(state(fn), vals, sizeof...(Args));
}

/*! The calling thread's capturing site and what it last captured (read through
 *  last_dry_run_kernel()), whether its dry runs walk the layers (WalkLayers), and how many
 *  dry runs the memo of whole calls resolved in this process (call_memo_hits()). */
struct DryRunSite {
  Captured captured{nullptr, nullptr, 0, Found::kHit};
  LaunchSite site;
  bool walk = false;
};
inline thread_local DryRunSite t_dry_run;
inline std::atomic<uint64_t> g_dry_run_memo_hits{0};

/*! The calling thread's capturing site, its packed values going to \p slots_out. */
inline const LaunchSite& dry_run_site(uint64_t* slots_out) {
  DryRunSite& d = t_dry_run;
  d.captured.slots = slots_out;
  d.site.capture = &d.captured;
  return d.site;
}

/*! While one is in scope, the calling thread's positional dry runs of wrapped kernels walk
 *  the layers instead of taking the memo of whole calls: their last value is passed by name
 *  (the memo serves positional calls only), which the layers bind as the same call. The
 *  layers' own answer, to compare the memo's with. */
struct WalkLayers {
  WalkLayers() { t_dry_run.walk = true; }
  ~WalkLayers() { t_dry_run.walk = false; }
  WalkLayers(const WalkLayers&) = delete;
  WalkLayers& operator=(const WalkLayers&) = delete;
};

/*! What a dry run returns for what the thread's site captured (and notes a memo hit). */
inline int dry_run_result() {
  const Captured& c = t_dry_run.captured;
  if (c.found == Found::kCallMemo) g_dry_run_memo_hits.fetch_add(1, std::memory_order_relaxed);
  const int n = static_cast<int>(c.np);
  return c.found == Found::kMiss ? -n - 1 : n;
}

/*! Dry runs: the launch path up to the driver call, for a compile-only target (an explicit
 *  target is required), which the CPU benchmark and the tests measure. The call goes to a
 *  capturing site (core/launch.h), which leaves what the launch path resolved instead of
 *  launching it: the packed kernel parameters go to \p slots_out (when not null), the
 *  compiled kernel to last_dry_run_kernel(). Returns the number of packed kernel parameters
 *  on a cache hit, -(n + 1) after a miss (which compiled). dry_run_values takes a positional
 *  call (a wrapped kernel's goes through its layers), dry_run (a template) any. */
inline int dry_run_values(KernelState* kernel, const InternedOptions* options, const ArgValue* args,
                          size_t nargs, uint64_t* slots_out) {
  const LaunchSite& site = dry_run_site(slots_out);
  if (TE_UNLIKELY(t_dry_run.walk) && nargs != 0 && !kernel->layers.empty()) {
    const std::string& last = kernel->params[nargs - 1].name;
    const ArgName name(last.data(), last.size());
    CallArgs call;
    call.vals = args;
    call.npos = static_cast<uint32_t>(nargs - 1);
    call.nnamed = 1;
    call.names = &name;
    launch_call_at(kernel, options, site, call);
  } else {
    launch_at(kernel, options, site, args, nargs);
  }
  return dry_run_result();
}

/*! A dry run of \p fn on these arguments, named arguments and wrapped kernels included. */
template <class... Args>
int dry_run(const JitFunction& fn, uint64_t* slots_out, const Args&... args) {
  CallStorage<Args...> s(args...);
  if constexpr (CallStorage<Args...>::kNamed == 0) {
    return dry_run_values(state(fn), interned_options(fn), s.vals, sizeof...(Args), slots_out);
  } else {
    launch_call_at(state(fn), interned_options(fn), dry_run_site(slots_out), s.call());
    return dry_run_result();
  }
}

/*! dry_run with \p observer on the call (CallHooks::observer: what the Python fast path passes). */
template <class... Args>
int dry_run_observed(const JitFunction& fn, const CallObserver& observer, uint64_t* slots_out,
                     const Args&... args) {
  CallStorage<Args...> s(args...);
  CallArgs call = s.call();
  CallHooks hooks;
  hooks.observer = &observer;
  call.hooks = &hooks;
  launch_call_at(state(fn), interned_options(fn), dry_run_site(slots_out), call);
  return dry_run_result();
}

/*! A positional dry run on \p grid: raises what a launch raises for it before the driver call
 *  (OverflowError, ValueError). */
template <class... Args>
int dry_run_on(const Grid& grid, const JitFunction& fn, uint64_t* slots_out, const Args&... args) {
  CallStorage<Args...> s(args...);
  static_assert(CallStorage<Args...>::kNamed == 0, "dry_run_on: positional arguments only");
  GridSpec spec;
  spec.fixed = grid;
  LaunchSite site = dry_run_site(slots_out);
  site.grid = &spec;
  launch_at(state(fn), interned_options(fn), site, s.vals, sizeof...(Args));
  return dry_run_result();
}

/*! The launch path's one-pass key and packing against the general path for these
 *  arguments: 1 when both give the same key words and packed values, 0 when they differ,
 *  -1 when the one-pass path declines the call (the general path takes it). Raises what the
 *  general path raises. */
int fast_path_agrees(KernelState* kernel, const ArgValue* args, size_t nargs);
/*! The cache key words the general path builds for these arguments (target and options
 *  aside). Raises what the general path raises. */
std::vector<uint64_t> key_words(KernelState* kernel, const ArgValue* args, size_t nargs);
template <class... Args>
std::vector<uint64_t> key_words_of(const JitFunction& fn, const Args&... args) {
  ArgValue vals[kArgSlots<Args...> + 1];
  fill_args(vals, args...);
  return key_words(state(fn), vals, sizeof...(Args));
}
/*! How many dry runs the memo of whole positional calls resolved so far. */
inline uint64_t call_memo_hits() { return g_dry_run_memo_hits.load(std::memory_order_relaxed); }
/*! While one lives, what the calling thread's dry runs, compiles and tuning results returned
 *  stays allocated even when another thread unloads bundles meanwhile (a read section,
 *  core/reclaim.h); without one, an unload on another thread may free it. */
using HoldResolved = ReadSection;

/*! The compiled kernel the calling thread's last dry run resolved (valid until an unload
 *  frees it: hold a HoldResolved across the dry run and this when another thread unloads). */
inline const CompiledKernel* last_dry_run_kernel() noexcept {
  const Entry* e = t_dry_run.captured.entry;
  return e != nullptr ? e->kernel.get() : nullptr;
}

template <class... Args>
int fast_path_agrees_for(const JitFunction& fn, const Args&... args) {
  ArgValue vals[kArgSlots<Args...> + 1];
  fill_args(vals, args...);
  return fast_path_agrees(state(fn), vals, sizeof...(Args));
}

/*! Number of Triton compiles this process has run through triton_embed. */
long compile_count();

/*! Number of configs (calls) compiled into Triton's cache before a tuning benchmarks them
 *  (the compile workers' precompiles), apart from compile_count(). */
long warm_count();

/*! What the compile worker processes did in this process (python/worker_processes.h). */
struct WorkerCounts {
  long started = 0;         //!< worker processes started
  long running = 0;         //!< alive now
  long compiled = 0;        //!< jobs a worker compiled
  long failed = 0;          //!< jobs a worker could not compile (then compiled in this process)
  std::string unavailable;  //!< why no worker starts, if none does
};
WorkerCounts worker_counts();
/*! How long an idle worker process lives (default 30 s). */
void set_worker_idle_seconds(double seconds);

/*! Number of times a wrapped kernel's layers ran Python (heuristics, tuning, pruning,
 *  config pre-hooks) in this process. */
long layer_python_calls();

/*! Number of threads waiting for another thread's compile of one of the kernel's keys. */
int compile_waiters(const JitFunction& fn);

/*! Number of entries in a kernel's cache. */
size_t cache_size(const JitFunction& fn);

/*! The options of the entry of fn's cache whose compiled kernel is \p ck (none: empty). */
Options entry_options(const JitFunction& fn, const CompiledKernel& ck);

/*! Makes the entry of fn's cache whose compiled kernel is \p ck serve the call \p args (of the
 *  same target and options) in this process, as a program without the JIT serves a call from a
 *  bundle entry compiled with fewer assumptions: published under the call's key, the call's
 *  constexpr 1s that the entry takes as runtime ints packed for it. A launch of the call then
 *  runs ck's code: a JIT process launching the very entry a runtime-only one served. ValueError
 *  when ck's entry cannot serve the call (match_key says why). */
void serve_with(const JitFunction& fn, const CompiledKernel& ck, const ArgValue* args,
                size_t nargs);
template <class... Args>
void serve_with_args(const JitFunction& fn, const CompiledKernel& ck, const Args&... args) {
  CallStorage<Args...> s(args...);
  static_assert(CallStorage<Args...>::kNamed == 0, "serve_with takes positional arguments");
  serve_with(fn, ck, s.vals, sizeof...(Args));
}

/*! fp16 bits as Triton's launcher packs a Python float; false on overflow. */
bool half_bits(double value, uint16_t* bits);

}  // namespace testing
}  // namespace triton_embed::detail
