// Calls with named arguments and calls of wrapped kernels (@triton.heuristics,
// @triton.autotune). On a memo hit this is C++ only: bind the call into a frame, apply each
// layer from its memo, fill the defaults, launch the inner kernel as any other.

#include "core/layers.h"

#include <cstring>
#include <optional>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/compile.h"
#include "core/kernel_state.h"
#include "core/registry.h"
#include "core/source.h"
#include "core/specialize.h"
#include "core/target.h"
#include "core/tensor_map.h"
#include "cuda/driver.h"

namespace triton_embed::detail {

namespace {

// ---- binding ----------------------------------------------------------------------------

// a[0..n) == b[0..n), in a few word compares for the short strings parameter names are.
inline bool same_bytes(const char* a, const char* b, uint32_t n) noexcept {
  const auto word8 = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  const auto word4 = [](const char* p) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    return w;
  };
  if (n >= 8) {
    // 8-byte words from the front, then the last 8 bytes (overlapping the previous word).
    for (uint32_t i = 0; i + 8 < n; i += 8) {
      if (word8(a + i) != word8(b + i)) return false;
    }
    return word8(a + n - 8) == word8(b + n - 8);
  }
  if (n >= 4) return word4(a) == word4(b) && word4(a + n - 4) == word4(b + n - 4);
  for (uint32_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

int find_param(const KernelState& k, const ArgName& name) noexcept {
  const size_t np = k.params.size();
  const uint64_t* hashes = k.name_hashes.data();
  for (size_t i = 0; i < np; ++i) {
    if (hashes[i] != name.hash) continue;
    // The hash matched: confirm the bytes.
    const std::string& pn = k.params[i].name;
    if (pn.size() == name.size && same_bytes(pn.data(), name.data, name.size)) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

bool plain_positional(const KernelState& k, const CallArgs& call, ArgValue* out) noexcept {
  const size_t np = k.params.size();
  const size_t npos = call.npos;
  if (np > 64 || npos > np || (call.nnamed != 0 && npos == np)) return false;
  for (size_t i = 0; i < npos; ++i) out[i] = call.vals[i];
  uint64_t given = npos == 64 ? ~uint64_t{0} : (uint64_t{1} << npos) - 1;
  const uint64_t* hashes = k.name_hashes.data();
  // Names usually come in parameter order: each search starts after the last match and
  // wraps within the parameters not given by position (a name of one of those is an error,
  // which the general binder raises).
  size_t at = npos;
  for (uint32_t j = 0; j < call.nnamed; ++j) {
    const ArgName& name = call.names[j];
    size_t p = at;
    for (size_t left = np - npos; hashes[p] != name.hash; p = p + 1 == np ? npos : p + 1) {
      if (--left == 0) return false;
    }
    const std::string& pn = k.params[p].name;
    const uint64_t bit = uint64_t{1} << p;
    if (pn.size() != name.size || !same_bytes(pn.data(), name.data, name.size) ||
        (given & bit) != 0) {
      return false;
    }
    given |= bit;
    out[p] = call.vals[npos + j];
    at = p + 1 == np ? npos : p + 1;
  }
  for (size_t p = npos; p < np; ++p) {
    if ((given >> p & 1) != 0) continue;
    if (!k.params[p].has_default) return false;
    out[p] = k.defaults[p];
  }
  return true;
}

[[noreturn]] void throw_unknown_name(const KernelState& k, const ArgName& name) {
  const std::string n(name.view());
  static const char* const kOptions[] = {"num_warps",
                                         "num_stages",
                                         "num_ctas",
                                         "maxnreg",
                                         "debug",
                                         "launch_pdl",
                                         "launch_cooperative_grid"};
  for (const char* o : kOptions) {
    if (n == o) {
      TE_THROW(NotSupportedError) << call_signature(k) << ": got an unexpected named argument '"
                                  << n
                                  << "': it is a Triton option, not a parameter; set it with "
                                     "with_options(triton_embed::Options()."
                                  << n << "(...))";
    }
  }
  // Python's JITFunction.run raises KeyError (a LookupError) for a keyword that names neither
  // a parameter nor an option.
  TE_THROW(LookupError) << call_signature(k) << ": got an unexpected named argument '" << n
                        << "'; the parameters are the names in the signature";
}

[[noreturn]] void throw_twice(const KernelState& k, int p, bool positional) {
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for argument '"
                      << k.params[p].name << "' (#" << p
                      << "): " << (positional ? "by position and by name" : "named twice");
}

// The required parameters the frame lacks, leaving out those in `later` (a layer may still
// set them).
[[noreturn]] void throw_missing(const KernelState& k, const Frame& f, const ParamMask& later) {
  auto lacks = [&](uint32_t p) {
    return f.given[p] == kAbsent && !k.params[p].has_default && !later.has(p);
  };
  size_t n = 0;
  for (uint32_t p = 0; p < f.np; ++p) n += lacks(p);
  std::string names;
  size_t i = 0;
  for (uint32_t p = 0; p < f.np; ++p) {
    if (!lacks(p)) continue;
    if (i != 0) names += (i + 1 == n) ? " and " : ", ";
    names += "'" + k.params[p].name + "'";
    ++i;
  }
  TE_THROW(TypeError) << call_signature(k) << ": missing " << n << " required argument"
                      << (n == 1 ? "" : "s") << ": " << names;
}

// A parameter the call gives that a layer sets too, as Python refuses it: Autotuner._bench
// refuses a config's meta-parameter given by name (ValueError) before it benchmarks; the
// binder then refuses one given by position that a heuristic or config passes by name
// (TypeError). One given by name that a heuristic sets is overwritten, as in Python.
[[noreturn]] void throw_layer_conflict(const KernelState& k, uint32_t p, bool positional) {
  if (!positional) {
    TE_THROW(ValueError) << call_signature(k)
                         << ": Conflicting meta-parameters: " << k.params[p].name
                         << ". Make sure that you don't re-define auto-tuned symbols.";
  }
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for argument '"
                      << k.params[p].name << "' (#" << p << "): by position and by name from "
                      << (k.layer_params.heuristic.has(p) ? "@triton.heuristics"
                                                          : "the autotune configs")
                      << ", which set it: leave it out";
}

// The checks of a wrapped kernel's call that Python makes before a heuristic runs or a config
// is benchmarked (Autotuner._bench's conflict, then the binder's multiple and missing
// values): `given` is every parameter the call passed, `positional` those by position.
void check_against_layers(const KernelState& k, const Frame& f, const ParamMask& given,
                          const ParamMask& positional) {
  const LayerParams& lp = k.layer_params;
  uint64_t conflict[2], twice[2], missing[2];
  for (int w = 0; w < 2; ++w) {
    const uint64_t layers = lp.heuristic.w[w] | lp.config.w[w];
    conflict[w] = given.w[w] & ~positional.w[w] & lp.config.w[w];
    twice[w] = positional.w[w] & layers;
    missing[w] = lp.required.w[w] & ~given.w[w] & ~layers;
  }
  auto first = [](const uint64_t* m) {
    return m[0] != 0 ? static_cast<uint32_t>(__builtin_ctzll(m[0]))
                     : 64 + static_cast<uint32_t>(__builtin_ctzll(m[1]));
  };
  if (TE_UNLIKELY((conflict[0] | conflict[1]) != 0))
    throw_layer_conflict(k, first(conflict), false);
  if (TE_UNLIKELY((twice[0] | twice[1]) != 0)) throw_layer_conflict(k, first(twice), true);
  if (TE_UNLIKELY((missing[0] | missing[1]) != 0)) {
    ParamMask later;
    for (int w = 0; w < 2; ++w) later.w[w] = lp.heuristic.w[w] | lp.config.w[w];
    throw_missing(k, f, later);
  }
}

// ---- memo keys --------------------------------------------------------------------------

// A value's tag in the low byte of its first word. Bundles store memo keys (heuristic and
// tuning records' key words, bundle/decisions.h), so the numbers are the format's: fixed, never
// reused (dtypes in these keys are DType's numbers, pinned in bundle/enum_codes.h).
enum : uint64_t {
  kTagAbsent = 1,
  kTagNone = 2,
  kTagBool = 3,
  kTagInt = 4,
  kTagFloat = 5,
  kTagPointer = 6,
  kTagStr = 7,
  kTagDType = 8,
  kTagScalar = 9,
  kTagConstexpr = 10,
  kTagTuple = 11,
  kTagJit = 12,
};

void encode_value(const ArgValue& v, MemoKey& key) {
  switch (v.kind) {
    case ArgKind::kNone:
      key.push(kTagNone);
      return;
    case ArgKind::kBool:
      key.push(kTagBool | static_cast<uint64_t>(v.i) << 8);
      return;
    case ArgKind::kInt:
      key.push(kTagInt | static_cast<uint64_t>(v.big) << 8);
      key.push(v.u);
      return;
    case ArgKind::kFloat: {
      uint64_t bits;
      std::memcpy(&bits, &v.f, sizeof(bits));
      key.push(kTagFloat);
      key.push(bits);
      return;
    }
    case ArgKind::kPointer:
      key.push(kTagPointer);
      return;
    case ArgKind::kStr: {
      key.push(kTagStr | static_cast<uint64_t>(v.count) << 8);
      for (uint32_t i = 0; i < v.count; i += 8) {
        uint64_t w = 0;
        std::memcpy(&w, v.s + i, v.count - i < 8 ? v.count - i : 8);
        key.push(w);
      }
      return;
    }
    case ArgKind::kDType:
      key.push(kTagDType | static_cast<uint64_t>(v.dtype) << 8);
      return;
    case ArgKind::kScalar:
      key.push(kTagScalar | static_cast<uint64_t>(v.dtype) << 8 |
               static_cast<uint64_t>(v.big) << 16);
      key.push(v.u);
      return;
    case ArgKind::kConstexpr:
      key.push(kTagConstexpr);
      encode_value(*v.elems, key);
      return;
    case ArgKind::kTuple:
      key.push(kTagTuple | static_cast<uint64_t>(v.count) << 8);
      for (uint32_t i = 0; i < v.count; ++i) encode_value(v.elems[i], key);
      return;
    case ArgKind::kJitFunction:
      key.push(kTagJit);
      key.push(reinterpret_cast<uintptr_t>(v.ptr));
      return;
    case ArgKind::kPyObject:
    case ArgKind::kTensorDesc:  // Python code may read any of a descriptor's fields
      key.overflow = true;      // an arbitrary Python object: not keyed, Python decides each time
      return;
  }
}

}  // namespace

void heuristic_memo_key(const HeuristicPlan& plan, const Frame& f, MemoKey& key) {
  for (const Dep& d : plan.deps) {
    const uint32_t p = d.param;
    if (f.given[p] == kAbsent) {
      key.push(kTagAbsent);
      continue;
    }
    const ArgValue& v = f.vals[p];
    switch (d.aspect) {
      case Aspect::kValue:
        if (TE_LIKELY(v.kind == ArgKind::kInt)) {  // the common case, inline
          key.push(kTagInt | static_cast<uint64_t>(v.big) << 8);
          key.push(v.u);
        } else {
          encode_value(v, key);
        }
        break;
      case Aspect::kDType:
        key.push(v.kind == ArgKind::kPointer ? 0x100u | static_cast<uint64_t>(v.dtype) : 0);
        break;
      case Aspect::kAddress:
        key.push(v.kind == ArgKind::kPointer ? v.u : ~0ull);
        break;
    }
  }
}

namespace {

// Autotuner.run's key: the values of the key arguments that were given, then the dtype of
// every given argument that has one, in Python's order (positional, then by name). A
// one-config autotuner has no key: only the handle's options.
void tuning_key(const TuneLayer& t, const Frame& f, MemoKey& key) {
  key.push(f.options->id);
  if (t.num_configs == 1) return;
  for (int p : t.key_params) {
    if (p < 0 || f.given[p] == kAbsent) {
      key.push(kTagAbsent);
    } else if (f.vals[p].kind == ArgKind::kPointer) {
      key.overflow = true;  // a tensor in the key: Python compares the objects themselves
    } else {
      encode_value(f.vals[p], key);
    }
  }
  auto dtype_of = [&](uint32_t p) {
    if (f.vals[p].kind == ArgKind::kPointer)
      key.push(0x100u | static_cast<uint64_t>(f.vals[p].dtype));
  };
  for (uint32_t p = 0; p < f.npos; ++p) dtype_of(p);
  for (uint32_t i = 0; i < f.nkw; ++i) dtype_of(f.kw[i]);
}

// ---- layers -----------------------------------------------------------------------------

struct Walk {
  KernelState& outer;
  KernelState& inner;
  // Results.
  const CompiledKernel* compiled = nullptr;
  std::vector<const CompiledKernel*>* all = nullptr;
  const TuningResult* result = nullptr;
  bool found_tuner = false;
  bool memo_ok = true;  // no layer did what the memo of whole calls cannot repeat
  // A config pre-hook the walk applied that a memo hit need not repeat (block shapes from the
  // config alone: Choice::hook_fixed; a descriptor's map does not depend on its block shape).
  const expr::HookResult* hook = nullptr;
  // Descriptors with the block shapes config pre-hooks set, for this call's launch, where no
  // per-thread copy was free (set_hooked_block).
  std::vector<std::unique_ptr<TensorDescriptor>> hooked;
  // The tune layers' choices of a launch, (layer index, choice), for the memo of whole calls
  // (CallTail::chosen); more than kMaxChosen and no memo.
  static constexpr uint32_t kMaxChosen = 4;
  std::pair<uint32_t, const Choice*> chosen[kMaxChosen];
  uint32_t num_chosen = 0;
  // The resolutions' epoch when a walk the memo of whole calls may keep began (odd: none).
  uint64_t epoch = 1;
};

// The call's observer, when the frame is a launch whose call has one.
const CallObserver* observer_of(const Frame& f) noexcept {
  return f.mode == FrameMode::kLaunch && f.call != nullptr ? f.call->observer : nullptr;
}

// Tells `o` of hook result r's block shapes.
void tell_hooked(const CallObserver& o, const expr::HookResult& r) {
  for (uint32_t i = 0; i < r.num_blocks; ++i) {
    o.hooked(o.ctx, r.blocks[i].param, r.blocks[i].dims, r.blocks[i].rank, r.blocks[i].tuple);
  }
}

ArgValue heuristic_value(KernelState& k, Heuristic& h, const Frame& f) {
  if (const HeuristicPlan* plan = h.plan.load(std::memory_order_acquire)) {
    MemoKey key;
    heuristic_memo_key(*plan, f, key);
    if (TE_LIKELY(!key.overflow)) {
      uint64_t v[2];
      if (plan->memo.find(key, key.hash(), v)) {
        ArgValue out;
        std::memcpy(static_cast<void*>(&out), v, sizeof(out));
        return out;
      }
    }
  }
  return eval_heuristic(k, h, f);
}

// The frame's options with an option heuristic's value set: a memo hit, or the slow path.
const InternedOptions* options_with(KernelState& k, Heuristic& h, Frame& f, const ArgValue& v) {
  f.heuristic_options |= h.option_bit;
  MemoKey key;
  key.push(f.options != nullptr ? f.options->id : ~uint64_t{0});
  encode_value(v, key);
  const uint64_t hash = key.hash();
  if (TE_LIKELY(!key.overflow)) {
    uint64_t out[2];
    if (h.option_memo.find(key, hash, out)) {
      return reinterpret_cast<const InternedOptions*>(static_cast<uintptr_t>(out[0]));
    }
  }
  return heuristic_options(k, h, f.options, v, key, hash);
}

[[noreturn]] void throw_option_conflict(const KernelState& k, uint32_t bits) {
  const char* name = (bits & kOptNumWarps) != 0    ? "num_warps"
                     : (bits & kOptNumCtas) != 0   ? "num_ctas"
                     : (bits & kOptNumStages) != 0 ? "num_stages"
                                                   : "maxnreg";
  TE_THROW(TypeError) << call_signature(k) << ": got multiple values for keyword argument '" << name
                      << "': a @triton.heuristics outside the autotuner sets it, and so "
                      << "does every autotune config";
}

void apply_choice(const KernelState& k, const Choice& c, Frame& f) {
  if (TE_UNLIKELY((f.heuristic_options & kOptMaxnreg) != 0 && c.result.best.maxnreg != 0)) {
    throw_option_conflict(k, kOptMaxnreg);
  }
  for (const auto& [p, v] : c.kwargs) {
    if (TE_UNLIKELY(f.given[p] != kAbsent)) {
      TE_THROW(ValueError) << call_signature(k)
                           << ": Conflicting meta-parameters: " << k.params[p].name
                           << ". Make sure that you don't re-define auto-tuned symbols.";
    }
    f.set_keyword(p, v, -1);
  }
  f.options = c.options;
}

const Choice* find_choice(KernelState& k, TuneLayer& t, const Frame& f, bool tune_on_miss) {
  MemoKey key;
  tuning_key(t, f, key);
  const uint64_t h = key.hash();
  if (TE_LIKELY(!key.overflow)) {
    uint64_t v[2];
    if (t.memo.find(key, h, v))
      return reinterpret_cast<const Choice*>(static_cast<uintptr_t>(v[0]));
  }
  if (!tune_on_miss) return known_choice(k, t, key, h);
  return tune(k, t, f, key, h);
}

void walk(Walk& w, size_t li, Frame& f);

void finish(Walk& w, Frame& f) {
  // The inner JITFunction: defaults for what was not given, then the plain paths.
  const KernelState& k = w.outer;
  for (uint32_t p = 0; p < f.np; ++p) {
    if (f.given[p] != kAbsent) continue;
    if (TE_UNLIKELY(!k.params[p].has_default)) throw_missing(k, f, ParamMask{});
    f.vals[p] = k.defaults[p];
  }
  switch (f.mode) {
    case FrameMode::kLaunch:
      launch_plain(&w.inner, f.options, *f.site, f.vals, f.np);
      return;
    case FrameMode::kCompile:
      w.compiled = &compile(&w.inner, f.options, f.vals, f.np);
      return;
    case FrameMode::kPrepare:
      w.compiled = &prepare_kernel(&w.inner, f.options, f.vals, f.np);
      return;
    case FrameMode::kWarmup:
      w.all->push_back(&compile(&w.inner, f.options, f.vals, f.np));
      return;
    case FrameMode::kInterpret:
      interpret(&w.inner, *f.grid, f.vals, f.np);
      return;
    case FrameMode::kQuery:
      return;
  }
}

// ---- config pre-hooks ------------------------------------------------------------------
//
// Autotuner.run calls the chosen config's pre_hook before each launch. The runtime applies a
// hook it has as an expression (Choice::hook): block shapes set on descriptor arguments,
// tensor arguments zeroed. Other hooks run in Python (the JIT layer's source). Either way the
// launch takes a copy of the caller's descriptor with the new block shape: the caller's is
// taken by const reference and stays as it is.

// The copies are kept per thread in a few slots (by kernel and parameter) and reused while the
// caller's fields stay the same, so that a stream of launches re-checks and re-encodes
// nothing; a slot a launch still holds (a grid callable that launches) is not shared.
struct HookedCopy {
  bool in_use = false;
  std::optional<TensorDescriptor> desc;
};
constexpr size_t kHookedCopies = 16;
struct HookedCopies {
  HookedCopy slots[kHookedCopies];
};
// On the heap: a shared library's thread-local storage stays a pointer.
thread_local std::unique_ptr<HookedCopies> t_hooked;

// Releases the slots a walk took when it returns (after its launch).
struct HookedHold {
  HookedCopy* held[expr::kMaxHookActions];
  uint32_t n = 0;
  HookedHold() = default;
  HookedHold(const HookedHold&) = delete;
  HookedHold& operator=(const HookedHold&) = delete;
  ~HookedHold() {
    for (uint32_t i = 0; i < n; ++i) held[i]->in_use = false;
  }
};

bool same_fields(const TensorDescriptor& a, const TensorDescriptor& b, const int64_t* block) {
  const int r = b.rank();
  if (a.rank() != r || a.base() != b.base() || a.dtype() != b.dtype() ||
      a.padding() != b.padding() || a.round_f32_to_tf32() != b.round_f32_to_tf32() ||
      TensorDescriptorAccess::arg_flags(a) != TensorDescriptorAccess::arg_flags(b)) {
    return false;
  }
  for (int i = 0; i < r; ++i) {
    if (a.shape()[i] != b.shape()[i] || a.strides()[i] != b.strides()[i] ||
        a.block_shape()[i] != block[i]) {
      return false;
    }
  }
  return true;
}

TensorDescriptor with_block(const TensorDescriptor& d, const int64_t* block) {
  TensorDescriptor c(d.base(), d.dtype(), d.rank(), d.shape(), d.strides(), block, d.padding(),
                     d.round_f32_to_tf32());
  TensorDescriptorAccess::set_arg_flags(c, TensorDescriptorAccess::arg_flags(d));
  return c;
}

// A copy of descriptor d (kernel k's parameter p) with block shape `block`, from the calling
// thread's slots (held by `hold`), or null when its slot is taken.
const TensorDescriptor* hooked_copy(HookedHold& hold, const KernelState& k, uint32_t p,
                                    const TensorDescriptor& d, const int64_t* block, size_t rank) {
  TE_CHECK(rank == static_cast<size_t>(d.rank()), ValueError)
      << arg_where(k, p) << ": the autotune config's pre_hook set block_shape to " << rank
      << " dimensions; the descriptor has rank " << d.rank();
  if (TE_UNLIKELY(!t_hooked)) t_hooked = std::make_unique<HookedCopies>();
  HookedCopy& slot = t_hooked->slots[((reinterpret_cast<uintptr_t>(&k) >> 6) + p) % kHookedCopies];
  if (slot.in_use || hold.n == expr::kMaxHookActions) return nullptr;
  if (!slot.desc || !same_fields(*slot.desc, d, block)) slot.desc.emplace(with_block(d, block));
  slot.in_use = true;
  hold.held[hold.n++] = &slot;
  return &*slot.desc;
}

// Points f's parameter p (a descriptor) at a copy of it with block shape `block`.
void set_hooked_block(Walk& w, HookedHold& hold, const KernelState& k, Frame& f, uint32_t p,
                      const int64_t* block, size_t rank) {
  const auto& d = *static_cast<const TensorDescriptor*>(f.vals[p].ptr);
  const TensorDescriptor* copy = hooked_copy(hold, k, p, d, block, rank);
  if (copy == nullptr) {
    w.hooked.push_back(std::make_unique<TensorDescriptor>(with_block(d, block)));
    copy = w.hooked.back().get();
  }
  f.vals[p].ptr = copy;
}

// Applies choice c's hook as an expression; false when Python should run it instead (the JIT
// layer is there, and the expression cannot say what the hook does for this call: Python then
// does it, or raises what it raises). Without the JIT layer what the expression cannot do is
// refused: NotSupportedError, or the error Python would raise.
bool apply_hook_expression(Walk& w, HookedHold& hold, const KernelState& k, const Choice& c,
                           Frame& f) {
  std::optional<expr::HookResult> computed;
  if (c.hook_fixed == nullptr) {
    uint64_t given[2];
    f.given_mask(given);
    computed.emplace(expr::apply(c.hook, f.vals, f.np, given));
  }
  const expr::HookResult& r = c.hook_fixed != nullptr ? *c.hook_fixed : *computed;
  const bool jit = jit_linked();
  auto where = [&] {
    return full_name(k) + ": the pre_hook of autotune config " + c.result.best.str + " (" +
           c.hook.str(param_names(k)) + ")";
  };
  if (r.fault != expr::Fault::kNone) {
    if (jit) return false;
    if (r.fault == expr::Fault::kUnmodelled) {
      TE_THROW(NotSupportedError) << where() << ": " << r.what << ", which only Python gives; "
                                  << "this program links triton_embed::runtime only: link "
                                  << "triton_embed::triton_embed";
    }
    expr::raise(r.fault, where(), r.what);
  }
  for (uint32_t i = 0; i < r.num_blocks; ++i) {
    const uint16_t p = r.blocks[i].param;
    if (f.given[p] != kAbsent && f.vals[p].kind == ArgKind::kTensorDesc) continue;
    if (jit) return false;
    TE_THROW(NotSupportedError) << where() << ": sets the block_shape of " << arg_where(k, p)
                                << ", which this call passes as "
                                << (f.given[p] == kAbsent ? std::string("nothing")
                                                          : describe_value(f.vals[p]))
                                << ", not a TensorDescriptor";
  }
  if (f.device_launch()) {
    for (uint32_t i = 0; i < r.num_zeroed; ++i) {
      const uint16_t p = r.zeroed[i];
      const int16_t ci = f.call_index[p];
      const CallArgs* call = f.call;
      if (f.given[p] != kAbsent && ci >= 0 && call->zero_arg != nullptr &&
          call->zero_arg(call->ctx, static_cast<uint32_t>(ci))) {
        continue;
      }
      if (jit) return false;  // zeroing twice is what the hook does once
      TE_THROW(NotSupportedError)
          << where() << ": zeroes " << arg_where(k, p) << ", which this call passes as "
          << (f.given[p] == kAbsent ? std::string("nothing") : describe_value(f.vals[p]))
          << ": the runtime zeroes tensors it knows the size of; pass an at::Tensor "
          << "(triton_embed::torch)";
    }
  }
  for (uint32_t i = 0; i < r.num_blocks; ++i) {
    const expr::HookResult::Block& b = r.blocks[i];
    set_hooked_block(w, hold, k, f, b.param, b.dims, b.rank);
  }
  if (const CallObserver* o = observer_of(f)) tell_hooked(*o, r);
  return true;
}

}  // namespace

void finish_choice(const KernelState& k, Choice& c) {
  if (!c.hook_in_cpp() || c.hook.actions.empty()) return;
  ParamMask set;
  for (const auto& [p, v] : c.kwargs) set.set(p);
  auto from_config = [&](const expr::Program& p) {
    for (const expr::Program::Read& read : p.reads()) {
      if (!set.has(read.param)) return false;
    }
    return true;
  };
  for (const expr::HookAction& a : c.hook.actions) {
    // A guard or a dimension that reads the call's arguments (isinstance of a descriptor
    // argument included): the hook is applied per launch.
    if (!from_config(a.guard)) return;
    for (const expr::Program& d : a.dims) {
      if (!from_config(d)) return;
    }
  }
  // The frame the hook sees, as far as it reads: the config's meta-parameters.
  std::vector<ArgValue> vals(k.params.size());
  uint64_t given[2] = {0, 0};
  for (const auto& [p, v] : c.kwargs) {
    vals[p] = v;
    given[p >> 6] |= uint64_t{1} << (p & 63);
  }
  auto r = std::make_unique<expr::HookResult>(
      expr::apply(c.hook, vals.data(), static_cast<uint32_t>(vals.size()), given));
  if (r->fault == expr::Fault::kNone) c.hook_fixed = std::move(r);  // else: raised per launch
}

namespace {

// Autotuner.run's call of choice c's pre_hook before the launch (at any site; for a hook the
// runtime applies, before a compile too: the block shapes decide the kernel).
void apply_pre_hook(Walk& w, HookedHold& hold, KernelState& k, const TuneLayer& t, const Choice& c,
                    Frame& f) {
  const bool launches = f.mode == FrameMode::kLaunch || f.mode == FrameMode::kCompile ||
                        f.mode == FrameMode::kPrepare;
  if (!launches) return;
  if (c.hook_in_cpp() && apply_hook_expression(w, hold, k, c, f)) {
    // Block shapes from the config alone: the entry the memo finds was compiled for them, and
    // a hit packs the call's own descriptors (their maps take the box from the entry). Anything
    // else the memo would skip.
    if (c.hook_fixed != nullptr && c.hook_fixed->num_zeroed == 0 && w.hook == nullptr) {
      w.hook = c.hook_fixed.get();
    } else if (!c.hook.actions.empty()) {
      w.memo_ok = false;
    }
    return;
  }
  w.memo_ok = false;  // Python runs on every launch
  if (f.mode != FrameMode::kLaunch) return;
  for (HookedBlock& h : run_config_pre_hook(k, t, c, f)) {
    set_hooked_block(w, hold, k, f, h.param, h.block.data(), h.block.size());
  }
}

void walk(Walk& w, size_t li, Frame& f) {
  KernelState& k = w.outer;
  if (li == k.layers.size()) {
    finish(w, f);
    return;
  }
  Layer& layer = *k.layers[li];
  if (layer.kind == Layer::Kind::kHeuristics) {
    // Heuristics.run: kwargs[v] = heur({**dict(zip(arg_names, args)), **kwargs}), in order.
    for (auto& h : layer.heuristics) {
      const ArgValue v = heuristic_value(k, *h, f);
      if (h->option) {
        f.options = options_with(k, *h, f, v);
        continue;
      }
      f.set_keyword(h->param, v, -1);  // one given by position was refused by bind_frame
    }
    walk(w, li + 1, f);
    return;
  }
  TuneLayer& t = *layer.tune;
  w.found_tuner = true;
  // Every triton.Config passes num_warps, num_ctas and num_stages to the kernel it runs.
  constexpr uint32_t kConfigSets = kOptNumWarps | kOptNumCtas | kOptNumStages;
  if (TE_UNLIKELY((f.heuristic_options & kConfigSets) != 0)) {
    throw_option_conflict(k, f.heuristic_options & kConfigSets);
  }
  switch (f.mode) {
    case FrameMode::kWarmup:
    case FrameMode::kInterpret: {
      // Autotuner.warmup compiles every pruned config; the interpreter (for correctness, not
      // speed) runs the first one without benchmarking.
      std::vector<const Choice*> choices = pruned_choices(k, t, f);
      if (f.mode == FrameMode::kInterpret) choices.resize(1);
      for (const Choice* c : choices) {
        Frame g = f;
        apply_choice(k, *c, g);
        walk(w, li + 1, g);
      }
      return;
    }
    case FrameMode::kQuery: {
      const Choice* c = find_choice(k, t, f, false);
      w.result = c == nullptr ? nullptr : &c->result;
      return;
    }
    default:
      break;
  }
  const Choice* c = find_choice(k, t, f, true);
  for (int p : t.key_params) {
    // A tensor in the tuning key: Python compares the objects, so no key of ours holds it.
    if (p >= 0 && f.given[p] != kAbsent && f.vals[p].kind == ArgKind::kPointer) w.memo_ok = false;
  }
  if (f.mode == FrameMode::kLaunch) {
    if (w.num_chosen == Walk::kMaxChosen) w.memo_ok = false;
    if (w.memo_ok) w.chosen[w.num_chosen++] = {static_cast<uint32_t>(li), c};
    if (const CallObserver* o = observer_of(f)) o->chose(o->ctx, static_cast<uint32_t>(li), c);
  }
  apply_choice(k, *c, f);
  HookedHold hold;  // until the launch below returns
  if (c->pre_hook) apply_pre_hook(w, hold, k, t, *c, f);
  walk(w, li + 1, f);
}

KernelState& inner_of(KernelState* k) { return k->inner != nullptr ? *k->inner : *k; }

// ---- whole positional calls, memoised ----------------------------------------------------

inline bool has_bit(const uint64_t* m, uint32_t p) noexcept {
  return ((m[p >> 6] >> (p & 63)) & 1) != 0;
}

// The memo key of a positional call under `plan`, and the call's packed runtime arguments;
// false for a call the memo cannot take (the walk handles it, and raises what it raises).
inline bool call_memo_key(const KernelState& inner, const CallPlan& plan, const CallArgs& call,
                          uint32_t target, const InternedOptions* options, MemoKey& key,
                          uint64_t* slots, uint32_t* np, DescSlots& descs) {
  if (TE_UNLIKELY(call.npos > inner.specs.size())) return false;
  Key spec;
  if (!fast_key_and_pack_first(inner, call.vals, call.npos, spec, slots, np, &descs)) return false;
  key.push(plan.epoch);
  key.push(static_cast<uint64_t>(call.npos) | static_cast<uint64_t>(target) << 32);
  key.push(options != nullptr ? options->id : ~uint64_t{0});
  for (uint32_t i = 0; i < spec.n; ++i) key.push(spec.w[i]);
  for (uint32_t p = 0; p < call.npos; ++p) {
    if (!has_bit(plan.exact, p)) continue;
    const ArgValue& v = call.vals[p];
    // Pointers, None and constexprs: the specialisation words hold all of them.
    if (v.kind == ArgKind::kPointer || v.kind == ArgKind::kNone || inner.specs[p].is_constexpr) {
      continue;
    }
    if (v.kind == ArgKind::kTensorDesc) return false;  // a layer reads its fields: no key
    key.push(static_cast<uint64_t>(p) | static_cast<uint64_t>(v.kind) << 8 |
             static_cast<uint64_t>(v.dtype) << 16 | static_cast<uint64_t>(v.big) << 24);
    key.push(v.u);
  }
  return !key.overflow;
}

// The inner cache entry and packed arguments of a memoised call, or nullptr. Its descriptors
// (descs) are the call's own, to be packed with the entry's metadata.
inline Entry* find_memoised(KernelState& k, const InternedOptions* options, const CallArgs& call,
                            uint32_t target, uint64_t* slots, uint32_t* np, const CallTail** tail,
                            DescSlots& descs) {
  CallMemo& m = *k.call_memo;
  const CallPlan* plan = m.plan.load(std::memory_order_acquire);
  if (plan == nullptr || plan->epoch != m.epoch.load(std::memory_order_acquire)) return nullptr;
  MemoKey key;
  if (!call_memo_key(inner_of(&k), *plan, call, target, options, key, slots, np, descs)) {
    return nullptr;
  }
  uint64_t v[2];
  if (!m.table.find(key, key.hash(), v)) return nullptr;
  *tail = reinterpret_cast<const CallTail*>(static_cast<uintptr_t>(v[1]));
  Entry* e = reinterpret_cast<Entry*>(static_cast<uintptr_t>(v[0]));
  if (TE_UNLIKELY(e->packs_ones))
    *np = insert_ones(e->one_slots.data(), e->one_slots.size(), slots, *np);
  return e;
}

// After a walk that launched a positional call (at any site): memoises it when its layers
// read only what a key holds and the inner kernel's packed arguments are the call's own.
void remember_call(KernelState& k, const InternedOptions* options, const CallArgs& call,
                   const Frame& f, const Walk& w, uint32_t target) {
  if (!w.memo_ok || call.nnamed != 0 || target == 0 || f.options == nullptr || !k.call_memo) return;
  KernelState& inner = inner_of(&k);
  CallMemo& m = *k.call_memo;
  std::lock_guard<std::mutex> lock(m.mu);
  if (!still_current(w.epoch)) return;  // forgotten while it walked (bundles unloaded)
  CallPlan cp;
  cp.epoch = m.epoch.load(std::memory_order_acquire);
  for (const auto& layer : k.layers) {
    if (layer->kind == Layer::Kind::kHeuristics) {
      for (const auto& h : layer->heuristics) {
        const HeuristicPlan* hp = h->plan.load(std::memory_order_acquire);
        if (hp == nullptr) return;  // it runs Python every time
        for (const Dep& d : hp->deps) {
          if (d.aspect == Aspect::kAddress) return;  // an address: every call differs
          if (d.aspect == Aspect::kValue && d.param < call.npos) {
            cp.exact[d.param >> 6] |= uint64_t{1} << (d.param & 63);
          }
        }
      }
    } else {
      for (int p : layer->tune->key_params) {
        if (p >= 0 && static_cast<uint32_t>(p) < call.npos) {
          cp.exact[p >> 6] |= uint64_t{1} << (p & 63);
        }
      }
    }
  }
  MemoKey key;
  uint64_t slots[kMaxLeaves + 2];
  uint32_t np = 0;
  DescSlots descs;
  if (!call_memo_key(inner, cp, call, target, options, key, slots, &np, descs)) return;
  // The entry the walk used, and the inner kernel's packed arguments: the call's own, its
  // descriptors the call's or copies with the block shapes the pre-hook set (a hit packs the
  // call's own: a map takes its box from the entry, so the same)?
  Key ik;
  uint64_t islots[kMaxLeaves + 2];
  uint32_t inp = 0;
  DescSlots idescs;
  if (!fast_key_and_pack(inner, f.vals, ik, islots, &inp, &idescs)) return;
  if (inp != np || std::memcmp(islots, slots, np * sizeof(uint64_t)) != 0) return;
  if (idescs.n != descs.n) return;
  for (uint32_t i = 0; i < descs.n; ++i) {
    if (idescs.param[i] != descs.param[i] || idescs.at[i] != descs.at[i]) return;
    if (idescs.desc[i] == descs.desc[i]) continue;
    bool hooked = false;
    for (uint32_t b = 0; w.hook != nullptr && b < w.hook->num_blocks; ++b) {
      hooked = hooked || w.hook->blocks[b].param == descs.param[i];
    }
    if (!hooked) return;
  }
  ik.target = target;
  ik.options = f.options->id;
  Entry* e = inner.cache.table.find(ik, ik.hash());
  if (e == nullptr || (e->packs_ones && descs.n != 0)) return;
  // The values after the given ones (for a grid callable's Meta), interned.
  const CallTail* tail = nullptr;
  const std::vector<std::pair<uint32_t, const Choice*>> chosen(w.chosen, w.chosen + w.num_chosen);
  for (const auto& t : m.tails) {
    if (t->vals.size() == f.np - call.npos &&
        std::memcmp(static_cast<const void*>(t->vals.data()), f.vals + call.npos,
                    t->vals.size() * sizeof(ArgValue)) == 0 &&
        t->chosen == chosen && t->hook == w.hook) {
      tail = t.get();
      break;
    }
  }
  if (tail == nullptr) {
    auto fresh = std::make_unique<CallTail>();
    fresh->vals.assign(f.vals + call.npos, f.vals + f.np);
    fresh->chosen = chosen;
    fresh->hook = w.hook;
    tail = fresh.get();
    m.tails.push_back(std::move(fresh));
  }
  const CallPlan* current = m.plan.load(std::memory_order_relaxed);
  if (current == nullptr || current->epoch != cp.epoch || current->exact[0] != cp.exact[0] ||
      current->exact[1] != cp.exact[1]) {
    m.plans.push_back(std::make_unique<CallPlan>(cp));
    m.plan.store(m.plans.back().get(), std::memory_order_release);
  }
  const uint64_t v[2] = {reinterpret_cast<uintptr_t>(e), reinterpret_cast<uintptr_t>(tail)};
  m.table.insert(key, key.hash(), v);
}

// What a hit of the memo of whole calls tells the call's observer: what the walk told it.
void tell_memoised(const CallObserver& o, const CallTail& tail) {
  for (const auto& [layer, choice] : tail.chosen) o.chose(o.ctx, layer, choice);
  if (tail.hook != nullptr) tell_hooked(o, *tail.hook);
}

void start(KernelState* kernel, const InternedOptions* options, const CallArgs& call,
           FrameMode mode, const GridSpec* grid, Walk& w, const LaunchSite* site = nullptr,
           uint32_t target = 0) {
  Frame f;
  f.options = options;
  f.mode = mode;
  f.site = site;
  f.grid = site != nullptr ? site->grid : grid;
  f.stream = site != nullptr ? site->stream : nullptr;
  bind_frame(*kernel, call, f);
  const bool memo = target != 0 && call.nnamed == 0;
  if (memo) w.epoch = resolved_epoch();
  walk(w, 0, f);
  if (memo) remember_call(*kernel, options, call, f, w, target);
}

}  // namespace

namespace {

// Whether another process can rebuild `v` from its bytes (no Python object, no address of
// this process's).
bool replayable(const ArgValue& v) noexcept {
  switch (v.kind) {
    case ArgKind::kJitFunction:
    case ArgKind::kPyObject:
    case ArgKind::kTensorDesc:
      return false;
    case ArgKind::kConstexpr:
      return replayable(*v.elems);
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) {
        if (!replayable(v.elems[i])) return false;
      }
      return true;
    default:
      return true;
  }
}

}  // namespace

void note_heuristic(Heuristic& h, const Frame& f, const ArgValue& value) {
  if (!replayable(value)) return;
  std::lock_guard<std::mutex> lock(h.mu);
  const HeuristicPlan* plan = h.plan.load(std::memory_order_acquire);
  if (plan == nullptr) return;  // not memoised: Python decides every call
  for (const Dep& d : plan->deps) {
    if (d.aspect == Aspect::kAddress) return;
    if (d.aspect == Aspect::kValue && f.given[d.param] != kAbsent && !replayable(f.vals[d.param])) {
      return;
    }
  }
  MemoKey key;
  heuristic_memo_key(*plan, f, key);
  if (key.overflow) return;
  if (h.recorded_plan != plan) {
    h.recorded.clear();
    h.recorded_plan = plan;
  }
  if (h.recorded.size() >= kMaxDecisions) return;
  h.recorded.emplace(std::vector<uint64_t>(key.w, key.w + key.n), value);
}

void note_choice(TuneLayer& t, const Frame& f, const MemoKey& key, uint32_t target,
                 const Choice* choice, uint64_t epoch) {
  if (target == 0 || key.overflow || choice == nullptr) return;
  for (int p : t.key_params) {
    if (p >= 0 && f.given[p] != kAbsent && !replayable(f.vals[p])) return;
  }
  std::vector<uint64_t> words;
  words.reserve(key.n + 1);
  words.push_back(target);
  words.insert(words.end(), key.w, key.w + key.n);
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.recorded.size() >= kMaxDecisions || !still_current(epoch)) return;
  t.recorded.emplace(std::move(words), choice);
}

const InternedOptions* heuristic_options(KernelState& k, Heuristic& h, const InternedOptions* base,
                                         const ArgValue& value, const MemoKey& key, uint64_t hash) {
  const ArgValue* v = &value;
  while (v->kind == ArgKind::kConstexpr) v = v->elems;
  Options opts;
  if (base != nullptr) {
    for (const auto& [n, o] : base->options.entries()) {
      if (n != h.name) opts.set(n, o);
    }
  }
  if (v->kind == ArgKind::kBool) {
    opts.set(h.name, v->i != 0);
  } else if (v->kind == ArgKind::kInt && !v->big) {
    opts.set(h.name, v->i);
  } else if (v->kind == ArgKind::kFloat) {
    opts.set(h.name, v->f);
  } else if (v->kind == ArgKind::kStr) {
    opts.set(h.name, std::string_view(v->s, v->count));
  } else if (v->kind != ArgKind::kNone) {  // None: Triton drops the option, its default applies
    TE_THROW(TypeError) << full_name(k) << ": heuristic '" << h.name << "' returned "
                        << describe_value(*v) << ", but '" << h.name
                        << "' is a Triton option: return a bool, int, float, str or None";
  }
  const InternedOptions* out = intern_options(opts);
  if (!key.overflow) {
    const uint64_t stored[2] = {reinterpret_cast<uintptr_t>(out), 0};
    std::lock_guard<std::mutex> lock(h.mu);
    h.option_memo.insert(key, hash, stored);
  }
  return out;
}

void bind_frame(const KernelState& k, const CallArgs& call, Frame& f) {
  const uint32_t np = static_cast<uint32_t>(k.params.size());
  f.np = np;
  f.npos = call.npos;
  f.nkw = 0;
  f.call = &call;
  if (TE_UNLIKELY(call.npos > np)) throw_arg_count(k, call.npos);
  std::memset(f.given, kAbsent, np);
  for (uint32_t i = 0; i < call.npos; ++i) {
    f.vals[i] = call.vals[i];
    f.given[i] = kPositional;
    f.call_index[i] = static_cast<int16_t>(i);
  }
  ParamMask positional;
  for (uint32_t w = 0; w < 2; ++w) {
    const uint32_t n = call.npos > 64 * w ? call.npos - 64 * w : 0;
    positional.w[w] = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  }
  ParamMask given = positional;
  for (uint32_t j = 0; j < call.nnamed; ++j) {
    const int p = find_param(k, call.names[j]);
    if (TE_UNLIKELY(p < 0)) throw_unknown_name(k, call.names[j]);
    if (TE_UNLIKELY(f.given[p] != kAbsent)) throw_twice(k, p, f.given[p] == kPositional);
    f.set_keyword(static_cast<uint32_t>(p), call.vals[call.npos + j],
                  static_cast<int16_t>(call.npos + j));
    given.set(static_cast<uint32_t>(p));
  }
  if (!k.layers.empty()) check_against_layers(k, f, given, positional);
}

void index_layer_params(KernelState& k) {
  LayerParams lp;
  for (uint32_t p = 0; p < k.params.size(); ++p) {
    if (!k.params[p].has_default) lp.required.set(p);
  }
  for (const auto& layer : k.layers) {
    if (layer->kind == Layer::Kind::kHeuristics) {
      for (const auto& h : layer->heuristics) {
        if (!h->option) lp.heuristic.set(h->param);
      }
    } else {
      for (uint32_t p : layer->tune->config_params) lp.config.set(p);
    }
  }
  k.layer_params = lp;
}

int call_param_index(const KernelState* kernel, const CallArgs& call, uint32_t index) noexcept {
  if (index < call.npos) return static_cast<int>(index);
  if (index - call.npos >= call.nnamed) return -1;
  return find_param(*kernel, call.names[index - call.npos]);
}

void launch_call_at(KernelState* kernel, const InternedOptions* options, const LaunchSite& site,
                    const CallArgs& call) {
  if (kernel->layers.empty()) {
    // A plain kernel's named call: its positional equivalent, launched the plain way.
    ArgValue vals[kMaxArgs];
    if (TE_LIKELY(plain_positional(*kernel, call, vals))) {
      launch_plain(kernel, options, site, vals, kernel->params.size());
      return;
    }
  }
  // The memo of whole calls: at a launch site (with a driver) for the current context's
  // target; at a capturing site for the explicit one (none: the walk raises).
  uint32_t target = 0;
  const cuda::ContextInfo* ctx = nullptr;
  if (call.nnamed == 0 && kernel->call_memo) {
    if (site.capture != nullptr) {
      target = explicit_target_code();
    } else if (cuda::api().ok) {
      ctx = &cuda::current_context();
      target = launch_target_code(ctx->arch);
    }
  }
  if (target != 0) {
    uint64_t slots[kMaxLeaves + 2];
    uint32_t np = 0;
    const CallTail* tail = nullptr;
    DescSlots descs;
    if (Entry* e = find_memoised(*kernel, options, call, target, slots, &np, &tail, descs)) {
      if (TE_UNLIKELY(call.observer != nullptr)) tell_memoised(*call.observer, *tail);
      KernelState& inner = inner_of(kernel);
      ArgValue all[kMaxArgs];
      const ArgValue* meta_args = nullptr;
      if (ctx != nullptr && site.grid->fn != nullptr) {
        std::memcpy(static_cast<void*>(all), call.vals, call.npos * sizeof(ArgValue));
        std::memcpy(static_cast<void*>(all + call.npos), tail->vals.data(),
                    tail->vals.size() * sizeof(ArgValue));
        meta_args = all;
      }
      if (TE_UNLIKELY(descs.n != 0)) {
        launch_with_descriptors(&inner, e, site, ctx, meta_args, descs, slots, np,
                                Found::kCallMemo);
        return;
      }
      if (ctx == nullptr) {
        capture_at(site, inner, e, slots, np, Found::kCallMemo);
        return;
      }
      void* params[kMaxLeaves + 2];
      for (uint32_t i = 0; i < np; ++i) params[i] = &slots[i];
      launch_entry(&inner, e, *ctx, *site.grid, site.stream, meta_args, slots, params, np);
      return;
    }
  }
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, FrameMode::kLaunch, nullptr, w, &site, target);
}

void launch_call(KernelState* kernel, const InternedOptions* options, const GridSpec& grid,
                 Stream stream, const CallArgs& call) {
  launch_call_at(kernel, options, LaunchSite{&grid, stream}, call);
}

const CompiledKernel& compile_call(KernelState* kernel, const InternedOptions* options,
                                   const CallArgs& call, const GridSpec* prepare_grid) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, prepare_grid != nullptr ? FrameMode::kPrepare : FrameMode::kCompile,
        prepare_grid, w);
  return *w.compiled;
}

std::vector<const CompiledKernel*> warmup_call(KernelState* kernel, const InternedOptions* options,
                                               const CallArgs& call) {
  std::vector<const CompiledKernel*> all;
  Walk w{*kernel, inner_of(kernel)};
  w.all = &all;
  start(kernel, options, call, FrameMode::kWarmup, nullptr, w);
  return all;
}

const TuningResult* tuning_result_call(KernelState* kernel, const InternedOptions* options,
                                       const CallArgs& call) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, options, call, FrameMode::kQuery, nullptr, w);
  TE_CHECK(w.found_tuner, ValueError)
      << full_name(*kernel) << " is not wrapped in @triton.autotune; it has no tuning result";
  return w.result;
}

void interpret_call(KernelState* kernel, const GridSpec& grid, const CallArgs& call) {
  Walk w{*kernel, inner_of(kernel)};
  start(kernel, nullptr, call, FrameMode::kInterpret, &grid, w);
}

}  // namespace triton_embed::detail
