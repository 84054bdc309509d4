// The launch path. On a cache hit: specialise, build the key, look it up, pack the
// arguments, launch. No allocation, no string formatting, no Python, no lock.

#include "core/launch.h"

#include <cstring>
#include <memory>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/bind.h"
#include "core/cache_key.h"
#include "core/compile.h"
#include "core/launch_call.h"
#include "core/module.h"
#include "core/pack.h"
#include "core/reclaim.h"
#include "core/specialize.h"
#include "core/target.h"
#include "core/tensor_map.h"
#include "cuda/driver.h"
#include "cuda/scratch.h"

namespace triton_embed {

namespace detail {

namespace {

// A call bound to its specialisation and cache key.
struct Bound {
  ArgValue buf[kMaxArgs];
  const ArgValue* args;  // one value per parameter (defaults filled in)
  LeafList leaves;
  Key key;
  uint64_t hash;
};

inline void bind(KernelState& k, const InternedOptions* options, const ArgValue* args, size_t nargs,
                 uint32_t target, Bound& b) {
  b.args = with_defaults(k, args, nargs, b.buf);
  specialize(k, b.args, b.leaves);
  build_key(k, b.leaves, b.key);
  b.key.target = target;
  b.key.options = options->id;
  b.hash = b.key.hash();
}

// A positional call of a wrapped kernel, for its layers.
inline CallArgs positional_call(const ArgValue* args, size_t nargs) {
  CallArgs call;
  call.vals = args;
  call.npos = static_cast<uint32_t>(nargs);
  return call;
}

// The cache entry of a plain call keyed and packed in one pass (into slots, *np), or nullptr
// on a miss or a call the one-pass path declines: the caller then binds it the general way.
// Host descriptors go to descs, packed once the entry is known (expand_descriptors); an entry
// that packs a constexpr 1 as a runtime value takes them the general way.
inline Entry* find_one_pass(KernelState& k, const InternedOptions* options, uint32_t target,
                            const ArgValue* args, size_t nargs, Bound& b, uint64_t* slots,
                            uint32_t* np, DescSlots& descs) {
  b.args = with_defaults(k, args, nargs, b.buf);
  if (TE_UNLIKELY(!key_and_pack_first(k, b.args, k.specs.size(), b.key, slots, np, &descs)))
    return nullptr;
  b.key.target = target;
  b.key.options = options->id;
  b.hash = b.key.hash();
  Entry* e = k.cache.table.find(b.key, b.hash);
  if (TE_UNLIKELY(e != nullptr && e->packs_ones && descs.n != 0)) return nullptr;
  return e;
}

// The cache entry for a bound call; compiles on a miss (`hit` says which happened).
inline Entry* find_or_compile(KernelState& k, const InternedOptions* options, const Bound& b,
                              bool* hit = nullptr) {
  Entry* e = k.cache.table.find(b.key, b.hash);
  if (hit != nullptr) *hit = e != nullptr;
  if (TE_UNLIKELY(e == nullptr)) e = resolve_entry(k, *options, b.key, b.hash, b.args, b.leaves);
  return e;
}

// An axis of 2^31 or more is an OverflowError, as Triton's launcher parses each axis as a C
// int; the rest of what the driver refuses (a negative axis, x * num_ctas from 2^31, y or z
// from 65536) is a ValueError raised before the driver call.
[[noreturn]] void throw_bad_grid(const KernelState& k, const Grid& g, uint32_t num_ctas) {
  constexpr int64_t kIntMax = 0x7FFFFFFF;
  TE_CHECK(g.x <= kIntMax && g.y <= kIntMax && g.z <= kIntMax, OverflowError)
      << "launching " << full_name(k) << ": grid (" << g.x << ", " << g.y << ", " << g.z
      << ") has an axis of 2^31 or more; each axis is a 32-bit int (x * num_ctas below 2^31, "
         "y and z below 65536): split the work over more axes or more work per program";
  TE_THROW(ValueError) << "launching " << full_name(k) << ": grid (" << g.x << ", " << g.y << ", "
                       << g.z << ") is out of range: each axis must be >= 0, x * num_ctas ("
                       << num_ctas << ") below 2^31 and y, z below 65536";
}

inline void check_grid(const KernelState& k, const Grid& g, uint32_t num_ctas) {
  if (TE_UNLIKELY(g.x < 0 || g.y < 0 || g.z < 0 || g.x > 0x7FFFFFFF / num_ctas || g.y > 65535 ||
                  g.z > 65535)) {
    throw_bad_grid(k, g, num_ctas);
  }
}

[[noreturn]] void throw_null_scratch(const KernelState& k, bool profile, uint64_t bytes) {
  TE_THROW(OutOfResourcesError) << "launching " << full_name(k) << ": the "
                                << (profile ? "profile" : "global")
                                << " scratch allocator returned a null address for " << bytes
                                << " bytes; an allocator that cannot allocate must throw";
}

// Scratch buffers of one launch, released (stream-ordered) when the launch is queued.
class Scratch {
 public:
  ~Scratch() {
    if (ptr_ != 0) alloc_->release(ptr_, bytes_, stream_);
  }
  uint64_t allocate(const KernelState& k, bool profile, uint64_t bytes, uint64_t align,
                    Stream stream) {
    alloc_ = cuda::scratch_allocator(profile);
    bytes_ = bytes;
    stream_ = stream;
    ptr_ = alloc_->allocate(bytes, align, stream);
    // A null address would reach the kernel and fault on the device: refuse it here.
    if (TE_UNLIKELY(ptr_ == 0)) throw_null_scratch(k, profile, bytes);
    return ptr_;
  }

 private:
  ScratchAllocator* alloc_ = nullptr;
  uint64_t ptr_ = 0, bytes_ = 0;
  Stream stream_ = nullptr;
};

// grid programs * num_ctas * per-program size, or a ValueError when it overflows.
uint64_t scratch_bytes(const KernelState& k, uint64_t programs, uint64_t size) {
  uint64_t bytes = 0;
  TE_CHECK(!__builtin_mul_overflow(programs, size, &bytes), ValueError)
      << "launching " << full_name(k) << ": " << programs << " programs need more than 2^64 "
      << "bytes of scratch memory";
  return bytes;
}

// Packs the runtime leaves into slots and points params at them (a descriptor's CUtensorMap
// goes to maps). Returns the count.
inline uint32_t pack_args(const KernelState& k, const Entry& e, const LeafList& leaves,
                          uint64_t* slots, void** params, TensorMapStorage* maps) {
  uint32_t np = 0;
  uint32_t desc = 0;
  size_t one = 0;  // the next of the entry's one_leaves
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if (l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) {
      slots[np] = pack_leaf(k, l);
      params[np] = &slots[np];
      ++np;
    } else if (TE_UNLIKELY(e.packs_ones) && one < e.one_leaves.size() && e.one_leaves[one] == i) {
      slots[np] = 1;  // a constexpr 1 the entry takes as a runtime i32
      params[np] = &slots[np];
      ++np;
      ++one;
    } else if (l.kind == LeafKind::kTensorDesc) {
      if (TE_UNLIKELY((l.value->flags & kArgHostMemory) != 0)) throw_host_memory(k, l.param);
      np += pack_descriptor(k, l.param, *static_cast<const TensorDescriptor*>(l.value->ptr),
                            e.tma[desc], e.triton_version, slots + np, params + np, &maps[desc]);
      ++desc;
    }
  }
  return np;
}

constexpr int kLaunchAttrSharedMemoryMode = 18;  // Triton 3.8 defines it where cuda.h lacks it
constexpr int kSharedMemoryModeAllowOversized = 3;

[[noreturn]] void throw_launch_error(const KernelState& k, const Entry& e, CUresult r,
                                     const Grid& g) {
  cuda::throw_error(r, "cuLaunchKernelEx",
                    "launching " + full_name(k) + " as " + e.kernel->signature() + " on grid (" +
                        std::to_string(g.x) + ", " + std::to_string(g.y) + ", " +
                        std::to_string(g.z) + ")");
}

}  // namespace

void launch_entry(KernelState* kernel, Entry* e, const cuda::ContextInfo& ctx, const GridSpec& grid,
                  Stream stream, const ArgValue* args, uint64_t* slots, void** params,
                  uint32_t np) {
  KernelState& k = *kernel;
  void* fn = e->function_for(ctx.ctx);
  if (TE_UNLIKELY(fn == nullptr)) fn = load_function(k, *e, ctx);

  const Grid g = grid.fn != nullptr
                     ? grid.fn(grid.ctx, MetaAccess::make(kernel, args, k.params.size()))
                     : grid.fixed;
  check_grid(k, g, e->num_ctas);
  if (g.x == 0 || g.y == 0 || g.z == 0) return;  // Triton launches nothing for an empty grid

  Scratch global_scratch, profile_scratch;
  // At most 2^31 * 65535 * 65535 programs: the product fits 64 bits; the byte count may not.
  const uint64_t programs = static_cast<uint64_t>(g.x) * g.y * g.z * e->num_ctas;
  slots[np] =
      e->global_scratch_size == 0
          ? 0
          : global_scratch.allocate(k, false, scratch_bytes(k, programs, e->global_scratch_size),
                                    e->global_scratch_align, stream);
  params[np] = &slots[np];
  ++np;
  slots[np] =
      e->profile_scratch_size == 0
          ? 0
          : profile_scratch.allocate(k, true, scratch_bytes(k, programs, e->profile_scratch_size),
                                     e->profile_scratch_align, stream);
  params[np] = &slots[np];
  ++np;

  CUlaunchAttribute attrs[5];
  unsigned na = 0;
  if (e->oversized_shared_mode && e->shared > 228 * 1024) {
    std::memset(&attrs[na], 0, sizeof(attrs[na]));
    attrs[na].id = static_cast<CUlaunchAttributeID>(kLaunchAttrSharedMemoryMode);
    const int mode = kSharedMemoryModeAllowOversized;
    std::memcpy(&attrs[na].value, &mode, sizeof(mode));
    ++na;
  }
  if (e->pdl) {
    std::memset(&attrs[na], 0, sizeof(attrs[na]));
    attrs[na].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attrs[na].value.programmaticStreamSerializationAllowed = 1;
    ++na;
  }
  if (e->cooperative) {
    std::memset(&attrs[na], 0, sizeof(attrs[na]));
    attrs[na].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[na].value.cooperative = 1;
    ++na;
  }
  if (e->num_ctas != 1) {
    std::memset(&attrs[na], 0, sizeof(attrs[na]));
    attrs[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[na].value.clusterDim.x = e->num_ctas;
    attrs[na].value.clusterDim.y = 1;
    attrs[na].value.clusterDim.z = 1;
    ++na;
    std::memset(&attrs[na], 0, sizeof(attrs[na]));
    attrs[na].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
    attrs[na].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    ++na;
  }

  CUlaunchConfig cfg;
  cfg.gridDimX = static_cast<unsigned>(g.x * e->num_ctas);
  cfg.gridDimY = static_cast<unsigned>(g.y);
  cfg.gridDimZ = static_cast<unsigned>(g.z);
  cfg.blockDimX = e->block_x;
  cfg.blockDimY = 1;
  cfg.blockDimZ = 1;
  cfg.sharedMemBytes = e->shared;
  cfg.hStream = reinterpret_cast<CUstream>(stream);
  cfg.attrs = attrs;
  cfg.numAttrs = na;
  // A graph being captured keeps the entry (and its modules) for as long as it lives.
  if (TE_UNLIKELY(capturing(stream))) hold_for_graph(k, *e, stream);
  const CUresult r =
      cuda::api().cuLaunchKernelEx(&cfg, static_cast<CUfunction>(fn), params, nullptr);
  if (TE_UNLIKELY(r != CUDA_SUCCESS)) throw_launch_error(k, *e, r, g);
}

// Out of line: its frame (the descriptors' maps, aligned to 64) stays off the hit's.
__attribute__((noinline)) void launch_with_descriptors(
    KernelState* kernel, Entry* e, const LaunchSite& site, const cuda::ContextInfo* ctx,
    const ArgValue* args, const DescSlots& descs, const uint64_t* values, uint32_t n, Found found) {
  uint64_t slots[kMaxPackedParams];
  void* params[kMaxPackedParams];
  TensorMapStorage maps[kMaxTensorDescs];
  const uint32_t np = expand_descriptors(*kernel, *e, descs, values, n, slots, params, maps);
  if (ctx == nullptr) {
    capture_at(site, *kernel, e, slots, np, found);
    return;
  }
  launch_entry(kernel, e, *ctx, *site.grid, site.stream, args, slots, params, np);
}

namespace {

[[noreturn]] void throw_no_target(const KernelState& k) {
  TE_THROW(ValueError) << full_name(k) << ": a call at a capturing site runs on no device, so "
                       << "it needs an explicit target: set TRITON_EMBED_TARGET (e.g. cuda:90) or "
                       << "call triton_embed::set_target()";
}

// The target of a call's keys: the explicit one, else (a launch in ctx) its device's. A
// capturing site (no ctx) needs the explicit one.
inline uint32_t site_target(const KernelState& k, const cuda::ContextInfo* ctx) {
  if (TE_LIKELY(ctx != nullptr)) return launch_target_code(ctx->arch);
  const uint32_t forced = explicit_target_code();
  if (TE_UNLIKELY(forced == 0)) throw_no_target(k);
  return forced;
}

// The general path of launch_in(): binds leaf by leaf (descriptors included, whose maps need
// room the one-pass path's frame does not carry), compiling on a miss; then the last step.
__attribute__((noinline)) void general_path(KernelState* kernel, const cuda::ContextInfo* ctx,
                                            const InternedOptions* options, uint32_t target,
                                            const LaunchSite& site, const ArgValue* args,
                                            size_t nargs) {
  KernelState& k = *kernel;
  Bound b;
  uint64_t slots[kMaxPackedParams];
  void* params[kMaxPackedParams];
  TensorMapStorage maps[kMaxTensorDescs];
  bind(k, options, args, nargs, target, b);
  bool hit = false;
  Entry* e = find_or_compile(k, options, b, &hit);
  const uint32_t np = pack_args(k, *e, b.leaves, slots, params, maps);
  if (ctx == nullptr) {
    capture_at(site, k, e, slots, np, hit ? Found::kHit : Found::kMiss);
    return;
  }
  launch_entry(kernel, e, *ctx, *site.grid, site.stream, b.args, slots, params, np);
}

// A plain (unwrapped) kernel's call at `site`: launched in the current context `ctx`, or
// (no ctx) captured for the caller. Inlined into each entry point: a hit costs no
// call of its own.
__attribute__((always_inline)) inline void launch_in(KernelState* kernel,
                                                     const cuda::ContextInfo* ctx,
                                                     const InternedOptions* options,
                                                     const LaunchSite& site, const ArgValue* args,
                                                     size_t nargs) {
  KernelState& k = *kernel;
  const uint32_t target = site_target(k, ctx);
  Bound b;
  uint64_t slots[kMaxLeaves + 2];
  uint32_t np = 0;
  DescSlots descs;
  Entry* e = find_one_pass(k, options, target, args, nargs, b, slots, &np, descs);
  if (TE_UNLIKELY(e == nullptr)) {  // a miss, or a call the one-pass path does not take
    general_path(kernel, ctx, options, target, site, args, nargs);
    return;
  }
  if (TE_UNLIKELY(descs.n != 0)) {
    launch_with_descriptors(kernel, e, site, ctx, b.args, descs, slots, np, Found::kHit);
    return;
  }
  if (TE_UNLIKELY(e->packs_ones))
    np = insert_ones(e->one_slots.data(), e->one_slots.size(), slots, np);
  if (TE_UNLIKELY(ctx == nullptr)) {
    capture_at(site, k, e, slots, np, Found::kHit);
    return;
  }
  void* params[kMaxLeaves + 2];
  for (uint32_t i = 0; i < np; ++i) params[i] = &slots[i];
  launch_entry(kernel, e, *ctx, *site.grid, site.stream, b.args, slots, params, np);
}

}  // namespace

void launch_plain(KernelState* kernel, const InternedOptions* options, const LaunchSite& site,
                  const ArgValue* args, size_t nargs) {
  launch_in(kernel, site.capture != nullptr ? nullptr : &cuda::current_context(), options, site,
            args, nargs);
}

void launch_at(KernelState* kernel, const InternedOptions* options, const LaunchSite& site,
               const ArgValue* args, size_t nargs) {
  if (TE_UNLIKELY(!kernel->layers.empty())) {
    launch_call_at(kernel, options, site, positional_call(args, nargs));  // its own section
    return;
  }
  const ReadSection reading;
  launch_in(kernel, site.capture != nullptr ? nullptr : &cuda::current_context(), options, site,
            args, nargs);
}

void launch(KernelState* kernel, const InternedOptions* options, const GridSpec& grid,
            Stream stream, const ArgValue* args, size_t nargs) {
  const LaunchSite site{&grid, stream};
  if (TE_UNLIKELY(!kernel->layers.empty())) {
    launch_call_at(kernel, options, site, positional_call(args, nargs));  // its own section
    return;
  }
  const ReadSection reading;
  launch_in(kernel, &cuda::current_context(), options, site, args, nargs);
}

bool launch_if_on_device(int ordinal, KernelState* kernel, const InternedOptions* options,
                         const GridSpec& grid, Stream stream, const CallArgs& call) {
  const cuda::ContextInfo& ctx = cuda::current_context();
  if (ctx.ordinal != ordinal) return false;
  const LaunchSite site{&grid, stream};
  if (call.nnamed == 0 && kernel->layers.empty()) {
    const ReadSection reading;
    launch_in(kernel, &ctx, options, site, call.vals, call.npos);
  } else {  // its own section
    launch_call_at(kernel, options, site, call);
  }
  return true;
}

namespace {

// The target a compile without a launch is for: the explicit one, else the current GPU's.
uint32_t compile_target(const KernelState& k) {
  const uint32_t target = current_target_code();
  if (target == 0) {
    TE_THROW(NoDeviceError) << "compiling " << full_name(k) << ": no target: no GPU is usable ("
                            << cuda::api().error
                            << ") and no explicit target is set. Set TRITON_EMBED_TARGET (e.g. "
                               "cuda:90) or call triton_embed::set_target().";
  }
  return target;
}

}  // namespace

const CompiledKernel& compile(KernelState* kernel, const InternedOptions* options,
                              const ArgValue* args, size_t nargs) {
  KernelState& k = *kernel;
  if (TE_UNLIKELY(!k.layers.empty())) {
    return compile_call(kernel, options, positional_call(args, nargs), nullptr);
  }
  const ReadSection reading;
  Bound b;
  bind(k, options, args, nargs, compile_target(k), b);
  return *find_or_compile(k, options, b)->kernel;
}

void warm(KernelState* kernel, const InternedOptions* options, const ArgValue* args, size_t nargs,
          PendingCompiles* pending) {
  const ReadSection reading;
  KernelState& k = *kernel;
  Bound b;
  bind(k, options, args, nargs, compile_target(k), b);
  warm_entry(k, *options, b.key, b.hash, b.args, b.leaves, pending);
}

const CompiledKernel& prepare_kernel(KernelState* kernel, const InternedOptions* options,
                                     const ArgValue* args, size_t nargs) {
  KernelState& k = *kernel;
  const cuda::ContextInfo& ctx = cuda::current_context();
  const ReadSection reading;
  Bound b;
  bind(k, options, args, nargs, launch_target_code(ctx.arch), b);
  Entry* e = find_or_compile(k, options, b);
  if (e->function_for(ctx.ctx) == nullptr) load_function(k, *e, ctx);
  return *e->kernel;
}

void check_site_grid(const LaunchSite& site, const KernelState& kernel, const Entry& e) {
  if (site.grid->fn == nullptr) check_grid(kernel, site.grid->fixed, e.num_ctas);
}

}  // namespace detail

// ---- Meta -------------------------------------------------------------------------------

const detail::ArgValue* Meta::find(std::string_view name) const {
  // The names' hashes are one small array; a parameter's name (in its ParamInfo, a cache
  // line or two apart from the next) is read only to confirm a hash that matched.
  const uint64_t h = detail::name_hash(name.data(), name.size());
  const auto& hashes = kernel_->name_hashes;
  for (size_t i = 0; i < hashes.size() && i < nargs_; ++i) {
    if (hashes[i] == h && kernel_->params[i].name == name) return &args_[i];
  }
  TE_THROW(LookupError) << "grid callable of " << detail::call_signature(*kernel_)
                        << ": no parameter named '" << name << "'";
}

bool Meta::contains(std::string_view name) const noexcept {
  for (const auto& p : kernel_->params) {
    if (p.name == name) return true;
  }
  return false;
}

int64_t Meta::operator[](std::string_view name) const {
  const detail::ArgValue* v = find(name);
  while (v->kind == detail::ArgKind::kConstexpr) v = v->elems;
  switch (v->kind) {
    case detail::ArgKind::kInt:
    case detail::ArgKind::kBool:
      if (!v->big) return v->i;
      break;
    case detail::ArgKind::kScalar:
      if (!dtype_is_float(v->dtype) && !v->big) return v->i;
      break;
    default:
      break;
  }
  TE_THROW(TypeError) << "grid callable of " << detail::call_signature(*kernel_) << ": parameter '"
                      << name << "' is " << detail::describe_value(*v)
                      << ", not an integer below 2^63";
}

double Meta::get_float(std::string_view name) const {
  const detail::ArgValue* v = find(name);
  while (v->kind == detail::ArgKind::kConstexpr) v = v->elems;
  switch (v->kind) {
    case detail::ArgKind::kFloat:
      return v->f;
    case detail::ArgKind::kInt:
    case detail::ArgKind::kBool:
      return v->big ? static_cast<double>(v->u) : static_cast<double>(v->i);
    case detail::ArgKind::kScalar:
      if (dtype_is_float(v->dtype)) return v->f;
      return v->big ? static_cast<double>(v->u) : static_cast<double>(v->i);
    default:
      break;
  }
  TE_THROW(TypeError) << "grid callable of " << detail::call_signature(*kernel_) << ": parameter '"
                      << name << "' is " << detail::describe_value(*v) << ", not a number";
}

}  // namespace triton_embed
