// A TensorDescriptor argument as the library's descriptor (convert_descriptor): per thread, the
// last few descriptors with their fields (t_descs), each remembering the Python descriptor it
// was read from while that one's instance dict and type are unchanged (remembered).

#include "pyext/descriptors.h"

#include <Python.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/autograd/python_variable.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <iterator>
#include <optional>
#include <utility>

#include "core/tensor_map.h"
#include "pyext/convert.h"
#include "pyext/types.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed::detail {

namespace {

thread_local DescCache* t_descs = nullptr;  // on the heap: TLS in a shared library stays small

bool same_fields(const TensorDescriptor& a, uint64_t base, DType dtype, int rank,
                 const int64_t* shape, const int64_t* strides, const int64_t* block,
                 Padding padding, bool tf32, uint8_t flags) {
  if (a.base() != base || a.dtype() != dtype || a.rank() != rank || a.padding() != padding ||
      a.round_f32_to_tf32() != tf32 || TensorDescriptorAccess::arg_flags(a) != flags) {
    return false;
  }
  for (int i = 0; i < rank; ++i) {
    if (a.shape()[i] != shape[i] || a.strides()[i] != strides[i] ||
        a.block_shape()[i] != block[i]) {
      return false;
    }
  }
  return true;
}

// Takes `slot` for the call: its descriptor is argument `out`.
void hold_descriptor(DescCache::Slot* slot, ArgValue& out, Conversion& c) {
  slot->in_use = true;
  c.held[c.nheld++] = slot;
  const TensorDescriptor& d = *slot->desc;
  out = ArgValue{};
  out.kind = ArgKind::kTensorDesc;
  out.dtype = d.dtype();
  out.flags = TensorDescriptorAccess::arg_flags(d);
  out.ptr = &d;
}

// The slot that remembers descriptor o, when o's instance dict `dict` and type are unchanged
// since and what can change under its fields still equals the slot's descriptor: the base
// tensor's data (address, dtype, memory) and the items of a block_shape list; its base is then
// one of the call's tensors. Null otherwise.
DescCache::Slot* remembered(DescCache& cache, PyObject* o, PyObject* dict, uint32_t arg,
                            Conversion& c) {
  const uint64_t stamp = dict_stamp(dict);
  PyTypeObject* type = Py_TYPE(o);
  for (DescCache::Slot& s : cache.slots) {
    if (s.obj != o || s.in_use || s.dict != dict || s.stamp != stamp || s.type != type ||
        s.type_version != type->tp_version_tag || !s.desc || !is_tensor(s.base)) {
      continue;
    }
    const TensorDescriptor& d = *s.desc;
    const at::Tensor& t = THPVariable_Unpack(s.base);
    ArgValue v;
    const c10::Device device = fill_tensor(t, v);
    bool same = v.kind == ArgKind::kPointer && v.u == d.base() && v.dtype == d.dtype() &&
                v.flags == TensorDescriptorAccess::arg_flags(d);
    if (same && s.block_list != nullptr) {
      int64_t block[TensorDescriptor::kMaxRank];
      int rank = d.rank();
      same =
          read_dims(s.block_list, block, rank) && std::equal(block, block + rank, d.block_shape());
      if (!same && PyErr_Occurred()) PyErr_Clear();  // read again below, raising then
    }
    if (same) {
      add_tensor(t, v, device, arg, c);
      return &s;
    }
  }
  return nullptr;
}

// Whether tuple t holds ints only (of exactly int: their values cannot change).
bool exact_ints(PyObject* t) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t); ++i) {
    if (!PyLong_CheckExact(PyTuple_GET_ITEM(t, i))) return false;
  }
  return true;
}

}  // namespace

// A triton.tools.tensor_descriptor.TensorDescriptor as the library's descriptor.
bool convert_descriptor(PyObject* o, ArgValue& out, uint32_t arg, Conversion& c) {
  if (c.nheld == kMaxDescs) {
    leave(c, Fallback::kTooManyValues);
    return true;
  }
  if (t_descs == nullptr) t_descs = new DescCache();
  DescCache& cache = *t_descs;
  // The dataclass's fields from its instance dict: one pass over it, its keys compared by
  // identity with the interned names (attribute names are interned); else as attributes.
  PyObject** dict_ptr = _PyObject_GetDictPtr(o);
  if (dict_ptr == nullptr) PyErr_Clear();
  PyObject* dict = dict_ptr != nullptr && *dict_ptr != nullptr && PyDict_CheckExact(*dict_ptr)
                       ? *dict_ptr
                       : nullptr;
  const bool followed = dict != nullptr && follow_dict(dict);
  if (followed) {
    if (DescCache::Slot* s = remembered(cache, o, dict, arg, c)) {
      hold_descriptor(s, out, c);
      return true;
    }
  }
  Py_XINCREF(dict);  // held while attributes run Python code
  const pyb::object hold_dict = pyb::reinterpret_steal<pyb::object>(dict);
  // The dict's stamp and the type's version before the fields are read: a change while they
  // are read (Python code an attribute runs) leaves o unremembered.
  const uint64_t stamp = followed ? dict_stamp(dict) : 0;
  const unsigned int type_version = Py_TYPE(o)->tp_version_tag;
  enum Field : size_t { kBase, kShape, kStrides, kBlockShape, kPadding, kTf32 };
  PyObject* const names[] = {g_types.s_base,        g_types.s_shape,   g_types.s_strides,
                             g_types.s_block_shape, g_types.s_padding, g_types.s_tf32};
  PyObject* found[std::size(names)] = {};
  pyb::object hold_found[std::size(names)];  // held while Python code may change the dict
  if (dict != nullptr) {
    Py_ssize_t pos = 0;
    PyObject *key = nullptr, *value = nullptr;
    while (PyDict_Next(dict, &pos, &key, &value)) {
      for (size_t i = 0; i < std::size(names); ++i) {
        if (key == names[i]) found[i] = value;
      }
    }
    for (size_t i = 0; i < std::size(names); ++i) {
      hold_found[i] = pyb::reinterpret_borrow<pyb::object>(found[i]);
    }
  }
  // Whether every field read came from the dict (or is on neither the dict nor the class): the
  // slot may then remember o.
  bool from_dict = dict != nullptr;
  PyTypeObject* const type = Py_TYPE(o);
  auto field = [&](Field i) -> PyObject* {  // names[i]'s value: a new reference, or null
    PyObject* v = found[i];
    if (v != nullptr) {
      Py_INCREF(v);
      return v;
    }
    // Not under its interned name. Where the class has no such attribute and no hook for
    // missing ones, only the dict can hold it (under a key made another way), without calling
    // anything; else as an attribute.
    if (dict != nullptr && type->tp_getattro == PyObject_GenericGetAttr &&
        _PyType_Lookup(type, names[i]) == nullptr) {
      v = dict_get(dict, names[i]);
      Py_XINCREF(v);
      return v;
    }
    v = optional_attr(o, names[i]);
    from_dict = from_dict && v == nullptr;
    return v;
  };
  PyObject* base = field(kBase);
  if (base == nullptr) {
    PyErr_SetString(PyExc_TypeError, "a TensorDescriptor argument has no base tensor");
    return false;
  }
  uint64_t address = 0;
  DType dtype = DType::invalid;
  uint8_t flags = 0;
  // A base only this call holds (a property's result) would not outlive it: Triton's launcher.
  if (is_tensor(base) && c.ntensors < kMaxTensors && Py_REFCNT(base) > 1) {
    // The base decides the device as a tensor argument does (the descriptor, alive for the
    // call, holds it).
    ArgValue v;
    take_tensor(THPVariable_Unpack(base), v, arg, c);
    address = v.u;
    dtype = v.dtype;
    flags = v.flags;
  } else {
    leave(c, Fallback::kDescriptorBase);  // Triton's launcher takes it
  }
  Py_DECREF(base);
  if (c.unsupported()) return true;
  int64_t shape[TensorDescriptor::kMaxRank], strides[TensorDescriptor::kMaxRank],
      block[TensorDescriptor::kMaxRank];
  int rank = -1;
  PyObject* block_list = nullptr;
  for (auto [which, dims] :
       {std::pair{kShape, shape}, std::pair{kStrides, strides}, std::pair{kBlockShape, block}}) {
    PyObject* seq = field(which);
    if (seq == nullptr) {
      PyErr_SetString(PyExc_TypeError,
                      "a TensorDescriptor argument lacks its shape, strides "
                      "or block_shape");
      return false;
    }
    // A tuple of ints holds its values for good; a block_shape list is read again at each
    // launch.
    if (which == kBlockShape && PyList_CheckExact(seq)) {
      block_list = seq;
    } else if (!PyTuple_Check(seq) || !exact_ints(seq)) {
      from_dict = false;
    }
    const bool ok = read_dims(seq, dims, rank);
    Py_DECREF(seq);
    if (!ok) return false;
  }
  Padding padding = Padding::kZero;
  if (PyObject* p = field(kPadding)) {
    from_dict = from_dict && PyUnicode_CheckExact(p);
    padding = p == g_types.s_nan || (PyUnicode_Check(p) && p != g_types.s_zero &&
                                     PyUnicode_CompareWithASCIIString(p, "nan") == 0)
                  ? Padding::kNan
                  : Padding::kZero;
    Py_DECREF(p);
  }
  bool tf32 = false;
  if (PyObject* r = field(kTf32)) {  // Triton 3.7 and later
    from_dict = from_dict && PyBool_Check(r);
    const int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (truth < 0) return false;
    tf32 = truth == 1;
  }
  DescCache::Slot* slot = nullptr;
  for (DescCache::Slot& s : cache.slots) {
    if (!s.in_use && s.desc &&
        same_fields(*s.desc, address, dtype, rank, shape, strides, block, padding, tf32, flags)) {
      slot = &s;
      break;
    }
  }
  if (slot == nullptr) {
    for (unsigned i = 0; i < 16 && slot == nullptr; ++i) {
      DescCache::Slot& s = cache.slots[(cache.next + i) % 16];
      if (!s.in_use) slot = &s;
    }
    if (slot == nullptr) {
      leave(c, Fallback::kTooManyValues);
      return true;
    }
    cache.next = static_cast<unsigned>((slot - cache.slots) + 1) % 16;
    slot->obj = nullptr;
    try {
      slot->desc.emplace(address, dtype, rank, shape, strides, block, padding, tf32);
    } catch (...) {
      slot->desc.reset();
      raise_from(std::current_exception());
      return false;
    }
    TensorDescriptorAccess::set_arg_flags(*slot->desc, flags);
  }
  // Remembers o when its fields came from its dict, whose changes are followed, and nothing
  // changed the dict or the type while they were read.
  const bool remember = from_dict && followed && dict_stamp(dict) == stamp &&
                        Py_TYPE(o)->tp_version_tag == type_version &&
                        (Py_TYPE(o)->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) != 0;
  for (DescCache::Slot& s : cache.slots) {
    if (s.obj == o) s.obj = nullptr;  // what another slot remembers of o is out of date
  }
  slot->obj = remember ? o : nullptr;
  slot->dict = dict;
  slot->stamp = stamp;
  slot->type = Py_TYPE(o);
  slot->type_version = type_version;
  slot->base = remember ? found[kBase] : nullptr;
  slot->block_list = block_list;
  hold_descriptor(slot, out, c);
  return true;
}

}  // namespace triton_embed::detail
