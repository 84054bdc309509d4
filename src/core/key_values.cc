#include "core/key_values.h"

#include <cstring>
#include <memory>

#include "base/errors.h"
#include "core/cache_key.h"
#include "core/key_words.h"
#include "core/specialize.h"
#include "core/word_hash.h"

namespace triton_embed::detail {

namespace {

// Addresses the rebuilt pointers and descriptors take: never dereferenced (a compile reads
// their alignment only).
constexpr uint64_t kAligned = 0x10000;
constexpr uint64_t kUnaligned = 0x10004;

// An integer of type t that specialises with `key` (Triton's native_specialize_impl): 1 for
// the integer 1, a multiple of 16 for "D", else one that is neither (also for no key: a
// do_not_specialize parameter's, whose value the key does not say).
ArgValue integer_for(DType t, SpecKey key) {
  ArgValue v{};
  v.kind = ArgKind::kInt;
  if (key == SpecKey::kOne) {  // a forced or annotated integer type given 1
    v.i = 1;
    return v;
  }
  const bool d = key == SpecKey::kDiv16;
  switch (t) {
    case DType::i64:
      v.i = (int64_t{1} << 40) + (d ? 0 : 1);  // beyond 32 bits, as Triton types an i64
      break;
    case DType::u64:
      v.big = 1;
      v.u = (uint64_t{1} << 63) + (d ? 0 : 1);  // beyond INT64_MAX
      break;
    default:
      v.i = d ? 16 : 17;
      break;
  }
  return v;
}

class Rebuild {
 public:
  Rebuild(const KernelState& k, const uint64_t* w, size_t n, KeyCallKind kind, int only,
          KeyCall& out)
      : k_(k), r_(w, n), generic_(kind == KeyCallKind::kGeneric), only_(only), out_(out) {}

  bool run(std::string* why) {
    out_.args.assign(k_.specs.size(), ArgValue{});
    for (uint32_t p = 0; p < k_.specs.size(); ++p) {
      param_ = p;
      const ParamSpec& s = k_.specs[p];
      const bool ok = s.is_constexpr ? constexpr_leaf(out_.args[p], /*runtime=*/false)
                      : s.ann != AnnKind::kNone
                          ? annotated(s, out_.args[p])
                          : value(out_.args[p], s.specialize, s.align, /*in_tuple=*/false);
      if (!ok) {
        *why = "argument #" + std::to_string(p) + " '" + k_.params[p].name + "': " + why_;
        return false;
      }
    }
    if (!r_.at_end()) {
      *why = "the key holds more values than the kernel has parameters";
      return false;
    }
    return true;
  }

 private:
  bool fail(const std::string& what) {
    why_ = what;
    return false;
  }

  // A parameter without annotation (or a tuple's element): a runtime leaf's code, or an item.
  bool value(ArgValue& v, bool specialize, bool align, bool in_tuple) {
    if (r_.next_is_code()) return runtime(v, r_.code(), specialize);
    const uint64_t* item = nullptr;
    const size_t words = r_.item(&item);
    if (words == 0) return fail("the key ends, or its words do not read as a value");
    switch (static_cast<LeafKind>(item[0] & 0xFFu)) {
      case LeafKind::kConstexpr:
        return constexpr_value(v, item + 1, words - 1, /*runtime=*/true);
      case LeafKind::kTupleBegin: {
        const uint32_t count = static_cast<uint32_t>(item[0] >> 32);
        if (count > kMaxLeaves) return fail("a tuple of " + std::to_string(count) + " values");
        std::vector<ArgValue>& elems = out_.nested.emplace_back(count);
        // Triton specialises a tuple's elements with the default flags, whatever the
        // parameter's (core/specialize.cc spec_value).
        for (uint32_t i = 0; i < count; ++i) {
          if (!value(elems[i], true, true, true)) return false;
        }
        const uint64_t* end = nullptr;
        if (r_.item(&end) != 1 || (end[0] & 0xFFu) != static_cast<uint64_t>(LeafKind::kTupleEnd)) {
          return fail("a tuple whose end the key does not mark");
        }
        v = ArgValue{};
        v.kind = ArgKind::kTuple;
        v.count = count;
        v.elems = elems.data();
        return true;
      }
      case LeafKind::kTensorDesc:
        if (in_tuple) return fail("a tensor descriptor inside a tuple");
        return descriptor(v, static_cast<DType>((item[0] >> 8) & 0xFFu),
                          static_cast<uint32_t>(item[0] >> 32));
      default:
        return fail("a word that is no value's");
    }
  }

  // A runtime leaf: its code says the type and the specialisation.
  bool runtime(ArgValue& v, uint32_t code, bool specialize) {
    const DType t = static_cast<DType>(code & kCodeDTypeMask);
    const SpecKey key = code_key(code);
    v = ArgValue{};
    if ((code & kCodePointer) != 0) {
      v.kind = ArgKind::kPointer;
      v.dtype = t;
      v.u = key == SpecKey::kDiv16 ? kAligned : kUnaligned;
      return true;
    }
    switch (t) {
      case DType::u1:
        v.kind = ArgKind::kBool;
        return true;
      case DType::fp32:  // a Python float
        v.kind = ArgKind::kFloat;
        v.f = 0.5;
        return true;
      case DType::i32:
      case DType::i64:
      case DType::u64: {
        const SpecKey k = generic(key, specialize);
        v = integer_for(t, k);
        if (k == SpecKey::kOne) {  // a forced integer type given 1 (a plain 1 is a constexpr)
          v.kind = ArgKind::kScalar;
          v.dtype = t;
        }
        return true;
      }
      default:
        // A forced scalar type (triton_embed::f16(x), i8(x), ...).
        if (!dtype_is_scalar_arg(t)) return fail("a runtime value of no scalar type");
        v = integer_for(t, dtype_is_float(t) ? SpecKey::kNone : generic(key, specialize));
        v.kind = ArgKind::kScalar;
        v.dtype = t;
        if (dtype_is_float(t)) v.f = 0.5;
        return true;
    }
  }

  // The specialisation a rebuilt integer takes: the key's, or none for a generic call.
  SpecKey generic(SpecKey key, bool specialize) {
    if (!generic_ || !specialize || key == SpecKey::kNone || key == SpecKey::kEmpty) return key;
    return widen_this() ? SpecKey::kEmpty : key;
  }

  // Whether the next integer leaf with an assumption loses it (counting it).
  bool widen_this() {
    const int index = seen_++;
    if (only_ >= 0 && index != only_) return false;
    ++out_.widened;
    out_.widened_params.push_back(param_);
    return true;
  }

  // A parameter with a scalar or pointer annotation: always a runtime leaf.
  bool annotated(const ParamSpec& s, ArgValue& v) {
    if (!r_.next_is_code())
      return fail("an annotated parameter the key holds no runtime value for");
    const uint32_t code = r_.code();
    const SpecKey key = code_key(code);
    v = ArgValue{};
    if (s.ann == AnnKind::kPointer) {
      if (key == SpecKey::kNone && s.specialize) return true;  // None: a null pointer
      v.kind = ArgKind::kPointer;
      v.dtype = s.ann_dtype;
      v.u = key == SpecKey::kDiv16 ? kAligned : kUnaligned;
      return true;
    }
    if (dtype_is_float(s.ann_dtype)) {
      v.kind = ArgKind::kFloat;
      v.f = 0.5;
      return true;
    }
    if (s.ann_dtype == DType::u1 || (key == SpecKey::kNone && s.specialize)) {
      v.kind = ArgKind::kBool;  // an annotated integer given a bool has no key
      return true;
    }
    v = integer_for(DType::i32, generic(key, s.specialize));
    return true;
  }

  // A constexpr leaf: a constexpr parameter's value, or a runtime parameter's None, integer 1,
  // tl.constexpr(...) or function.
  bool constexpr_leaf(ArgValue& v, bool runtime) {
    const uint64_t* item = nullptr;
    const size_t words = r_.item(&item);
    if (words == 0 || (item[0] & 0xFFu) != static_cast<uint64_t>(LeafKind::kConstexpr)) {
      return fail("a constexpr parameter the key holds no constant for");
    }
    return constexpr_value(v, item + 1, words - 1, runtime);
  }

  bool constexpr_value(ArgValue& v, const uint64_t* w, size_t n, bool runtime) {
    size_t at = 0;
    if (!decode(v, w, n, at, 0) || at != n) return false;
    if (runtime && generic_ && v.kind == ArgKind::kInt && !v.big && v.i == 1 &&
        k_.specs[param_].specialize && widen_this()) {
      v.i = 17;  // the integer 1 Triton makes a constexpr of: a plain i32 serves it
    }
    return true;
  }

  // A constant's words as KeyWriter::value writes them (core/key_words.h).
  bool decode(ArgValue& v, const uint64_t* w, size_t n, size_t& at, int depth) {
    if (at >= n || depth > 32) return fail("a constant the key cuts short");
    const uint64_t tag = w[at++];
    v = ArgValue{};
    v.kind = static_cast<ArgKind>(tag & 0xFFu);
    v.dtype = static_cast<DType>((tag >> 8) & 0xFFu);
    v.big = static_cast<uint8_t>((tag >> 16) & 1u);
    const uint32_t count = static_cast<uint32_t>(tag >> 32);
    switch (v.kind) {
      case ArgKind::kNone:
      case ArgKind::kDType:
        return true;
      case ArgKind::kBool:
      case ArgKind::kInt:
      case ArgKind::kFloat:
      case ArgKind::kScalar:
        if (at >= n) return fail("a constant the key cuts short");
        v.u = w[at++];
        return true;
      case ArgKind::kStr: {
        const size_t words = (static_cast<size_t>(count) + 7) / 8;
        if (words > n - at) return fail("a string the key cuts short");
        std::string& s = out_.strings.emplace_back(count, '\0');
        if (count != 0) std::memcpy(&s[0], w + at, count);
        at += words;
        v.s = s.data();
        v.count = count;
        return true;
      }
      case ArgKind::kConstexpr: {
        std::vector<ArgValue>& inner = out_.nested.emplace_back(1);
        if (!decode(inner[0], w, n, at, depth + 1)) return false;
        v.elems = inner.data();
        return true;
      }
      case ArgKind::kTuple: {
        if (count > kMaxLeaves) return fail("a constant tuple of " + std::to_string(count));
        std::vector<ArgValue>& elems = out_.nested.emplace_back(count);
        for (uint32_t i = 0; i < count; ++i) {
          if (!decode(elems[i], w, n, at, depth + 1)) return false;
        }
        v.count = count;
        v.elems = elems.data();
        return true;
      }
      case ArgKind::kJitFunction:
        return fail("a @triton.jit function, which only the process that made the key holds");
      case ArgKind::kPyObject:
        return fail("a Python object, which only the process that made the key holds");
      default:
        return fail("a constant of a kind no call passes");
    }
  }

  // A host tensor descriptor of element type t whose rank and block shape are `count`
  // (check_descriptor's word): contiguous, one block's shape (widened to 16 bytes in its last
  // dimension), at an aligned address.
  bool descriptor(ArgValue& v, DType t, uint32_t count) {
    const int rank = static_cast<int>(count & 7u);
    const int elem = dtype_size(t);
    if (rank < 1 || rank > TensorDescriptor::kMaxRank || elem <= 0) {
      return fail("a tensor descriptor the key does not describe");
    }
    int64_t block[TensorDescriptor::kMaxRank], shape[TensorDescriptor::kMaxRank],
        strides[TensorDescriptor::kMaxRank];
    for (int i = 0; i < rank; ++i) {
      const uint32_t log2 = (count >> (3 + 5 * i)) & 31u;
      if (log2 > 20)
        return fail("a tensor descriptor's block dimension of 2^" + std::to_string(log2));
      block[i] = shape[i] = int64_t{1} << log2;
    }
    if (shape[rank - 1] * elem < 16) shape[rank - 1] = 16 / elem;
    int64_t stride = 1;
    for (int i = rank - 1; i >= 0; --i) {
      strides[i] = stride;
      stride *= shape[i];
    }
    const TensorDescriptor& d =
        out_.descriptors.emplace_back(kAligned, t, rank, shape, strides, block);
    v = ArgValue{};
    v.kind = ArgKind::kTensorDesc;
    v.dtype = t;
    v.ptr = &d;
    return true;
  }

  const KernelState& k_;
  KeyReader r_;
  bool generic_;
  int only_;
  KeyCall& out_;
  uint32_t param_ = 0;
  int seen_ = 0;  // integer leaves with an assumption so far
  std::string why_;
};

}  // namespace

bool call_from_key(const KernelState& k, const uint64_t* w, size_t n, KeyCallKind kind,
                   KeyCall* out, std::string* why, int only) {
  *out = KeyCall{};
  if (n > kMaxKeyWords) {
    *why = "a key of " + std::to_string(n) + " words (a call's has at most " +
           std::to_string(kMaxKeyWords) + ")";
    return false;
  }
  if (!Rebuild(k, w, n, kind, only, *out).run(why)) return false;
  // What the call specialises as, against the key: the same (kAsKeyed), or served by it
  // (kGeneric). A rule of Triton's this rebuild does not follow shows up here, not as a wrong
  // entry.
  auto leaves = std::make_unique<LeafList>();
  auto key = std::make_unique<Key>();
  try {
    specialize(k, out->args.data(), *leaves);
    build_key(k, *leaves, *key);
  } catch (const Error& e) {
    *why = std::string("the rebuilt call does not specialise: ") + e.what();
    return false;
  }
  out->key.assign(key->w, key->w + key->n);
  if (kind == KeyCallKind::kAsKeyed) {
    if (key->n != n || std::memcmp(key->w, w, n * sizeof(uint64_t)) != 0) {
      *why = "the rebuilt call specialises as another key";
      return false;
    }
    return true;
  }
  KeyCall keyed;
  std::string keyed_why;
  if (!Rebuild(k, w, n, KeyCallKind::kAsKeyed, -1, keyed).run(&keyed_why)) {
    *why = keyed_why;
    return false;
  }
  auto keyed_leaves = std::make_unique<LeafList>();
  specialize(k, keyed.args.data(), *keyed_leaves);
  Key call;
  call.n = static_cast<uint32_t>(n);
  std::memcpy(call.w, w, n * sizeof(uint64_t));
  const KeyMatch m = match_key(k, *keyed_leaves, call, key->w, key->n, /*explain=*/true);
  if (m.verdict == KeyMatch::Verdict::kRefused) {
    *why = "the generic call's entry would not serve the key's calls: " + m.why;
    return false;
  }
  return true;
}

uint64_t serving_class(const uint64_t* w, size_t n) {
  constexpr uint64_t kPlainI32 =
      run_code(LeafKind::kScalar, DType::i32, SpecKey::kNone, 0) & ~uint64_t{kCodeKeyMask};
  KeyReader r(w, n);
  uint64_t h = 0x243F6A8885A308D3ull;
  size_t tokens = 0;
  while (!r.at_end()) {
    ++tokens;
    if (r.next_is_code()) {
      h = word_hash_round(h, r.code() & ~kCodeKeyMask);
      continue;
    }
    const uint64_t* item = nullptr;
    const size_t words = r.item(&item);
    if (words == 0) {  // malformed: the rest as it is (such a key serves nothing but itself)
      return hash_words(h, w, static_cast<uint32_t>(n));
    }
    // A constexpr integer 1: leaf word, tag, value.
    // The value's tag: its kind and its `big` bit (a dtype beside kInt changes neither what
    // the value is nor what serves it: is_specialised_one reads the value alone).
    const bool one = words == 3 &&
                     (item[0] & 0xFFu) == static_cast<uint64_t>(LeafKind::kConstexpr) &&
                     (item[1] & 0xFFu) == static_cast<uint64_t>(ArgKind::kInt) &&
                     ((item[1] >> 16) & 1u) == 0 && item[2] == 1;
    if (one) {
      h = word_hash_round(h, kPlainI32);
      continue;
    }
    for (size_t i = 0; i < words; ++i) h = word_hash_round(h, item[i]);
  }
  h = (h ^ tokens) * kWordHashMul;
  return h ^ (h >> 29);
}

}  // namespace triton_embed::detail
