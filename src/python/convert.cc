#include "python/convert.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "python/cpython.h"
#include "python/handles.h"

namespace triton_embed::detail::py {

namespace pyb = pybind11;

pyb::object to_python(const ArgValue& v) {
  switch (v.kind) {
    case ArgKind::kNone:
      return pyb::none();
    case ArgKind::kBool:
      return pyb::bool_(v.i != 0);
    case ArgKind::kInt:
      return v.big ? pyb::reinterpret_steal<pyb::object>(PyLong_FromUnsignedLongLong(v.u))
                   : pyb::reinterpret_steal<pyb::object>(PyLong_FromLongLong(v.i));
    case ArgKind::kFloat:
      return pyb::float_(v.f);
    case ArgKind::kPointer:
      return pyb::reinterpret_steal<pyb::object>(PyLong_FromUnsignedLongLong(v.u));
    case ArgKind::kStr:
      return pyb::str(v.s, v.count);
    case ArgKind::kDType:
      return pyb::module_::import("triton.language")
          .attr(std::string(dtype_tl_name(v.dtype)).c_str());
    case ArgKind::kScalar:
      if (dtype_is_float(v.dtype)) return pyb::float_(v.f);
      return v.big ? pyb::reinterpret_steal<pyb::object>(PyLong_FromUnsignedLongLong(v.u))
                   : pyb::reinterpret_steal<pyb::object>(PyLong_FromLongLong(v.i));
    case ArgKind::kConstexpr:
      return pyb::module_::import("triton.language").attr("constexpr")(to_python(*v.elems));
    case ArgKind::kTuple: {
      pyb::tuple t(v.count);
      for (uint32_t i = 0; i < v.count; ++i) t[i] = to_python(v.elems[i]);
      return t;
    }
    case ArgKind::kJitFunction: {
      auto* k = static_cast<const KernelState*>(v.ptr);
      PyObject* fn = jit_function(*k);
      TE_CHECK(fn != nullptr, PythonError) << "the Python interpreter has shut down";
      return pyb::reinterpret_borrow<pyb::object>(fn);
    }
    case ArgKind::kPyObject:
      return pyb::reinterpret_borrow<pyb::object>(static_cast<PyObject*>(const_cast<void*>(v.ptr)));
    case ArgKind::kTensorDesc: {
      const auto& d = *static_cast<const TensorDescriptor*>(v.ptr);
      pyb::list shape, strides, block;
      for (int i = 0; i < d.rank(); ++i) {
        shape.append(d.shape()[i]);
        strides.append(d.strides()[i]);
        block.append(d.block_shape()[i]);
      }
      return glue().attr("make_descriptor")(
          pyb::int_(d.base()), std::string(dtype_name(d.dtype())), shape, strides, block,
          d.padding() == Padding::kNan ? "nan" : "zero", d.round_f32_to_tf32());
    }
  }
  return pyb::none();
}

namespace {

pyb::object key_to_python(SpecKey key) {
  switch (key) {
    case SpecKey::kNone:
      return pyb::none();
    case SpecKey::kEmpty:
      return pyb::str("");
    case SpecKey::kDiv16:
      return pyb::str("D");
    case SpecKey::kOne:
      return pyb::int_(1);
  }
  return pyb::none();
}

// One (type, key) item starting at leaves[i]; advances i past it.
std::pair<pyb::object, pyb::object> item(const KernelState& kernel, const LeafList& leaves,
                                         uint32_t& i, bool in_tuple) {
  const Leaf& l = leaves.leaves[i++];
  switch (l.kind) {
    case LeafKind::kConstexpr: {
      const ArgValue& v = *l.value;
      // native_specialize_impl gives a JITFunction argument its cache_key; the binder gives a
      // constexpr parameter the value itself.
      const bool constexpr_param = !in_tuple && kernel.specs[l.param].is_constexpr;
      if (v.kind == ArgKind::kJitFunction && !constexpr_param) {
        return {pyb::str("constexpr"), to_python(v).attr("cache_key")};
      }
      return {pyb::str("constexpr"), to_python(v)};
    }
    case LeafKind::kScalar:
    case LeafKind::kPointer:
    case LeafKind::kTensorDesc:
      return {pyb::str(leaf_type_name(l)), key_to_python(l.key)};
    case LeafKind::kTupleBegin: {
      pyb::tuple types(l.count), keys(l.count);
      for (uint32_t e = 0; e < l.count; ++e) {
        auto [t, k] = item(kernel, leaves, i, true);
        types[e] = t;
        keys[e] = k;
      }
      TE_ICHECK(i < leaves.n && leaves.leaves[i].kind == LeafKind::kTupleEnd) << "unbalanced tuple";
      ++i;
      return {std::move(types), std::move(keys)};
    }
    case LeafKind::kTupleEnd:
      break;
  }
  TE_ICHECK(false) << "unexpected leaf";
  return {};
}

}  // namespace

pyb::list specialization_to_python(const KernelState& kernel, const LeafList& leaves) {
  pyb::list out;
  uint32_t i = 0;
  while (i < leaves.n) {
    auto [t, k] = item(kernel, leaves, i, false);
    out.append(pyb::make_tuple(t, k));
  }
  return out;
}

pyb::list args_to_python(const KernelState& kernel, const ArgValue* args) {
  pyb::list out;
  for (size_t i = 0; i < kernel.params.size(); ++i) out.append(to_python(args[i]));
  return out;
}

namespace {

pyb::object compile_arg(const ArgValue& v) {
  switch (v.kind) {
    case ArgKind::kPointer:
    case ArgKind::kTensorDesc:
      return pyb::none();
    case ArgKind::kTuple: {
      pyb::tuple t(v.count);
      for (uint32_t i = 0; i < v.count; ++i) t[i] = compile_arg(v.elems[i]);
      return t;
    }
    default:
      return to_python(v);
  }
}

}  // namespace

pyb::list compile_args_to_python(const KernelState& kernel, const ArgValue* args) {
  pyb::list out;
  for (size_t i = 0; i < kernel.params.size(); ++i) out.append(compile_arg(args[i]));
  return out;
}

namespace {

// An int of one digit (CPython's compact form: every int below 2**30 in size) read in place,
// without PyLong_AsLongLongAndOverflow's call and its error check.
bool compact_int(PyObject* o, long long* out) {
#if PY_VERSION_HEX >= 0x030C0000
  auto* l = reinterpret_cast<PyLongObject*>(o);
  if (!PyUnstable_Long_IsCompact(l)) return false;
  *out = static_cast<long long>(PyUnstable_Long_CompactValue(l));
  return true;
#else
  const Py_ssize_t size = Py_SIZE(o);
  if (size < -1 || size > 1) return false;
  *out = static_cast<long long>(size) *
         static_cast<long long>(reinterpret_cast<PyLongObject*>(o)->ob_digit[0]);
  return true;
#endif
}

}  // namespace

// A Python value as an ArgValue whose storage the kernel keeps (strings interned once).
// False when it has no plain form (the caller keeps the object itself).
bool scalar_from_python(PyObject* o, ArgValue& v) {
  v = ArgValue{};
  long long small = 0;
  if (PyLong_CheckExact(o) && compact_int(o, &small)) {
    v.kind = ArgKind::kInt;
    v.i = small;
    return true;
  }
  if (o == Py_None) {
    v.kind = ArgKind::kNone;
    return true;
  }
  if (PyBool_Check(o)) {
    v.kind = ArgKind::kBool;
    v.i = o == Py_True ? 1 : 0;
    return true;
  }
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0 && !PyErr_Occurred()) {
      v.kind = ArgKind::kInt;
      v.i = x;
      return true;
    }
    PyErr_Clear();
    if (overflow > 0) {
      const unsigned long long u = PyLong_AsUnsignedLongLong(o);
      if (!PyErr_Occurred()) {
        v.kind = ArgKind::kInt;
        v.big = 1;
        v.u = u;
        return true;
      }
      PyErr_Clear();
    }
    return false;
  }
  if (PyFloat_Check(o)) {
    v.kind = ArgKind::kFloat;
    v.f = PyFloat_AsDouble(o);
    return true;
  }
  return false;
}

bool from_python(KernelState& k, pyb::handle obj, ArgValue& v) {
  PyObject* o = obj.ptr();
  if (scalar_from_python(o, v)) return true;
  if (PyLong_Check(o)) return false;  // beyond 64 bits
  if (PyUnicode_Check(o)) {
    const std::string s = obj.cast<std::string>();
    std::lock_guard<std::mutex> lock(k.values_mu);
    const std::string* stored = nullptr;
    for (const std::string& e : k.value_strings) {
      if (e == s) stored = &e;
    }
    if (stored == nullptr) {
      k.value_strings.push_back(s);
      stored = &k.value_strings.back();
    }
    v.kind = ArgKind::kStr;
    v.s = stored->data();
    v.count = static_cast<uint32_t>(stored->size());
    return true;
  }
  if (PyTuple_Check(o)) {
    const auto n = static_cast<size_t>(PyTuple_GET_SIZE(o));
    std::vector<ArgValue> elems(n);
    for (size_t i = 0; i < n; ++i) {
      if (!from_python(k, PyTuple_GET_ITEM(o, i), elems[i])) return false;
    }
    std::lock_guard<std::mutex> lock(k.values_mu);
    k.value_nested.push_back(std::move(elems));
    v.kind = ArgKind::kTuple;
    v.count = static_cast<uint32_t>(n);
    v.elems = k.value_nested.back().data();
    return true;
  }
  pyb::module_ tl = pyb::module_::import("triton.language");
  if (pyb::isinstance(obj, tl.attr("constexpr"))) {
    ArgValue inner;
    if (!from_python(k, obj.attr("value"), inner)) return false;
    std::lock_guard<std::mutex> lock(k.values_mu);
    k.value_nested.push_back({inner});
    v.kind = ArgKind::kConstexpr;
    v.elems = k.value_nested.back().data();
    return true;
  }
  if (pyb::isinstance(obj, tl.attr("dtype"))) {
    const DType t = dtype_from_name(pyb::str(obj).cast<std::string>());
    if (t != DType::invalid &&
        pyb::object(tl.attr(std::string(dtype_tl_name(t)).c_str())).is(obj)) {
      v.kind = ArgKind::kDType;
      v.dtype = t;
      return true;
    }
  }
  return false;
}

// A Python value that must be kept as an object (a strong reference the kernel owns).
ArgValue keep_object(KernelState& k, pyb::handle obj) {
  ArgValue v{};
  keep(k, obj.ptr());
  v.kind = ArgKind::kPyObject;
  v.ptr = obj.ptr();
  return v;
}

pyb::object option_to_python(const OptionValue& v) {
  switch (v.kind()) {
    case OptionValue::Kind::kBool:
      return pyb::bool_(v.as_bool());
    case OptionValue::Kind::kInt:
      return pyb::int_(v.as_int());
    case OptionValue::Kind::kFloat:
      return pyb::float_(v.as_float());
    case OptionValue::Kind::kString:
      return pyb::str(v.as_string());
  }
  return pyb::none();
}

}  // namespace triton_embed::detail::py
