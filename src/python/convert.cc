#include "python/convert.h"

#include <string>
#include <utility>

#include "core/errors.h"

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
      return pyb::module_::import("triton.language").attr(std::string(dtype_tl_name(v.dtype)).c_str());
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
      TE_CHECK(k->py_jit_function != nullptr, PythonError)
          << "the Python interpreter has shut down";
      return pyb::reinterpret_borrow<pyb::object>(static_cast<PyObject*>(k->py_jit_function));
    }
    case ArgKind::kPyObject:
      return pyb::reinterpret_borrow<pyb::object>(static_cast<PyObject*>(const_cast<void*>(v.ptr)));
  }
  return pyb::none();
}

namespace {

pyb::object key_to_python(SpecKey key) {
  switch (key) {
    case SpecKey::kNone: return pyb::none();
    case SpecKey::kEmpty: return pyb::str("");
    case SpecKey::kDiv16: return pyb::str("D");
    case SpecKey::kOne: return pyb::int_(1);
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

}  // namespace triton_embed::detail::py
