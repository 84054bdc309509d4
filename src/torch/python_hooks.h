#pragma once

// The seam between the torch layer's core (src/torch/launch.cc: at::Tensor launches on CUDA,
// no Python) and its Python bridge above the JIT layer (src/torch/python_bridge.cc: CPU
// tensors through Triton's interpreter, tensors handed to Python heuristics and hooks), the
// torch layer's counterpart of core/jit_hooks.h.
//
// The bridge's library (libtriton_embed_torch.so, target triton_embed::torch) registers the
// table from a static initialiser when it is loaded. A program linked to
// triton_embed::torch_runtime (or triton_embed::ops_runtime) has none: there a CPU tensor
// raises NotSupportedError, and so does a JIT slow path that would hand Python a tensor
// argument (a heuristic, a tuning run, a hook) when the JIT layer is loaded without the
// bridge (Python would see a raw pointer where Python Triton gives it a tensor).

#include <cstddef>
#include <cstdint>

#include "core/call_hooks.h"
#include "core/jit_internal.h"
#include "triton_embed/torch.h"

namespace triton_embed::detail {

// CallHooks::ctx of a torch launch: the call's tensors (TensorRef::arg is the index of the
// top-level argument).
struct TensorArgs {
  const TensorRef* tensors;
  size_t n;
  const JitFunction* fn;  // the kernel launched (for messages)
  // A launch from Python (triton_embed.jit): the PyObject* of each argument of the call, which
  // Python code of the kernel's layers sees as it is; else null.
  void* const* py_objects;
};

// What the bridge provides. Every member is set.
struct TorchPythonHooks {
  // CallHooks::py_arg of every torch launch (ctx: a TensorArgs): a new reference to the call's
  // own object (a launch from Python), else to a Python tensor sharing the tensor argument's
  // memory, or nullptr (with a Python error set when making it failed; without one for an
  // argument that is not a tensor). GIL held.
  PyArgFn tensor_arg;
  // Runs a launch whose tensors are all on the CPU through Triton's interpreter (args: the
  // call's values as the launch template filled them, nargs = call.npos + call.nnamed).
  void (*interpret_on_host)(const JitFunction& fn, const GridSpec& grid, ArgValue* args,
                            size_t nargs, const TensorRef* tensors, size_t ntensors,
                            const CallArgs& call);
};

// Where the tensors of a call are, when its caller found out while reading them (the Python
// fast path does, once per tensor): all have a Triton dtype and are on the CUDA device
// `device`, or all on the CPU (kHost); kNone: no tensor. kUnread: the launch checks each
// tensor itself, and raises what is wrong (a dtype, a device, a mix).
struct TensorPlace {
  static constexpr int32_t kNone = -1;
  static constexpr int32_t kHost = -2;
  static constexpr int32_t kUnread = -3;
  int32_t device = kNone;

  // One more tensor of the call, of Triton dtype `dtype` (invalid: none), on `d`.
  void add(DType dtype, c10::Device d) {
    int32_t here = kUnread;
    if (dtype != DType::invalid) {
      if (d.is_cuda()) {
        here = d.index();
      } else if (d.is_cpu()) {
        here = kHost;
      }
    }
    if (device == kNone) device = here;
    if (device != here) device = kUnread;
  }
};

// torch_launch for a launch from Python (triton_embed.jit, src/pyext/fast_kernel.cc):
// py_objects[i] is the PyObject* of the call's argument i, which the Python code of the
// kernel's layers sees as it is (TensorArgs::py_objects); `observer` (or null) is told what
// the autotune layers did (CallHooks::observer); `place` is where the tensors are, when the
// caller knows (else TensorPlace::kUnread).
TRITON_EMBED_TORCH_API void torch_launch_call(const JitFunction& fn, const GridSpec& grid,
                                              ArgValue* args, size_t npos, const ArgName* names,
                                              size_t nnamed, const TensorRef* tensors,
                                              size_t ntensors, void* const* py_objects,
                                              const CallObserver* observer, TensorPlace place);

// Registers the bridge (once, from its library's static initialiser; the table must live as
// long as the process). A second, different table is an internal error.
TRITON_EMBED_TORCH_API void set_torch_python_hooks(const TorchPythonHooks* hooks);

}  // namespace triton_embed::detail
