#pragma once

// What the public jit.h keeps out of the API: a handle's state and interned options for the
// library's own layers (JitAccess: the torch layer, the JIT layer, the tools, the testing
// libraries), and the runtime's entry points those layers call across the library boundary.
// JitFunction's members are defined over them in core/jit_function.cc.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/internal_api.h"
#include "triton_embed/jit.h"

namespace triton_embed::detail {

constexpr size_t kMaxArgs = 96;

// Compiles handed to compile worker processes (core/kernel_source.h).
class PendingCompile;
using PendingCompiles = std::vector<std::shared_ptr<PendingCompile>>;

// Options interned once per distinct set: `id` goes into the cache key.
struct InternedOptions {
  uint32_t id;
  Options options;
};

// A JitFunction's private state, for the library's own code.
struct JitAccess {
  static KernelState* state(const JitFunction& f) noexcept { return f.state_; }
  static const InternedOptions* options(const JitFunction& f) noexcept { return f.options_; }
  // A handle on a state the layer loaded itself (the Python fast path's kernel objects).
  static JitFunction make(KernelState* state, const InternedOptions* options) noexcept {
    return JitFunction(state, options);
  }
};

// A grid callable's Meta, made by the library only (the launch path, the interpreter, the
// tuner's grid), and its values: every parameter's, in order (the Python fast path hands them
// to a Python grid callable).
struct MetaAccess {
  static Meta make(const KernelState* kernel, const ArgValue* args, size_t nargs) noexcept {
    return Meta(kernel, args, nargs);
  }
  static const ArgValue* args(const Meta& m) noexcept { return m.args_; }
  static size_t size(const Meta& m) noexcept { return m.nargs_; }
};

TE_INTERNAL_API const InternedOptions* intern_options(const Options& options);
TE_INTERNAL_API KernelState* load_kernel(std::string_view module, std::string_view name);

// The compile-side forms of the launch path (src/core/launch.cc, src/core/launch_call.cc): a
// positional call, and the general one (named arguments, wrapped kernels); with
// `prepare_grid`, compile_call also loads the kernel into the current context, tuning on
// that grid when needed (JitFunction::prepare).
TE_INTERNAL_API const CompiledKernel& compile(KernelState* kernel, const InternedOptions* options,
                                              const ArgValue* args, size_t nargs);
TE_INTERNAL_API const CompiledKernel& compile_call(KernelState* kernel,
                                                   const InternedOptions* options,
                                                   const CallArgs& call,
                                                   const GridSpec* prepare_grid);
TE_INTERNAL_API std::vector<const CompiledKernel*> warmup_call(KernelState* kernel,
                                                               const InternedOptions* options,
                                                               const CallArgs& call);
// The call compiled into Triton's cache (warm_entry), keeping no entry: at an autotune layer,
// every pruned config on the compile workers (after its pre_hook when the runtime applies
// it), failures left to the tuning that follows (triton-embed-bundle tune). With `pending`,
// compiles the JIT layer hands to compile worker processes are appended there and this
// returns once they are handed over; a later compile of one waits for it.
TE_INTERNAL_API void precompile_call(KernelState* kernel, const InternedOptions* options,
                                     const CallArgs& call, PendingCompiles* pending = nullptr);
// True when the JIT layer hands the kernel's compiles to compile worker processes now: a
// caller about to compile many of its calls precompiles them first (precompile_call with
// `pending`), then compiles each, from Triton's cache.
TE_INTERNAL_API bool compiles_elsewhere(const KernelState* kernel);
TE_INTERNAL_API const TuningResult* tuning_result_call(KernelState* kernel,
                                                       const InternedOptions* options,
                                                       const CallArgs& call);

// launch() or launch_call() (positional: the call has no named arguments) when the calling
// thread's current CUDA context is on device `ordinal` (the CUDA runtime's numbering); false,
// launching nothing, when it is on another device. The torch layer's launch: one context
// lookup, no question to the runtime about its current device.
TE_INTERNAL_API bool launch_if_on_device(int ordinal, KernelState* kernel,
                                         const InternedOptions* options, const GridSpec& grid,
                                         Stream stream, const CallArgs& call);

// Runs the kernel through Triton's interpreter (on the host) with the GIL held for the call.
// Arguments of kind kPyObject are passed to Python as they are (the torch layer passes CPU
// tensors so); every other value as a launch would. Meta-parameters and grid callables work
// as for launch(); options do not apply.
TE_INTERNAL_API void interpret(KernelState* kernel, const GridSpec& grid, const ArgValue* args,
                               size_t nargs);
TE_INTERNAL_API void interpret_call(KernelState* kernel, const GridSpec& grid,
                                    const CallArgs& call);

// The parameter index argument `index` of the call binds to (named arguments by name), or -1
// for a name that is not a parameter.
TE_INTERNAL_API int call_param_index(const KernelState* kernel, const CallArgs& call,
                                     uint32_t index) noexcept;
// "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK): argument #3 'n'": where argument errors
// point, in the core's format (for layers that raise their own argument errors).
TE_INTERNAL_API std::string kernel_arg_where(const KernelState* kernel, size_t index);

}  // namespace triton_embed::detail
