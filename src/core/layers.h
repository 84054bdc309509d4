#pragma once

// Kernels wrapped in @triton.heuristics and @triton.autotune: the wrappers as layers over the
// inner JITFunction, applied outermost first as Triton's run() methods nest.
//
// A call is bound into a Frame (the arguments given so far, by parameter, and which were
// given by name, in order, as Python's kwargs). A heuristics layer sets its meta-parameters
// from a memo keyed on exactly what each heuristic read when Python last ran it; an autotune
// layer looks the tuning key up in a memo of the configurations tuned so far. Only misses
// run Python (src/python/layers.cc). The inner kernel then launches as any other.
//
// This file holds their types. The code: binding a call (core/bind.h), the memo keys
// (core/memo_keys.h), the walk through the layers (core/walk.h), config pre-hooks
// (core/pre_hooks.h), and the entry points with the memo of whole calls (core/launch_call.h).

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "base/errors.h"
#include "base/internal_api.h"
#include "core/jit_internal.h"
#include "core/launch.h"
#include "core/memo.h"
#include "core/once.h"
#include "expr/eval.h"
#include "triton_embed/arg_value.h"
#include "triton_embed/autotune.h"
#include "triton_embed/detail/call.h"
#include "triton_embed/grid.h"

namespace triton_embed::detail {

struct KernelState;

// What a heuristic read of an argument (the memo key holds exactly these).
enum class Aspect : uint8_t {
  kValue = 0,    // the key's presence and the whole value (pointers: present, and a pointer)
  kDType = 1,    // a pointer's element type
  kAddress = 2,  // a pointer's address
};

struct Dep {
  uint32_t param;
  Aspect aspect;
  bool operator==(const Dep& o) const noexcept { return param == o.param && aspect == o.aspect; }
};

// The dependencies a heuristic has shown so far and the memo keyed on them. Immutable once
// published, except for the memo; replaced when a call reads something new (the old plan is
// kept until an unload retires it, core/reclaim.h).
struct HeuristicPlan {
  std::vector<Dep> deps;
  MemoTable memo;
};

struct Heuristic {
  uint32_t param = 0;  // the meta-parameter it sets (when !option)
  std::string name;
  // It sets a Triton option (num_warps, ...), not a parameter: Python passes it on as a
  // keyword the JITFunction reads as an option. The frame's options become the base options
  // with this one set (None: left out), memoised by (base options id, value).
  bool option = false;
  uint32_t option_bit = 0;  // kOpt* of the option it sets
  MemoTable option_memo{64};
  std::atomic<HeuristicPlan*> plan{nullptr};  // nullptr until it ran once, or when not memoisable
  std::mutex mu;                              // guards plans and memo inserts
  std::vector<std::unique_ptr<HeuristicPlan>> plans;
  bool never_memo = false;  // it read something no key can hold (a whole tensor, every argument)
  // What it returned for keys another process can rebuild (no address, no Python object),
  // under `recorded_plan` (the current plan: a new plan's keys differ, so the map restarts):
  // what a kernel bundle records (src/bundle/decisions.cc). Guarded by mu; at most
  // kMaxDecisions keys.
  const HeuristicPlan* recorded_plan = nullptr;
  std::map<std::vector<uint64_t>, ArgValue> recorded;
  // The heuristic as an expression the runtime evaluates (expr/eval.h), translated by the JIT
  // layer and kept in bundles: a program with no Python computes it for arguments no record
  // holds. Empty when the function is outside the forms the runtime evaluates; then
  // `expr_why` names what stopped it.
  expr::Program expr;
  std::string expr_why;
};

// The most heuristic results or tuning decisions a layer keeps for recording into a bundle.
constexpr size_t kMaxDecisions = 1 << 14;

// A tuned configuration, ready to apply.
struct Choice {
  std::vector<std::pair<uint32_t, ArgValue>> kwargs;  // meta-parameters it sets
  const InternedOptions* options = nullptr;           // the handle's options plus the config's
  // The config has a pre_hook (Autotuner.run calls it before each launch). `hook` is it as
  // the runtime applies it (expr/eval.h), translated by the JIT layer and kept in bundles;
  // when the hook is outside the forms the runtime applies, `hook_why` names what stopped the
  // translation and the hook runs in Python (a program without the JIT refuses it).
  bool pre_hook = false;
  expr::Hook hook;
  std::string hook_why;
  bool hook_in_cpp() const noexcept { return pre_hook && hook_why.empty(); }
  // What `hook` does when it reads only the meta-parameters this config sets (the usual
  // hook: block shapes from the config's tile): computed once, when the runtime publishes the
  // choice (finish_choice), instead of on every launch.
  std::unique_ptr<expr::HookResult> hook_fixed;
  TuningResult result;
  // Tuned for another key: a bundle's tuning rule chose it for this one (not recorded into
  // bundles: its key is not the one it was tuned for).
  bool by_rule = false;
  // The JIT layer keeps the triton.Config it was made from, keyed by its address
  // (python/handles.h): an unload keeps the choice (set before it is published).
  bool python_config = false;
};

struct TuneLayer {
  std::vector<int> key_params;  // Autotuner.keys as parameter indices (-1: not a parameter)
  size_t num_configs = 0;
  // The parameters some config sets (its meta-parameters that are parameters), ascending: a
  // call may leave them out, and passing one is Triton's conflict (bind_frame checks both).
  std::vector<uint32_t> config_params;
  // str() of every config, one per line: a bundle's choices serve the JIT layer only for the
  // very configs they were tuned from.
  std::string configs;
  MemoTable memo{1024};  // tuning key -> Choice*
  std::mutex mu;         // guards choices, tuning, memo inserts and what follows
  std::vector<std::unique_ptr<Choice>> choices;
  OncePerKey tuning;  // keys being tuned
  // Choices for pruned configs (warmup, interpreter), by (the source's config id, options id).
  std::vector<std::tuple<uint64_t, uint32_t, std::unique_ptr<Choice>>> config_choices;
  // The decisions a bundle records (src/bundle/decisions.cc): {target the choice was tuned
  // for, then the tuning key (whose first word is the base options' id)} -> the choice.
  // Keys another process cannot rebuild (a @triton.jit function in the key) are left out.
  // Guarded by mu; at most kMaxDecisions keys.
  std::map<std::vector<uint64_t>, const Choice*> recorded;
};

struct Layer {
  enum class Kind : uint8_t { kHeuristics, kAutotune } kind = Kind::kHeuristics;
  std::vector<std::unique_ptr<Heuristic>> heuristics;
  std::unique_ptr<TuneLayer> tune;
};

// A set of parameters, bit p for parameter p (kMaxArgs <= 128).
struct ParamMask {
  uint64_t w[2] = {0, 0};
  void set(uint32_t p) noexcept { w[p >> 6] |= uint64_t{1} << (p & 63); }
  bool has(uint32_t p) const noexcept { return ((w[p >> 6] >> (p & 63)) & 1) != 0; }
};

// What the layers of a wrapped kernel do with its parameters, for the checks of a call that
// need no layer to run (bind_frame): Python's binder raises those before a heuristic runs or
// a config is benchmarked, and so must the JIT and a runtime-only program before any
// heuristic, tuning or bundle decision.
struct LayerParams {
  ParamMask required;   // no default
  ParamMask heuristic;  // a @triton.heuristics sets it (as a keyword)
  ParamMask config;     // some @triton.autotune config sets it (as a keyword)
};

// What a call through the layers is for.
enum class FrameMode : uint8_t {
  kLaunch,
  kCompile,
  kPrepare,
  kWarmup,
  kPrecompile,  // a tuning's configs compiled into Triton's cache, nothing kept (warm_entry)
  kInterpret,
  kQuery,
};

// The options a triton.Config always passes (all_kwargs), as bits of Frame::heuristic_options.
constexpr uint32_t kOptNumWarps = 1, kOptNumStages = 2, kOptNumCtas = 4, kOptMaxnreg = 8,
                   kOptOther = 16;

// Given-state of a parameter in a Frame.
constexpr uint8_t kAbsent = 0, kPositional = 1, kKeyword = 2;

// The arguments of a call as they pass through the layers.
struct Frame {
  ArgValue vals[kMaxArgs];
  uint8_t given[kMaxArgs];
  int16_t call_index[kMaxArgs];  // index in the call, or -1 when a layer set it
  uint8_t kw[kMaxArgs];          // parameters given by name, in order (Python's kwargs)
  uint32_t nkw = 0;
  uint32_t npos = 0;
  uint32_t np = 0;
  const InternedOptions* options = nullptr;
  const CallArgs* call = nullptr;
  FrameMode mode = FrameMode::kLaunch;
  const LaunchSite* site = nullptr;  // kLaunch: where the call goes
  const GridSpec* grid = nullptr;    // kLaunch: the site's (none for a capturing site)
  Stream stream = nullptr;
  uint32_t heuristic_options = 0;  // kOpt* bits: options an outer heuristic set

  // A launch in the current context (not a capturing site): what the device sees happens.
  bool device_launch() const noexcept {
    return mode == FrameMode::kLaunch && site->capture == nullptr;
  }

  // The parameters given (by the call, a layer or a config; not defaults), bit p of word
  // p / 64: the keys of the dict Python hands a heuristic or a hook (expr::evaluate's `given`).
  void given_mask(uint64_t out[2]) const noexcept {
    out[0] = out[1] = 0;
    for (uint32_t p = 0; p < np; ++p) {
      if (given[p] != kAbsent) out[p >> 6] |= uint64_t{1} << (p & 63);
    }
  }

  void set_keyword(uint32_t p, const ArgValue& v, int16_t from_call) noexcept {
    if (given[p] != kKeyword) kw[nkw++] = static_cast<uint8_t>(p);
    given[p] = kKeyword;
    vals[p] = v;
    call_index[p] = from_call;
  }
};

// ---- whole positional calls, memoised -------------------------------------------------
//
// A positional call of a wrapped kernel whose layers read only what a key can hold resolves,
// once its heuristics ran and its config was tuned, to the same inner cache entry for every
// call that agrees with it on (a) what the inner kernel's specialisation sees of the given
// arguments and (b) the exact values of the parameters a layer reads. When the layers set
// only constexpr parameters and the call gives every runtime one, the inner kernel's packed
// arguments are the call's own: a hit is one key, one lookup and the launch, as a plain
// kernel's. Filled on the slow path (the first such call); Python never runs on a hit.

// Which parameters' exact values the layers read, as of the heuristics' plans of `epoch`.
struct CallPlan {
  uint64_t epoch = 0;
  uint64_t exact[2] = {0, 0};  // bit p: parameter p (kMaxArgs <= 128)
};

// What the layers add to a resolved call: the values of the parameters after the given ones
// (set by a layer, or defaults), for a grid callable's Meta; and what a hit tells a call's
// CallObserver as the walk did: each tune layer's choice, and the block shapes of the
// choice's pre_hook (Choice::hook_fixed). Interned; retired by an unload (core/reclaim.h).
struct CallTail {
  std::vector<ArgValue> vals;
  std::vector<std::pair<uint32_t, const Choice*>> chosen;  // (layer index, choice)
  const expr::HookResult* hook = nullptr;
};

struct CallMemo {
  std::atomic<uint64_t> epoch{1};              // bumped when a heuristic's plan changes
  std::atomic<const CallPlan*> plan{nullptr};  // the plan of the current epoch, or older
  MemoTable table{256};                        // key -> (inner Entry*, CallTail*)
  std::mutex mu;                               // guards inserts and what follows
  std::vector<std::unique_ptr<CallPlan>>
      plans;  // every plan since the last unload (readers may hold one)
  std::vector<std::unique_ptr<CallTail>> tails;
};

// ---- slow paths ------------------------------------------------------------------------
//
// The misses of the layers' memos ask the kernel sources: eval_heuristic, tune,
// pruned_choices and run_config_pre_hook (core/kernel_source.h, src/core/kernel_source.cc).

// A descriptor argument whose block shape a config's pre_hook set (Python's pre-hooks assign
// nargs["desc"].block_shape, as Triton's persistent matmul tutorial does).
struct HookedBlock {
  uint32_t param = 0;
  std::vector<int64_t> block;
};

// A heuristic's plan changed: calls memoised under the old one no longer match.
inline void invalidate_call_memo(CallMemo* m) noexcept {
  if (m != nullptr) m->epoch.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace triton_embed::detail
