#pragma once

// The state behind a JitFunction: the kernel's parameters as read from Python, its defaults
// and its compile cache. One per (module, kernel) per process, never destroyed (the registry
// owns them), so handles and cache entries can be plain pointers.

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/internal_api.h"
#include "core/cache.h"
#include "core/jit_internal.h"
#include "core/layers.h"
#include "triton_embed/arg_value.h"

namespace triton_embed::detail {

// How a parameter's annotation constrains its signature type.
enum class AnnKind : uint8_t {
  kNone,         // no annotation (or one Triton ignores): Triton's value-based rules
  kScalar,       // a scalar type: ann_dtype
  kPointer,      // a pointer type: ann_dtype element, is_const
  kUnsupported,  // an annotation Triton accepts but a host launch cannot pass (e.g. fp8 scalar)
};

// A parameter in the compact form the hot path reads.
struct ParamSpec {
  bool is_constexpr = false;
  bool specialize = true;  // !do_not_specialize
  bool align = true;       // !do_not_specialize_on_alignment
  bool is_const = false;
  AnnKind ann = AnnKind::kNone;
  DType ann_dtype = DType::invalid;
};

// The interned options with `id` (bundles record options by value, the cache key by id).
TE_INTERNAL_API const InternedOptions* interned_options_by_id(uint32_t id);

enum class WrapperKind : uint8_t { kNone, kAutotune, kHeuristics };

struct KernelState {
  // What every launch reads comes first, so that a launch touches two cache lines of it.
  std::vector<ParamSpec> specs;
  std::vector<ParamInfo> params;
  // Wrappers (@triton.heuristics / @triton.autotune), outermost first; empty for a plain
  // JITFunction. A wrapped kernel launches its `inner` state after them.
  std::vector<std::unique_ptr<Layer>> layers;
  size_t min_args = 0;                  // parameters without defaults, counted from the front
  KernelState* inner = nullptr;         // for wrapped kernels: the state of the inner JITFunction
  std::unique_ptr<CallMemo> call_memo;  // whole positional calls (wrapped kernels only)
  LayerParams layer_params;             // wrapped kernels: which parameters the layers set
  Cache cache;

  std::string module;
  std::string name;
  std::string source_hash;  // Triton's hash of the kernel's source, when known (bundles)
  std::string wrapper;      // "", "autotune", "heuristics"
  WrapperKind wrapper_kind = WrapperKind::kNone;

  std::vector<uint64_t> name_hashes;  // name_hash() of each parameter name (named arguments)
  std::vector<ArgValue> defaults;     // one per parameter; kind kNone with has_default false
  int triton_version = 0;             // the installed Triton, major * 100 + minor (306, 308, ...)

  // Storage for the strings and nested values that defaults and the values heuristics and
  // configs produced point into (strings interned once).
  std::mutex values_mu;
  std::deque<std::string> value_strings;
  std::deque<std::vector<ArgValue>> value_nested;
};

}  // namespace triton_embed::detail
