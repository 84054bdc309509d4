// The torch layer's launch: the device comes from the tensor arguments, the stream is torch's
// current stream for it; CPU tensors go through Triton's interpreter.

#include <ATen/DLConvertor.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "triton_embed/torch.h"

namespace triton_embed::detail {

namespace pyb = pybind11;

namespace {

// The parameter an argument of the call binds to (a named argument's index in the call is
// not its parameter's).
uint32_t param_of(const JitFunction& fn, const CallArgs& call, uint32_t arg) {
  const int p = call_param_index(fn.state(), call, arg);
  return p >= 0 ? static_cast<uint32_t>(p) : arg;
}

std::string where(const JitFunction& fn, const CallArgs& call, uint32_t arg) {
  return kernel_arg_where(fn.state(), param_of(fn, call, arg));
}

[[noreturn]] void throw_bad_dtype(const JitFunction& fn, const CallArgs& call, const TensorRef& r) {
  throw TypeError(where(fn, call, r.arg) + ": a tensor of dtype " +
                  std::string(c10::toString(r.tensor->scalar_type())) +
                  " has no Triton element type; pass bool, an integer, float8, float16, "
                  "bfloat16, float32 or float64 tensor");
}

[[noreturn]] void throw_bad_device(const JitFunction& fn, const CallArgs& call, const TensorRef& r) {
  throw ValueError(where(fn, call, r.arg) + ": a tensor on " + r.tensor->device().str() +
                   " cannot be launched on; pass CUDA tensors (GPU launch) or CPU tensors "
                   "(Triton's interpreter)");
}

[[noreturn]] void throw_mixed(const JitFunction& fn, const CallArgs& call, const TensorRef& a,
                              const TensorRef& b) {
  const uint32_t ia = param_of(fn, call, a.arg);
  throw ValueError(where(fn, call, b.arg) + ": is on " + b.tensor->device().str() + ", but argument #" +
                   std::to_string(ia) + " '" + fn.params()[ia].name + "' is on " +
                   a.tensor->device().str() +
                   "; all tensors of a launch must be on one device");
}

void release_dlpack(PyObject* capsule) {
  // A capsule that torch consumed was renamed "used_dltensor" and is torch's to free.
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (m != nullptr && m->deleter != nullptr) m->deleter(m);
  }
}

// A Python torch tensor sharing t's memory (GIL held). Dtypes DLPack may not carry travel as
// a same-size integer view and are viewed back in Python.
pyb::object to_python_tensor(const at::Tensor& t) {
  const char* view_as = nullptr;
  at::ScalarType carrier = t.scalar_type();
  switch (t.scalar_type()) {
    case at::kUInt16: view_as = "uint16"; carrier = at::kShort; break;
    case at::kUInt32: view_as = "uint32"; carrier = at::kInt; break;
    case at::kUInt64: view_as = "uint64"; carrier = at::kLong; break;
    case at::kFloat8_e4m3fn: view_as = "float8_e4m3fn"; carrier = at::kChar; break;
    case at::kFloat8_e5m2: view_as = "float8_e5m2"; carrier = at::kChar; break;
    case at::kFloat8_e4m3fnuz: view_as = "float8_e4m3fnuz"; carrier = at::kChar; break;
    case at::kFloat8_e5m2fnuz: view_as = "float8_e5m2fnuz"; carrier = at::kChar; break;
    default: break;
  }
  const at::Tensor src = view_as == nullptr ? t : t.view(carrier);
  DLManagedTensor* m = at::toDLPack(src);
  PyObject* cap = PyCapsule_New(m, "dltensor", &release_dlpack);
  if (cap == nullptr) {
    m->deleter(m);
    throw pyb::error_already_set();
  }
  pyb::object capsule = pyb::reinterpret_steal<pyb::object>(cap);
  pyb::module_ torch = pyb::module_::import("torch");
  pyb::object out = torch.attr("utils").attr("dlpack").attr("from_dlpack")(capsule);
  if (view_as != nullptr) out = out.attr("view")(torch.attr(view_as));
  return out;
}

// Replaces each tensor's pointer value with its Python tensor, in the order fill_args wrote
// them (depth-first, argument order).
void substitute(ArgValue& v, const std::vector<pyb::object>& objs, size_t& next) {
  switch (v.kind) {
    case ArgKind::kPointer:
      if ((v.flags & kArgFromTensor) != 0) {
        v.kind = ArgKind::kPyObject;
        v.ptr = objs[next++].ptr();
      }
      break;
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) substitute(const_cast<ArgValue&>(v.elems[i]), objs, next);
      break;
    case ArgKind::kConstexpr:
      substitute(const_cast<ArgValue&>(*v.elems), objs, next);
      break;
    default:
      break;
  }
}

struct TensorArgs {
  const TensorRef* tensors;
  size_t n;
};

// CallArgs::py_arg for tensor arguments: the tensor itself (GIL held), so heuristics, hooks,
// reset_to_zero and restore_value see what Python Triton would give them.
void* tensor_arg(const void* ctx, uint32_t index) {
  const auto* t = static_cast<const TensorArgs*>(ctx);
  for (size_t i = 0; i < t->n; ++i) {
    if (t->tensors[i].arg == index) {
      try {
        return to_python_tensor(*t->tensors[i].tensor).release().ptr();
      } catch (pyb::error_already_set& e) {
        e.restore();
        return nullptr;
      }
    }
  }
  return nullptr;
}

void interpret_on_host(const JitFunction& fn, const GridSpec& grid, ArgValue* args, size_t nargs,
                       const TensorRef* tensors, size_t ntensors, const CallArgs& call) {
  initialize();  // starts or joins the interpreter
  pyb::gil_scoped_acquire gil;
  std::vector<pyb::object> objs;
  objs.reserve(ntensors);
  try {
    for (size_t i = 0; i < ntensors; ++i) objs.push_back(to_python_tensor(*tensors[i].tensor));
  } catch (pyb::error_already_set& e) {
    throw PythonError("interpreting " + fn.module() + "." + fn.name() +
                      ": passing a CPU tensor to Python failed: " + e.what());
  }
  size_t next = 0;
  for (size_t i = 0; i < nargs; ++i) substitute(args[i], objs, next);
  pyb::gil_scoped_release no_gil;
  if (call.nnamed == 0) {
    interpret(fn.state(), grid, args, nargs);
  } else {
    interpret_call(fn.state(), grid, call);
  }
}


}  // namespace

void throw_bad_scalar(const c10::Scalar& s) {
  throw TypeError(std::string("a c10::Scalar of type ") + c10::toString(s.type()) +
                  (s.isSymbolic() ? " (symbolic)" : "") +
                  " has no Triton type; pass a bool, integer or floating-point scalar");
}

void torch_launch(const JitFunction& fn, const GridSpec& grid, ArgValue* args, size_t npos,
                  const ArgName* names, size_t nnamed, const TensorRef* tensors, size_t ntensors) {
  CallArgs call;
  call.vals = args;
  call.npos = static_cast<uint32_t>(npos);
  call.nnamed = static_cast<uint32_t>(nnamed);
  call.names = names;
  const TensorArgs targs{tensors, ntensors};
  call.py_arg = &tensor_arg;
  call.py_ctx = &targs;
  const size_t nargs = npos + nnamed;
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
  if (cpu != nullptr) {
    interpret_on_host(fn, grid, args, nargs, tensors, ntensors, call);
    return;
  }
  // On torch's current stream of the tensors' device (without CUDA tensors: the current
  // device's), made current for the launch. Usually it already is: then no guard, whose
  // restore on exit asks the driver about the primary context on every launch, and no
  // question to the runtime about its current device (the launch reads the context anyway).
  c10::DeviceIndex index = -1;
  if (cuda != nullptr) {
    index = cuda->tensor->device().index();
  } else {
    C10_CUDA_CHECK(c10::cuda::GetDevice(&index));
  }
  const Stream stream = reinterpret_cast<Stream>(c10::cuda::getCurrentCUDAStream(index).stream());
  KernelState* const k = fn.state();
  const InternedOptions* const options = fn.interned_options();
  if (C10_LIKELY(launch_if_on_device(index, k, options, grid, stream, call))) return;
  const c10::cuda::CUDAGuard guard(index);
  if (!launch_if_on_device(index, k, options, grid, stream, call)) {
    throw Error("launching " + fn.module() + "." + fn.name() + ": device " +
                    std::to_string(index) + " was made current for the launch, but the current "
                    "CUDA context is on another device; do not replace the context torch uses "
                    "for a device while launching on it");
  }
}

}  // namespace triton_embed::detail
