// The test hooks of testing.h that need no Python (the rest: jit_testing.cc). Each reads or
// sets the runtime through its internal seams (TE_INTERNAL_API in src/core/ headers).

#include "testing/testing.h"

#include <cstring>
#include <memory>
#include <mutex>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/cache_key.h"
#include "core/compiled_kernel.h"
#include "core/kernel_state.h"
#include "core/layers.h"
#include "core/pack.h"
#include "core/specialize.h"
#include "core/target.h"
#include "core/tensor_map.h"

namespace triton_embed::detail::testing {

size_t cache_size(const JitFunction& fn) {
  Cache& c = state(fn)->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.table.size();
}

int compile_waiters(const JitFunction& fn) {
  Cache& c = state(fn)->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  return c.building.waiters();
}

bool half_bits(double value, uint16_t* bits) { return double_to_half_bits(value, bits); }

namespace {

// A call's specialisation and cache key, as the launch path's general path builds them.
struct Keyed {
  ArgValue buf[kMaxArgs];
  LeafList leaves;
  Key key;
};

void build(const KernelState& k, const ArgValue* args, size_t nargs, Keyed& out) {
  const ArgValue* all = with_defaults(k, args, nargs, out.buf);
  specialize(k, all, out.leaves);
  build_key(k, out.leaves, out.key);
}

}  // namespace

Options entry_options(const JitFunction& fn, const CompiledKernel& ck) {
  Cache& c = state(fn)->cache;
  std::lock_guard<std::mutex> lock(c.mu);
  for (const auto& e : c.entries) {
    if (e->kernel.get() == &ck) return interned_options_by_id(e->options)->options;
  }
  return Options();
}

void serve_with(const JitFunction& fn, const CompiledKernel& ck, const ArgValue* args,
                size_t nargs) {
  KernelState& k = *state(fn);
  auto call = std::make_unique<Keyed>();
  build(k, args, nargs, *call);
  Cache& c = k.cache;
  std::lock_guard<std::mutex> lock(c.mu);
  const Entry* from = nullptr;
  for (const auto& e : c.entries) {
    if (e->kernel.get() == &ck) from = e.get();
  }
  TE_CHECK(from != nullptr, ValueError)
      << "serve_with: " << full_name(k) << " has no entry " << ck.signature() << " in its cache";
  call->key.target = from->target;
  call->key.options = interned_options(fn)->id;
  TE_CHECK(call->key.options == from->options, ValueError)
      << "serve_with: the handle's options are not the entry's";
  const KeyMatch m = match_key(k, call->leaves, call->key, from->key_words.data(),
                               from->key_words.size(), /*explain=*/true);
  TE_CHECK(m.verdict != KeyMatch::Verdict::kRefused, ValueError)
      << "serve_with: " << ck.signature() << " does not serve the call: " << m.why;
  auto e = std::make_unique<Entry>();
  e->target = from->target;
  e->options = from->options;
  e->hash = call->key.hash();
  e->set_key(call->key);
  e->kernel = CompiledKernelAccess::make(CompiledKernelAccess::metadata(ck), ck.target());
  e->set_launch_constants(static_cast<int>(target_warp_size(from->target)));
  e->oversized_shared_mode = from->oversized_shared_mode;
  e->triton_version = from->triton_version;
  e->tma = from->tma;
  if (m.verdict == KeyMatch::Verdict::kServes) {
    e->less_specialised = true;
    e->packs_ones = !m.ones.empty();
    e->one_leaves = m.ones;
    e->one_slots = one_slots(call->leaves, m.ones);
  }
  Entry* raw = e.get();
  c.entries.push_back(std::move(e));
  c.table.insert(raw);
}

std::vector<uint64_t> key_words(KernelState* kernel, const ArgValue* args, size_t nargs) {
  Keyed slow;
  build(*kernel, args, nargs, slow);
  return std::vector<uint64_t>(slow.key.w, slow.key.w + slow.key.n);
}

int fast_path_agrees(KernelState* kernel, const ArgValue* args, size_t nargs) {
  KernelState& k = *kernel;
  ArgValue fast_buf[kMaxArgs];
  Key fast_key;
  uint64_t fast_slots[kMaxLeaves + 2];
  uint32_t fast_n = 0;
  DescSlots fast_descs;
  const bool took = key_and_pack(k, with_defaults(k, args, nargs, fast_buf), fast_key, fast_slots,
                                 &fast_n, &fast_descs);
  Keyed slow;
  build(k, args, nargs, slow);
  uint64_t slow_slots[kMaxLeaves + 2];
  uint32_t slow_n = 0;
  DescSlots slow_descs;
  for (uint32_t i = 0; i < slow.leaves.n; ++i) {
    const Leaf& l = slow.leaves.leaves[i];
    if (l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) {
      slow_slots[slow_n++] = pack_leaf(k, l);
    } else if (l.kind == LeafKind::kTensorDesc) {  // packed after the lookup, at this place
      slow_descs.param[slow_descs.n] = static_cast<uint16_t>(l.param);
      slow_descs.at[slow_descs.n] = static_cast<uint16_t>(slow_n);
      slow_descs.desc[slow_descs.n++] = static_cast<const TensorDescriptor*>(l.value->ptr);
    }
  }
  if (!took) return -1;
  bool same_descs = fast_descs.n == slow_descs.n;
  for (uint32_t i = 0; same_descs && i < slow_descs.n; ++i) {
    same_descs = fast_descs.param[i] == slow_descs.param[i] &&
                 fast_descs.at[i] == slow_descs.at[i] && fast_descs.desc[i] == slow_descs.desc[i];
  }
  return fast_key.n == slow.key.n &&
                 std::memcmp(fast_key.w, slow.key.w, slow.key.n * sizeof(uint64_t)) == 0 &&
                 fast_n == slow_n &&
                 std::memcmp(fast_slots, slow_slots, slow_n * sizeof(uint64_t)) == 0 && same_descs
             ? 1
             : 0;
}

}  // namespace triton_embed::detail::testing
