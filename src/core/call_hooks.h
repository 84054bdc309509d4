#pragma once

// What a layer above the core attaches to a call (CallArgs::hooks, opaque in the public
// detail/call.h): the torch layer sets them for every torch launch, the Python fast path adds
// an observer; a launch from C++ has none. Read on slow paths only (heuristics and tuning
// misses, config pre-hooks the runtime applies), and on a hit of the memo of whole calls for the
// observer.

#include <cstdint>

#include "triton_embed/detail/call.h"

namespace triton_embed::detail {

// Makes a Python object (a new reference, as void*) for argument `index` of the call, or
// returns nullptr to let the library convert the ArgValue (the torch layer hands over the
// tensors themselves). Called with the GIL held.
using PyArgFn = void* (*)(const void* ctx, uint32_t index);

// Zeroes the tensor behind argument `index` of the call, in stream order before the launch
// (what a config pre-hook's `nargs[name].zero_()` does when the runtime applies the hook);
// returns false when that argument is no tensor it knows.
using ZeroArgFn = bool (*)(const void* ctx, uint32_t index);

// Told, on the launching thread before the launch, what a launch's autotune layers did that
// Triton's Autotuner.run leaves on the caller's objects: `chose`, the choice layer `layer` (an
// index into the kernel's layers) ran (the runtime's record of it, opaque here); `hooked`, the
// block shape a config's pre_hook that the runtime applies set on descriptor parameter `param`,
// as a tuple where the hook assigns one (a hook Python runs sees the caller's objects itself).
// The Python fast path sets it.
struct CallObserver {
  void (*chose)(void* ctx, uint32_t layer, const void* choice) = nullptr;
  void (*hooked)(void* ctx, uint32_t param, const int64_t* block, uint32_t rank,
                 bool tuple) = nullptr;
  void* ctx = nullptr;
};

struct CallHooks {
  PyArgFn py_arg = nullptr;
  ZeroArgFn zero_arg = nullptr;
  const void* ctx = nullptr;  // what py_arg and zero_arg are given
  const CallObserver* observer = nullptr;
};

}  // namespace triton_embed::detail
