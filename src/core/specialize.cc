#include "core/specialize.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/key_words.h"
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

bool int_is_one(const ArgValue& v) { return !v.big && v.i == 1; }

// Does the integer in v fit Triton scalar type t?
bool int_fits(DType t, const ArgValue& v) {
  if (v.big) return t == DType::u64;  // value in [2^63, 2^64)
  const int64_t x = v.i;
  switch (t) {
    case DType::u1:
      return x == 0 || x == 1;
    case DType::i8:
      return x >= INT8_MIN && x <= INT8_MAX;
    case DType::i16:
      return x >= INT16_MIN && x <= INT16_MAX;
    case DType::i32:
      return x >= INT32_MIN && x <= INT32_MAX;
    case DType::i64:
      return true;
    case DType::u8:
      return x >= 0 && x <= UINT8_MAX;
    case DType::u16:
      return x >= 0 && x <= UINT16_MAX;
    case DType::u32:
      return x >= 0 && x <= static_cast<int64_t>(UINT32_MAX);
    case DType::u64:
      return x >= 0;
    default:
      return false;
  }
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

double as_double(const ArgValue& v) {
  if (v.kind == ArgKind::kFloat || (v.kind == ArgKind::kScalar && dtype_is_float(v.dtype))) {
    return v.f;
  }
  return v.big ? static_cast<double>(v.u) : static_cast<double>(v.i);
}

// The key native_specialize_impl gives an integer (after the == 1 check).
SpecKey int_key(const ArgValue& v, bool specialize, bool align) {
  if (!specialize) return SpecKey::kNone;
  return (align && (v.u & 15u) == 0) ? SpecKey::kDiv16 : SpecKey::kEmpty;
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

bool contains_pointer(const ArgValue& v) {
  switch (v.kind) {
    case ArgKind::kPointer:
    case ArgKind::kTensorDesc:
      return true;
    case ArgKind::kConstexpr:
      return contains_pointer(*v.elems);
    case ArgKind::kTuple:
      for (uint32_t i = 0; i < v.count; ++i) {
        if (contains_pointer(v.elems[i])) return true;
      }
      return false;
    default:
      return false;
  }
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

// ---- cache key --------------------------------------------------------------------------

namespace {

class KeyWriter {
 public:
  KeyWriter(const KernelState& k, Key& key) : k_(k), key_(key) {}
  void put(uint64_t w) {
    TE_CHECK(key_.n < kMaxKeyWords, ValueError)
        << call_signature(k_) << ": the arguments are too large for the cache key (too many "
        << "values, or long constexpr strings or tuples)";
    key_.w[key_.n++] = w;
  }
  void value(const ArgValue& v) {
    const uint64_t tag = static_cast<uint64_t>(v.kind) | static_cast<uint64_t>(v.dtype) << 8 |
                         static_cast<uint64_t>(v.big) << 16;
    switch (v.kind) {
      case ArgKind::kNone:
      case ArgKind::kDType:
        put(tag);
        return;
      case ArgKind::kBool:
      case ArgKind::kInt:
      case ArgKind::kFloat:
      case ArgKind::kScalar:
      case ArgKind::kPointer:
        put(tag);
        put(v.u);
        return;
      case ArgKind::kStr: {
        // The bytes themselves, 8 to a word: two strings share a key only when equal.
        put(tag | static_cast<uint64_t>(v.count) << 32);
        for (uint32_t i = 0; i < v.count; i += 8) {
          uint64_t w = 0;
          std::memcpy(&w, v.s + i, v.count - i < 8 ? v.count - i : 8);
          put(w);
        }
        return;
      }
      case ArgKind::kConstexpr:
        put(tag);
        value(*v.elems);
        return;
      case ArgKind::kTuple:
        put(tag | static_cast<uint64_t>(v.count) << 32);
        for (uint32_t i = 0; i < v.count; ++i) value(v.elems[i]);
        return;
      case ArgKind::kJitFunction:
      case ArgKind::kPyObject:
      case ArgKind::kTensorDesc:  // never constexpr (refused), listed for completeness
        put(tag);
        put(reinterpret_cast<uintptr_t>(v.ptr));
        key_.process_local = 1;
        return;
    }
  }

 private:
  const KernelState& k_;
  Key& key_;
};

// The run being filled, written out by flush().
struct Run {
  uint64_t word = kRunMarker;
  unsigned n = 0;
  // Adds a leaf's code; returns the full word to write when the run is full, else 0.
  uint64_t add(uint64_t code) noexcept {
    word |= code << (kRunBits * n);
    if (++n < kRunLeaves) return 0;
    const uint64_t full = word;
    word = kRunMarker;
    n = 0;
    return full;
  }
  // The pending word (then empty), or 0 when nothing is pending.
  uint64_t flush() noexcept {
    if (n == 0) return 0;
    const uint64_t w = word;
    word = kRunMarker;
    n = 0;
    return w;
  }
};

// Key words one value of a constexpr leaf can take at most on the fast path (strings: their
// length in words plus a tag; a longer value goes the general way).
constexpr uint32_t kFastConstexprWords = 8;

uint32_t constexpr_words(const ArgValue& v) noexcept {
  switch (v.kind) {
    case ArgKind::kNone:
    case ArgKind::kDType:
      return 1;
    case ArgKind::kStr:
      return 1 + (v.count + 7) / 8;
    case ArgKind::kConstexpr:
      return 1 + constexpr_words(*v.elems);
    default:
      return 2;  // numbers, tuples (refused below), functions
  }
}

}  // namespace

void build_key(const KernelState& kernel, const LeafList& leaves, Key& key) {
  key.n = 0;
  key.process_local = 0;
  KeyWriter kw(kernel, key);
  Run run;
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if ((l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) && l.count == 0) {
      if (const uint64_t full = run.add(run_code(l.kind, l.dtype, l.key, l.is_const))) kw.put(full);
      continue;
    }
    if (const uint64_t pending = run.flush()) kw.put(pending);
    kw.put(leaf_word(l.kind, l.dtype, l.key, l.is_const, l.count));
    if (l.kind == LeafKind::kConstexpr) kw.value(*l.value);
  }
  if (const uint64_t pending = run.flush()) kw.put(pending);
}

// ---- reading keys back: which entries serve a call ---------------------------------------

namespace {

// A runtime leaf's code as the signature writes it: "i32 D", "*fp16", "*kfp32 D".
std::string code_text(uint32_t c) {
  std::string s = (c & (1u << 10)) != 0 ? ((c & (1u << 9)) != 0 ? "*k" : "*") : "";
  s += std::string(dtype_name(static_cast<DType>(c & 0x7Fu)));
  if (((c & kCodeKeyMask) >> kCodeKeyShift) == static_cast<uint32_t>(SpecKey::kDiv16)) s += " D";
  return s;
}

std::string arg_text(const KernelState& k, uint32_t p) {
  std::string s = "argument #" + std::to_string(p);
  if (p < k.params.size()) s += " '" + k.params[p].name + "'";
  return s;
}

// Whether a constexpr leaf is the integer 1 that Triton made a constexpr of a runtime
// parameter (an entry taking the parameter as a plain i32 serves it).
bool is_specialised_one(const KernelState& k, const Leaf& l) {
  return l.kind == LeafKind::kConstexpr && l.param < k.specs.size() &&
         !k.specs[l.param].is_constexpr && l.value != nullptr && l.value->kind == ArgKind::kInt &&
         !l.value->big && l.value->i == 1;
}

}  // namespace

KeyMatch match_key(const KernelState& k, const LeafList& leaves, const Key& call,
                   const uint64_t* entry, size_t nentry, bool explain) {
  KeyMatch m;
  KeyReader c(call.w, call.n), e(entry, nentry);
  bool same = true;
  uint32_t i = 0;
  // Refused at leaf i: the leaves before it match; refused on an assumption alone, nearer.
  auto refuse = [&](uint32_t param, const std::string& why, bool assumption = false) {
    m.verdict = KeyMatch::Verdict::kRefused;
    m.nearness = 2 * i + (assumption ? 1 : 0);
    m.ones.clear();
    if (explain) m.why = arg_text(k, param) + " " + why;
    return m;
  };
  const uint32_t plain_i32[] = {
      static_cast<uint32_t>(run_code(LeafKind::kScalar, DType::i32, SpecKey::kNone, 0)),
      static_cast<uint32_t>(run_code(LeafKind::kScalar, DType::i32, SpecKey::kEmpty, 0))};
  for (; i < leaves.n; ++i) {
    const Leaf& l = leaves.leaves[i];
    if (l.kind == LeafKind::kScalar || l.kind == LeafKind::kPointer) {
      const uint32_t cc = c.code();
      if (!e.next_is_code()) {
        return refuse(l.param,
                      "is a constexpr, a tuple or a descriptor there (the signature "
                      "shows which), a runtime " +
                          code_text(cc) + " in this call");
      }
      const uint32_t ec = e.code();
      if ((cc & ~kCodeKeyMask) != (ec & ~kCodeKeyMask)) {
        return refuse(l.param,
                      "is " + code_text(ec) + " there, " + code_text(cc) + " in this call");
      }
      const uint32_t ck = (cc & kCodeKeyMask) >> kCodeKeyShift;
      const uint32_t ek = (ec & kCodeKeyMask) >> kCodeKeyShift;
      if (ek == static_cast<uint32_t>(SpecKey::kDiv16)) {
        if (ck != ek) {
          return refuse(l.param,
                        std::string("is assumed ") +
                            (l.kind == LeafKind::kPointer ? "16-byte aligned" : "divisible by 16") +
                            " there (" + code_text(ec) + "), and this call's is not",
                        true);
        }
        ++m.assumptions;
      }
      if (ck != ek) same = false;
      continue;
    }
    const uint64_t* cw = nullptr;
    const size_t cn = c.item(&cw);
    const bool one = is_specialised_one(k, l);
    if (one && e.next_is_code()) {
      const uint32_t ec = e.code();
      if (ec != plain_i32[0] && ec != plain_i32[1]) {
        return refuse(l.param,
                      "is 1 in this call, which Triton makes a constexpr; an entry "
                      "serves that only as an i32 with no divisibility assumption, "
                      "and this one's is " +
                          code_text(ec),
                      (ec & ~kCodeKeyMask) == (plain_i32[0] & ~kCodeKeyMask));
      }
      m.ones.push_back(i);
      same = false;
      continue;
    }
    const uint64_t* ew = nullptr;
    const size_t en = e.item(&ew);
    if (en == 0) {
      if (e.next_is_code()) {
        return refuse(l.param, "is a runtime " + code_text(e.code()) +
                                   " there, a constexpr, a tuple or a descriptor in this call");
      }
      return refuse(l.param, "has no counterpart there (another signature)");
    }
    if (en != cn || std::memcmp(ew, cw, en * sizeof(uint64_t)) != 0) {
      if (l.kind == LeafKind::kConstexpr && (ew[0] & 0xFFu) == (cw[0] & 0xFFu)) {
        return refuse(l.param,
                      one ? "is compiled in as another constexpr there, as 1 here"
                          : "is compiled in as another constexpr value there",
                      true);
      }
      return refuse(l.param, "is specialised as another kind of value there (another signature)");
    }
    if (one) ++m.assumptions;
  }
  if (!e.at_end()) {
    return refuse(leaves.n == 0 ? 0 : leaves.leaves[leaves.n - 1].param,
                  "is followed by more values there (another signature)");
  }
  m.verdict = same ? KeyMatch::Verdict::kExact : KeyMatch::Verdict::kServes;
  return m;
}

std::vector<uint32_t> one_slots(const LeafList& leaves, const std::vector<uint32_t>& ones) {
  std::vector<uint32_t> out;
  uint32_t np = 0;
  size_t j = 0;
  for (uint32_t i = 0; i < leaves.n; ++i) {
    const LeafKind kind = leaves.leaves[i].kind;
    if (kind == LeafKind::kScalar || kind == LeafKind::kPointer) {
      ++np;
    } else if (j < ones.size() && ones[j] == i) {
      out.push_back(np++);
      ++j;
    }
  }
  return out;
}

bool fast_key_and_pack(const KernelState& kernel, const ArgValue* args, Key& key, uint64_t* slots,
                       uint32_t* nslots, DescSlots* descs) {
  return fast_key_and_pack_first(kernel, args, kernel.specs.size(), key, slots, nslots, descs);
}

bool fast_key_and_pack_first(const KernelState& kernel, const ArgValue* args, size_t n, Key& key,
                             uint64_t* slots, uint32_t* nslots, DescSlots* descs) {
  if (descs != nullptr) descs->n = 0;
  const ParamSpec* specs = kernel.specs.data();
  uint64_t* w = key.w;
  uint64_t* out = slots;
  KeyWriter kw(kernel, key);
  key.n = 0;
  key.process_local = 0;
  Run run;
  auto runtime_leaf = [&](uint64_t code) {
    if (const uint64_t full = run.add(code)) *w++ = full;
  };
  for (size_t i = 0; i < n; ++i) {
    const ParamSpec& p = specs[i];
    const ArgValue& v = args[i];
    if (TE_UNLIKELY(p.ann != AnnKind::kNone)) return false;
    if (TE_LIKELY(!p.is_constexpr)) {
      switch (v.kind) {
        case ArgKind::kPointer:
          if (TE_UNLIKELY(v.dtype == DType::invalid || (v.flags & kArgHostMemory) != 0))
            return false;
          runtime_leaf(run_code(LeafKind::kPointer, v.dtype, int_key(v, p.specialize, p.align),
                                p.is_const ? 1 : 0));
          *out++ = v.u;
          continue;
        case ArgKind::kInt:
          if (p.specialize && int_is_one(v)) break;  // a constexpr leaf, below
          runtime_leaf(
              run_code(LeafKind::kScalar,
                       v.big ? DType::u64 : (int_fits(DType::i32, v) ? DType::i32 : DType::i64),
                       int_key(v, p.specialize, p.align), 0));
          *out++ = v.u;
          continue;
        case ArgKind::kBool:
          runtime_leaf(run_code(LeafKind::kScalar, DType::u1, SpecKey::kNone, 0));
          *out++ = v.u;
          continue;
        case ArgKind::kFloat: {
          runtime_leaf(run_code(LeafKind::kScalar, DType::fp32, SpecKey::kNone, 0));
          const float f = static_cast<float>(v.f);
          uint32_t bits;
          std::memcpy(&bits, &f, sizeof(bits));
          *out++ = bits;
          continue;
        }
        case ArgKind::kTensorDesc: {
          // The general path's leaf word (Writer::descriptor); packed after the lookup.
          if (TE_UNLIKELY(descs == nullptr || descs->n == kMaxTensorDescs ||
                          (v.flags & kArgHostMemory) != 0 ||
                          static_cast<size_t>(w - key.w) + 2 > kMaxKeyWords)) {
            return false;
          }
          const auto* d = static_cast<const TensorDescriptor*>(v.ptr);
          const uint32_t count = check_descriptor(kernel, static_cast<uint32_t>(i), *d);
          if (const uint64_t pending = run.flush()) *w++ = pending;
          *w++ = leaf_word(LeafKind::kTensorDesc, v.dtype, SpecKey::kNone, 0, count);
          descs->param[descs->n] = static_cast<uint16_t>(i);
          descs->at[descs->n] = static_cast<uint16_t>(out - slots);
          descs->desc[descs->n++] = d;
          continue;
        }
        case ArgKind::kNone:
        case ArgKind::kConstexpr:
        case ArgKind::kJitFunction:
          break;  // constexpr leaves
        default:
          return false;  // forced scalars, tuples; strings, dtypes, objects raise there
      }
    } else if (TE_UNLIKELY(contains_pointer(v))) {
      return false;  // raises on the general path
    }
    // A constexpr leaf: the pending run, its word and the value's (KeyWriter::value's words).
    if (const uint64_t pending = run.flush()) *w++ = pending;
    if (TE_LIKELY(v.kind == ArgKind::kInt || v.kind == ArgKind::kBool ||
                  v.kind == ArgKind::kFloat || v.kind == ArgKind::kNone)) {
      if (TE_UNLIKELY(static_cast<size_t>(w - key.w) + 3 > kMaxKeyWords)) return false;
      *w++ = leaf_word(LeafKind::kConstexpr, DType::invalid, SpecKey::kNone, 0, 0);
      *w++ = static_cast<uint64_t>(v.kind) | static_cast<uint64_t>(v.dtype) << 8 |
             static_cast<uint64_t>(v.big) << 16;
      if (v.kind != ArgKind::kNone) *w++ = v.u;
      continue;
    }
    if (TE_UNLIKELY(v.kind == ArgKind::kTuple || v.kind == ArgKind::kPyObject ||
                    constexpr_words(v) > kFastConstexprWords ||
                    static_cast<size_t>(w - key.w) + 1 + kFastConstexprWords > kMaxKeyWords)) {
      return false;
    }
    *w++ = leaf_word(LeafKind::kConstexpr, DType::invalid, SpecKey::kNone, 0, 0);
    key.n = static_cast<uint32_t>(w - key.w);
    kw.value(v);
    w = key.w + key.n;
  }
  if (const uint64_t pending = run.flush()) *w++ = pending;
  key.n = static_cast<uint32_t>(w - key.w);
  *nslots = static_cast<uint32_t>(out - slots);
  return true;
}

// ---- packing ----------------------------------------------------------------------------

bool double_to_half_bits(double x, uint16_t* out) {
  // The algorithm of CPython's PyFloat_Pack2, so results match Triton's launcher bit for bit.
  unsigned short sign;
  int e;
  unsigned short bits;
  if (x == 0.0) {
    sign = std::signbit(x) ? 1 : 0;
    e = 0;
    bits = 0;
  } else if (std::isinf(x)) {
    sign = x < 0.0 ? 1 : 0;
    e = 0x1f;
    bits = 0;
  } else if (std::isnan(x)) {
    sign = std::signbit(x) ? 1 : 0;
    e = 0x1f;
    bits = 512;
  } else {
    sign = x < 0.0 ? 1 : 0;
    if (sign) x = -x;
    double f = std::frexp(x, &e);
    f *= 2.0;
    e--;
    if (e >= 16) return false;
    if (e < -25) {
      f = 0.0;
      e = 0;
    } else if (e < -14) {
      f = std::ldexp(f, 14 + e);
      e = 0;
    } else {
      e += 15;
      f -= 1.0;
    }
    f *= 1024.0;
    bits = static_cast<unsigned short>(f);
    if ((f - bits > 0.5) || ((f - bits == 0.5) && (bits % 2 == 1))) {
      ++bits;
      if (bits == 1024) {
        bits = 0;
        ++e;
        if (e == 31) return false;
      }
    }
  }
  *out = static_cast<uint16_t>(bits | (e << 10) | (sign << 15));
  return true;
}

[[noreturn]] void throw_host_memory(const KernelState& k, uint32_t param) {
  TE_THROW(ValueError) << arg_where(k, param)
                       << ": got a CPU tensor; a GPU launch needs device memory. Move it to the "
                          "GPU, or launch with triton_embed::launch (<triton_embed/torch.h>), "
                          "which runs CPU tensors through Triton's interpreter";
}

uint64_t pack_leaf(const KernelState& kernel, const Leaf& leaf) {
  const ArgValue& v = *leaf.value;
  if (leaf.kind == LeafKind::kPointer) {
    if (TE_UNLIKELY((v.flags & kArgHostMemory) != 0)) throw_host_memory(kernel, leaf.param);
    return v.kind == ArgKind::kNone ? 0 : v.u;
  }
  switch (leaf.dtype) {
    case DType::fp16: {
      uint16_t h;
      TE_CHECK(double_to_half_bits(as_double(v), &h), OverflowError)
          << arg_where(kernel, leaf.param) << ": " << as_double(v)
          << " is too large for fp16 (largest finite value 65504)";
      return h;
    }
    case DType::bf16: {
      const float f = static_cast<float>(as_double(v));
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u >> 16;
    }
    case DType::fp32: {
      const float f = static_cast<float>(as_double(v));
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    case DType::fp64: {
      const double d = as_double(v);
      uint64_t u;
      std::memcpy(&u, &d, 8);
      return u;
    }
    default:
      return v.u;  // integers: two's complement, sign-extended to 64 bits
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
