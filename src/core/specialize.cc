// Triton's argument specialisation (core/specialize.h): each parameter's value as leaves, by
// the rules of Triton's binder and native_specialize_impl, with the errors Triton raises.

#include "core/specialize.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/tensor_map.h"

namespace triton_embed::detail {

namespace {

// ---- integer values -------------------------------------------------------------------

bool is_int_like(const ArgValue& v) {
  return v.kind == ArgKind::kInt || v.kind == ArgKind::kBool ||
         (v.kind == ArgKind::kScalar && !dtype_is_float(v.dtype));
}

bool is_numeric(const ArgValue& v) {
  return is_int_like(v) || v.kind == ArgKind::kFloat || v.kind == ArgKind::kScalar;
}

// " (range [lo, hi])" of an integer type, for the messages of values that do not fit it.
std::string int_range(DType t) {
  switch (t) {
    case DType::u1:
      return " (range [0, 1])";
    case DType::i8:
      return " (range [-128, 127])";
    case DType::i16:
      return " (range [-32768, 32767])";
    case DType::i32:
      return " (range [-2^31, 2^31 - 1])";
    case DType::i64:
      return " (range [-2^63, 2^63 - 1])";
    case DType::u8:
      return " (range [0, 255])";
    case DType::u16:
      return " (range [0, 65535])";
    case DType::u32:
      return " (range [0, 2^32 - 1])";
    case DType::u64:
      return " (range [0, 2^64 - 1])";
    default:
      return "";
  }
}

// ---- leaf writer ----------------------------------------------------------------------

class Writer {
 public:
  Writer(const KernelState& k, LeafList& out) : k_(k), out_(out) {}
  void set_param(uint32_t p) { param_ = p; }
  uint32_t param() const { return param_; }
  const KernelState& kernel() const { return k_; }

  void constexpr_leaf(const ArgValue* v) {
    push(LeafKind::kConstexpr, DType::invalid, SpecKey::kNone, 0, v);
  }
  void scalar(DType t, SpecKey key, const ArgValue* v) { push(LeafKind::kScalar, t, key, 0, v); }
  void pointer(DType elem, bool is_const, SpecKey key, const ArgValue* v) {
    push(LeafKind::kPointer, elem, key, is_const ? 1 : 0, v);
  }
  void tuple_begin(const ArgValue* v) {
    Leaf& l = push(LeafKind::kTupleBegin, DType::invalid, SpecKey::kNone, 0, v);
    l.count = v->count;
  }
  void tuple_end(const ArgValue* v) {
    push(LeafKind::kTupleEnd, DType::invalid, SpecKey::kNone, 0, v);
  }
  void descriptor(const ArgValue* v, uint32_t count) {
    TE_CHECK(out_.ndesc < kMaxTensorDescs, NotSupportedError)
        << call_signature(k_) << ": more than " << kMaxTensorDescs
        << " tensor descriptor arguments in one launch";
    ++out_.ndesc;
    Leaf& l = push(LeafKind::kTensorDesc, v->dtype, SpecKey::kNone, 0, v);
    l.count = count;
  }

 private:
  Leaf& push(LeafKind kind, DType t, SpecKey key, uint8_t is_const, const ArgValue* v) {
    TE_CHECK(out_.n < kMaxLeaves, ValueError)
        << call_signature(k_) << ": too many arguments after flattening tuples (at most "
        << kMaxLeaves << " values)";
    Leaf& l = out_.leaves[out_.n++];
    l.kind = kind;
    l.dtype = t;
    l.key = key;
    l.is_const = is_const;
    l.count = 0;
    l.param = param_;
    l.value = v;
    return l;
  }
  const KernelState& k_;
  LeafList& out_;
  uint32_t param_ = 0;
};

[[noreturn]] void throw_constexpr_only(const Writer& w, const ArgValue& v) {
  TE_THROW(TypeError) << arg_where(w.kernel(), w.param()) << ": " << describe_value(v)
                      << " can only be passed to a tl.constexpr parameter; declare the "
                         "parameter as tl.constexpr or pass a number, bool, pointer or tuple";
}

void check_pointer_dtype(const Writer& w, const ArgValue& v) {
  TE_CHECK(v.dtype != DType::invalid, TypeError)
      << arg_where(w.kernel(), w.param())
      << ": the pointer has no element type; pass triton_embed::Pointer(ptr, DType::...)";
}

void check_forced_scalar(const Writer& w, const ArgValue& v) {
  TE_CHECK(dtype_is_scalar_arg(v.dtype), TypeError)
      << arg_where(w.kernel(), w.param()) << ": a scalar of type " << dtype_name(v.dtype)
      << " cannot be passed to a kernel; use u1, i8..i64, u8..u64, fp16, bf16, fp32 or fp64";
  if (!dtype_is_float(v.dtype)) {
    TE_CHECK(int_fits(v.dtype, v), OverflowError)
        << arg_where(w.kernel(), w.param()) << ": "
        << (v.big ? std::to_string(v.u) : std::to_string(v.i)) << " does not fit the forced type "
        << dtype_name(v.dtype) << int_range(v.dtype);
  }
}

// native_specialize_impl(backend, v, is_const, specialize, align), written as leaves.
void spec_value(Writer& w, const ArgValue& v, bool is_const, bool specialize, bool align,
                bool in_tuple = false) {
  switch (v.kind) {
    case ArgKind::kNone:
    case ArgKind::kConstexpr:
    case ArgKind::kJitFunction:
      w.constexpr_leaf(&v);
      return;
    case ArgKind::kBool:
      w.scalar(DType::u1, SpecKey::kNone, &v);
      return;
    case ArgKind::kInt: {
      if (specialize && int_is_one(v)) {
        w.constexpr_leaf(&v);
        return;
      }
      DType t = v.big ? DType::u64 : (int_fits(DType::i32, v) ? DType::i32 : DType::i64);
      w.scalar(t, int_key(v, specialize, align), &v);
      return;
    }
    case ArgKind::kFloat:
      w.scalar(DType::fp32, SpecKey::kNone, &v);
      return;
    case ArgKind::kPointer:
      check_pointer_dtype(w, v);
      w.pointer(v.dtype, is_const, int_key(v, specialize, align), &v);
      return;
    case ArgKind::kScalar: {
      // A forced type behaves as an annotation of that type would.
      check_forced_scalar(w, v);
      if (dtype_is_float(v.dtype) || v.dtype == DType::u1) {
        w.scalar(v.dtype, SpecKey::kNone, &v);
      } else {
        SpecKey key = (specialize && int_is_one(v)) ? SpecKey::kOne : int_key(v, specialize, align);
        w.scalar(v.dtype, key, &v);
      }
      return;
    }
    case ArgKind::kTuple:
      // Triton specialises tuple elements with the default flags, whatever the parameter's.
      w.tuple_begin(&v);
      for (uint32_t i = 0; i < v.count; ++i) spec_value(w, v.elems[i], false, true, true, true);
      w.tuple_end(&v);
      return;
    case ArgKind::kStr:
    case ArgKind::kDType:
      throw_constexpr_only(w, v);
    case ArgKind::kPyObject:
      TE_THROW(TypeError) << arg_where(w.kernel(), w.param())
                          << ": the parameter's Python default value has a type that only a "
                             "tl.constexpr parameter accepts; pass a value for it";
    case ArgKind::kTensorDesc: {
      TE_CHECK(!in_tuple, NotSupportedError)
          << arg_where(w.kernel(), w.param())
          << ": a tensor descriptor inside a tuple; pass it as an argument of its own";
      const auto& d = *static_cast<const TensorDescriptor*>(v.ptr);
      w.descriptor(&v, check_descriptor(w.kernel(), w.param(), d));
      return;
    }
  }
  TE_THROW(Error) << "triton_embed internal error: unknown argument kind";
}

// A parameter with a scalar or pointer annotation (the binder's annotation branch).
void spec_annotated(Writer& w, const ParamSpec& p, const ArgValue& v) {
  const KernelState& k = w.kernel();
  const size_t i = w.param();
  const DType ann = p.ann_dtype;
  if (p.ann == AnnKind::kUnsupported) {
    TE_THROW(NotSupportedError) << arg_where(k, i) << ": the annotation '" << k.params[i].annotation
                                << "' has no host representation a launch can pass";
  }
  if (p.ann == AnnKind::kPointer) {
    SpecKey key;
    switch (v.kind) {
      case ArgKind::kPointer:
        check_pointer_dtype(w, v);
        key = int_key(v, p.specialize, p.align);
        break;
      case ArgKind::kNone:  // Triton passes None to a pointer parameter as a null pointer
        key = SpecKey::kNone;
        break;
      case ArgKind::kInt:  // a raw address, as Python accepts an int
        TE_CHECK(v.big || v.i >= 0, OverflowError)
            << arg_where(k, i) << ": " << v.i << " is not a valid address; pass a pointer or an "
            << "address from 0 to 2^64 - 1";
        key = (p.specialize && int_is_one(v)) ? SpecKey::kOne : int_key(v, p.specialize, p.align);
        break;
      default:
        TE_THROW(TypeError) << arg_where(k, i) << ": expected a pointer for the annotated type *"
                            << dtype_name(ann) << ", got " << describe_value(v);
    }
    w.pointer(ann, p.is_const, key, &v);
    return;
  }
  // Scalar annotation.
  if (dtype_is_float(ann)) {
    TE_CHECK(is_numeric(v), TypeError)
        << arg_where(k, i) << ": expected a number for the annotated type " << dtype_name(ann)
        << ", got " << describe_value(v);
    if (v.kind == ArgKind::kScalar) check_forced_scalar(w, v);
    w.scalar(ann, SpecKey::kNone, &v);
    return;
  }
  TE_CHECK(is_int_like(v), TypeError)
      << arg_where(k, i) << ": expected an integer for the annotated type " << dtype_name(ann)
      << ", got " << describe_value(v);
  TE_CHECK(int_fits(ann, v), OverflowError)
      << arg_where(k, i) << ": " << (v.big ? std::to_string(v.u) : std::to_string(v.i))
      << " does not fit the annotated type " << dtype_name(ann) << int_range(ann);
  if (ann == DType::u1) {
    w.scalar(ann, SpecKey::kNone, &v);
    return;
  }
  SpecKey key;
  if (v.kind == ArgKind::kBool) {
    key = SpecKey::kNone;  // native_specialize_impl gives a bool no key
  } else if (p.specialize && int_is_one(v)) {
    key = SpecKey::kOne;
  } else {
    key = int_key(v, p.specialize, p.align);
  }
  w.scalar(ann, key, &v);
}

bool contains_descriptor(const ArgValue& v) {
  switch (v.kind) {
    case ArgKind::kTensorDesc:
      return true;
    case ArgKind::kConstexpr:
      return contains_descriptor(*v.elems);
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) {
        if (contains_descriptor(v.elems[i])) return true;
      }
      return false;
    default:
      return false;
  }
}

}  // namespace

void specialize(const KernelState& kernel, const ArgValue* args, LeafList& out) {
  out.n = 0;
  out.ndesc = 0;
  Writer w(kernel, out);
  const size_t n = kernel.specs.size();
  for (size_t i = 0; i < n; ++i) {
    const ParamSpec& p = kernel.specs[i];
    const ArgValue& v = args[i];
    w.set_param(static_cast<uint32_t>(i));
    if (p.is_constexpr) {
      TE_CHECK(!contains_pointer(v), TypeError)
          << arg_where(kernel, i) << ": a "
          << (contains_descriptor(v) ? "tensor descriptor" : "pointer")
          << " cannot be passed to a tl.constexpr parameter";
      w.constexpr_leaf(&v);
    } else if (p.ann != AnnKind::kNone) {
      spec_annotated(w, p, v);
    } else {
      spec_value(w, v, p.is_const, p.specialize, p.align);
    }
  }
}

std::string leaf_type_name(const Leaf& leaf) {
  switch (leaf.kind) {
    case LeafKind::kConstexpr:
      return "constexpr";
    case LeafKind::kScalar:
      return std::string(dtype_name(leaf.dtype));
    case LeafKind::kPointer:
      return (leaf.is_const ? "*k" : "*") + std::string(dtype_name(leaf.dtype));
    case LeafKind::kTupleBegin:
      return "(";
    case LeafKind::kTupleEnd:
      return ")";
    case LeafKind::kTensorDesc:
      return descriptor_type_name(leaf.dtype, leaf.count);
  }
  return "?";
}

}  // namespace triton_embed::detail
