// The torch layer's Python bridge (libtriton_embed_torch.so, target triton_embed::torch):
// what the torch layer needs Python for. CPU tensors run through Triton's interpreter as
// Python tensors (DLPack), and heuristics, hooks, reset_to_zero and restore_value see tensor
// arguments as the tensors themselves. It registers itself with the torch layer's core
// (torch/python_hooks.h) when loaded: by the dynamic loader in a program linked to
// triton_embed::torch (its link interface keeps it needed), or by `import triton_embed`.

#include <ATen/DLConvertor.h>
#include <ATen/core/Tensor.h>
#include <Python.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "core/call_hooks.h"
#include "torch/python_hooks.h"
#include "triton_embed/torch.h"

namespace triton_embed::detail {

namespace pyb = pybind11;

namespace {

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
    case at::kUInt16:
      view_as = "uint16";
      carrier = at::kShort;
      break;
    case at::kUInt32:
      view_as = "uint32";
      carrier = at::kInt;
      break;
    case at::kUInt64:
      view_as = "uint64";
      carrier = at::kLong;
      break;
    case at::kFloat8_e4m3fn:
      view_as = "float8_e4m3fn";
      carrier = at::kChar;
      break;
    case at::kFloat8_e5m2:
      view_as = "float8_e5m2";
      carrier = at::kChar;
      break;
    case at::kFloat8_e4m3fnuz:
      view_as = "float8_e4m3fnuz";
      carrier = at::kChar;
      break;
    case at::kFloat8_e5m2fnuz:
      view_as = "float8_e5m2fnuz";
      carrier = at::kChar;
      break;
    default:
      break;
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
      for (uint32_t i = 0; i < v.count; ++i)
        substitute(const_cast<ArgValue&>(v.elems[i]), objs, next);
      break;
    case ArgKind::kConstexpr:
      substitute(const_cast<ArgValue&>(*v.elems), objs, next);
      break;
    default:
      break;
  }
}

// The same for a launch from Python, from the call's own objects: its tensors and descriptors
// (in tuples too) become those objects; plain values stay as they are.
void substitute_objects(ArgValue& v, PyObject* o) {
  const bool tensor = v.kind == ArgKind::kPointer && (v.flags & kArgFromTensor) != 0;
  if (tensor || v.kind == ArgKind::kTensorDesc) {
    v = ArgValue{};
    v.kind = ArgKind::kPyObject;
    v.ptr = o;
  } else if (v.kind == ArgKind::kTuple && PyTuple_Check(o) &&
             PyTuple_GET_SIZE(o) == static_cast<Py_ssize_t>(v.count)) {
    for (uint32_t i = 0; i < v.count; ++i) {
      substitute_objects(const_cast<ArgValue&>(v.elems[i]), PyTuple_GET_ITEM(o, i));
    }
  }
}

// CallHooks::py_arg for tensor arguments: the tensor itself (GIL held), so heuristics, hooks,
// reset_to_zero and restore_value see what Python Triton would give them.
void* tensor_arg(const void* ctx, uint32_t index) {
  const auto* t = static_cast<const TensorArgs*>(ctx);
  if (t->py_objects != nullptr) {  // a launch from Python: its own objects (none: a default)
    PyObject* o = static_cast<PyObject*>(t->py_objects[index]);
    Py_XINCREF(o);
    return o;
  }
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
  const auto* targs = static_cast<const TensorArgs*>(call.hooks->ctx);
  if (targs != nullptr && targs->py_objects != nullptr) {
    // A launch from Python: the interpreter gets the call's own objects (tensors, descriptors).
    for (size_t i = 0; i < nargs; ++i) {
      if (void* o = targs->py_objects[i]) substitute_objects(args[i], static_cast<PyObject*>(o));
    }
  } else {
    objs.reserve(ntensors);
    try {
      for (size_t i = 0; i < ntensors; ++i) objs.push_back(to_python_tensor(*tensors[i].tensor));
    } catch (pyb::error_already_set& e) {
      throw PythonError("interpreting " + fn.module() + "." + fn.name() +
                        ": passing a CPU tensor to Python failed: " + e.what());
    }
    size_t next = 0;
    for (size_t i = 0; i < nargs; ++i) substitute(args[i], objs, next);
  }
  pyb::gil_scoped_release no_gil;
  if (call.nnamed == 0) {
    interpret(JitAccess::state(fn), grid, args, nargs);
  } else {
    interpret_call(JitAccess::state(fn), grid, call);
  }
}

constexpr TorchPythonHooks kTorchPython = {
    &tensor_arg,
    &interpret_on_host,
};

// Runs once, when the library is loaded (after the torch core and the JIT layer it depends on).
[[maybe_unused]] const bool kRegistered = (set_torch_python_hooks(&kTorchPython), true);

}  // namespace

}  // namespace triton_embed::detail
