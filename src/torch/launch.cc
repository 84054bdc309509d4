// The torch layer's launch (its core: the runtime and libtorch, no Python): the device comes
// from the tensor arguments, the stream is torch's current stream for it. CPU tensors go
// through Triton's interpreter, which the Python bridge provides (torch/python_hooks.h).

#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <string>
#include <string_view>

#include "base/errors.h"
#include "core/call_hooks.h"
#include "torch/python_hooks.h"
#include "triton_embed/torch.h"

namespace triton_embed::detail {

namespace {

std::atomic<const TorchPythonHooks*> g_python{nullptr};  // constant-initialised

// The parameter an argument of the call binds to (a named argument's index in the call is
// not its parameter's).
uint32_t param_of(const JitFunction& fn, const CallArgs& call, uint32_t arg) {
  const int p = call_param_index(JitAccess::state(fn), call, arg);
  return p >= 0 ? static_cast<uint32_t>(p) : arg;
}

std::string where(const JitFunction& fn, const CallArgs& call, uint32_t arg) {
  return kernel_arg_where(JitAccess::state(fn), param_of(fn, call, arg));
}

[[noreturn]] void throw_bad_dtype(const JitFunction& fn, const CallArgs& call, const TensorRef& r) {
  throw TypeError(where(fn, call, r.arg) + ": a tensor of dtype " +
                  std::string(c10::toString(r.tensor->scalar_type())) +
                  " has no Triton element type; pass bool, an integer, float8, float16, "
                  "bfloat16, float32 or float64 tensor");
}

[[noreturn]] void throw_bad_device(const JitFunction& fn, const CallArgs& call,
                                   const TensorRef& r) {
  throw ValueError(where(fn, call, r.arg) + ": a tensor on " + r.tensor->device().str() +
                   " cannot be launched on; pass CUDA tensors (GPU launch) or CPU tensors "
                   "(Triton's interpreter)");
}

[[noreturn]] void throw_mixed(const JitFunction& fn, const CallArgs& call, const TensorRef& a,
                              const TensorRef& b) {
  const uint32_t ia = param_of(fn, call, a.arg);
  throw ValueError(where(fn, call, b.arg) + ": is on " + b.tensor->device().str() +
                   ", but argument #" + std::to_string(ia) + " '" + fn.params()[ia].name +
                   "' is on " + a.tensor->device().str() +
                   "; all tensors of a launch must be on one device");
}

// CallHooks::py_arg of every torch launch (a constant, so a launch reads nothing more for it):
// the bridge's, when it is loaded. The JIT layer calls it only where Python looks at an
// argument (a heuristic, a tuning run, a hook); without the bridge that Python would see a raw
// pointer where Python Triton gives it a tensor, so it is refused.
void* tensor_arg(const void* ctx, uint32_t index) {
  if (const TorchPythonHooks* python = g_python.load(std::memory_order_acquire)) {
    return python->tensor_arg(ctx, index);
  }
  const JitFunction& fn = *static_cast<const TensorArgs*>(ctx)->fn;
  TE_THROW(NotSupportedError)
      << fn.module() << "." << fn.name() << ": its Python heuristics, tuning or hooks would see "
      << "argument #" << index << " as a raw pointer, not a tensor: this program loads the JIT "
      << "layer (libtriton_embed.so) and the torch layer without its Python bridge "
      << "(libtriton_embed_torch.so); link triton_embed::torch or triton_embed::ops rather than "
      << "triton_embed::torch_runtime or triton_embed::ops_runtime (in Python: import "
      << "triton_embed before loading libtriton_embed_ops.so)";
}

// CallHooks::zero_arg of every torch launch: nargs[name].zero_() of a config pre-hook the
// runtime applies, on torch's current stream (the launch's), as the hook in Python does.
bool zero_tensor_arg(const void* ctx, uint32_t index) {
  const auto* t = static_cast<const TensorArgs*>(ctx);
  const at::Tensor* found = nullptr;
  for (size_t i = 0; i < t->n; ++i) {
    if (t->tensors[i].arg != index) continue;
    if (found != nullptr) return false;  // tensors in a tuple: the argument is no tensor
    found = t->tensors[i].tensor;
  }
  if (found == nullptr) return false;
  found->zero_();
  return true;
}

// Where the call's tensors are: each has a Triton dtype, and all are on one CUDA device or
// all on the CPU; else raises what is wrong, naming the first tensor that is.
TensorPlace check_tensors(const JitFunction& fn, const CallArgs& call, const TensorRef* tensors,
                          size_t ntensors) {
  const TensorRef* cuda = nullptr;
  const TensorRef* cpu = nullptr;
  for (size_t i = 0; i < ntensors; ++i) {
    const TensorRef& r = tensors[i];
    const at::Tensor& t = *r.tensor;
    if (C10_UNLIKELY(triton_dtype(t.scalar_type()) == DType::invalid)) throw_bad_dtype(fn, call, r);
    const c10::Device d = t.device();
    if (d.is_cuda()) {
      if (cuda == nullptr) {
        cuda = &r;
      } else if (cuda->tensor->device().index() != d.index()) {
        throw_mixed(fn, call, *cuda, r);
      }
      if (cpu != nullptr) throw_mixed(fn, call, *cpu, r);
    } else if (d.is_cpu()) {
      if (cuda != nullptr) throw_mixed(fn, call, *cuda, r);
      if (cpu == nullptr) cpu = &r;
    } else {
      throw_bad_device(fn, call, r);
    }
  }
  if (cuda != nullptr) return TensorPlace{cuda->tensor->device().index()};
  return TensorPlace{cpu != nullptr ? TensorPlace::kHost : TensorPlace::kNone};
}

[[noreturn]] void throw_cannot_interpret(std::string_view where) {
  TE_THROW(NotSupportedError)
      << where << ": a CPU tensor runs through Triton's interpreter, which needs Python; this "
      << "program links the torch layer without it (triton_embed::torch_runtime or "
      << "triton_embed::ops_runtime): link triton_embed::torch or triton_embed::ops (in Python: "
      << "import triton_embed) to run on CPU tensors, or pass CUDA tensors";
}

}  // namespace

void set_torch_python_hooks(const TorchPythonHooks* hooks) {
  const TorchPythonHooks* expected = nullptr;
  if (!g_python.compare_exchange_strong(expected, hooks, std::memory_order_acq_rel)) {
    TE_ICHECK(expected == hooks) << "a second torch Python bridge registered itself (two "
                                 << "copies of libtriton_embed_torch.so loaded into one process?)";
  }
}

void throw_bad_scalar(const c10::Scalar& s) {
  throw TypeError(std::string("a c10::Scalar of type ") + c10::toString(s.type()) +
                  (s.isSymbolic() ? " (symbolic)" : "") +
                  " has no Triton type; pass a bool, integer or floating-point scalar");
}

void torch_launch_call(const JitFunction& fn, const GridSpec& grid, ArgValue* args, size_t npos,
                       const ArgName* names, size_t nnamed, const TensorRef* tensors,
                       size_t ntensors, void* const* py_objects, const CallObserver* observer,
                       TensorPlace place) {
  CallArgs call;
  call.vals = args;
  call.npos = static_cast<uint32_t>(npos);
  call.nnamed = static_cast<uint32_t>(nnamed);
  call.names = names;
  const TensorArgs targs{tensors, ntensors, &fn, py_objects};
  CallHooks hooks;
  hooks.py_arg = &tensor_arg;
  hooks.zero_arg = &zero_tensor_arg;
  hooks.ctx = &targs;
  hooks.observer = observer;
  call.hooks = &hooks;
  if (place.device == TensorPlace::kUnread) place = check_tensors(fn, call, tensors, ntensors);
  if (place.device == TensorPlace::kHost) {
    const TorchPythonHooks* const python = g_python.load(std::memory_order_acquire);
    if (python == nullptr) throw_cannot_interpret(where(fn, call, tensors[0].arg));
    python->interpret_on_host(fn, grid, args, npos + nnamed, tensors, ntensors, call);
    return;
  }
  // On torch's current stream of the tensors' device (without CUDA tensors: the current
  // device's), made current for the launch. Usually it already is: then no guard, whose
  // restore on exit asks the driver about the primary context on every launch, and no
  // question to the runtime about its current device (the launch reads the context anyway).
  c10::DeviceIndex index = static_cast<c10::DeviceIndex>(place.device);
  if (place.device == TensorPlace::kNone) C10_CUDA_CHECK(c10::cuda::GetDevice(&index));
  const Stream stream = reinterpret_cast<Stream>(c10::cuda::getCurrentCUDAStream(index).stream());
  KernelState* const k = JitAccess::state(fn);
  const InternedOptions* const options = JitAccess::options(fn);
  if (C10_LIKELY(launch_if_on_device(index, k, options, grid, stream, call))) return;
  const c10::cuda::CUDAGuard guard(index);
  if (!launch_if_on_device(index, k, options, grid, stream, call)) {
    throw Error("launching " + fn.module() + "." + fn.name() + ": device " + std::to_string(index) +
                " was made current for the launch, but the current "
                "CUDA context is on another device; do not replace the context torch uses "
                "for a device while launching on it");
  }
}

void torch_launch(const JitFunction& fn, const GridSpec& grid, ArgValue* args, size_t npos,
                  const ArgName* names, size_t nnamed, const TensorRef* tensors, size_t ntensors) {
  torch_launch_call(fn, grid, args, npos, names, nnamed, tensors, ntensors, nullptr, nullptr,
                    TensorPlace{TensorPlace::kUnread});
}

}  // namespace triton_embed::detail

namespace triton_embed {

void check_can_interpret(std::string_view where) {
  if (detail::g_python.load(std::memory_order_acquire) == nullptr) {
    detail::throw_cannot_interpret(where);
  }
}

}  // namespace triton_embed
