// Config pre-hooks (core/pre_hooks.h): a hook applied as an expression, or run in Python, and
// the per-thread copies of the descriptors whose block shapes it sets.

#include "core/pre_hooks.h"

#include <memory>
#include <string>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/call_hooks.h"
#include "core/kernel_source.h"
#include "core/kernel_state.h"
#include "core/tensor_map.h"

namespace triton_embed::detail {

namespace {

constexpr size_t kHookedCopies = 16;
struct HookedCopies {
  HookedCopy slots[kHookedCopies];
};
// On the heap: a shared library's thread-local storage stays a pointer.
thread_local std::unique_ptr<HookedCopies> t_hooked;

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
      const CallHooks* hooks = f.call->hooks;
      if (f.given[p] != kAbsent && ci >= 0 && hooks != nullptr && hooks->zero_arg != nullptr &&
          hooks->zero_arg(hooks->ctx, static_cast<uint32_t>(ci))) {
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

// Autotuner.run's call of choice c's pre_hook before the launch (at any site; for a hook the
// runtime applies, before a compile too: the block shapes decide the kernel).
bool apply_pre_hook(Walk& w, HookedHold& hold, KernelState& k, const TuneLayer& t, const Choice& c,
                    Frame& f) {
  const bool launches = f.mode == FrameMode::kLaunch || f.mode == FrameMode::kCompile ||
                        f.mode == FrameMode::kPrepare || f.mode == FrameMode::kPrecompile;
  if (!launches) return true;
  if (c.hook_in_cpp() && apply_hook_expression(w, hold, k, c, f)) {
    // Block shapes from the config alone: the entry the memo finds was compiled for them, and
    // a hit packs the call's own descriptors (their maps take the box from the entry). Anything
    // else the memo would skip.
    if (c.hook_fixed != nullptr && c.hook_fixed->num_zeroed == 0 && w.hook == nullptr) {
      w.hook = c.hook_fixed.get();
    } else if (!c.hook.actions.empty()) {
      w.memo_ok = false;
    }
    return true;
  }
  w.memo_ok = false;  // Python runs on every launch
  if (f.mode != FrameMode::kLaunch) return false;
  for (HookedBlock& h : run_config_pre_hook(k, t, c, f)) {
    set_hooked_block(w, hold, k, f, h.param, h.block.data(), h.block.size());
  }
  return false;
}

}  // namespace triton_embed::detail
