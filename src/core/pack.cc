// Packing a call's runtime values (core/pack.h): the one-pass key and pack that a cache hit
// runs (key_and_pack), and pack_leaf's patterns for the general path.

#include "core/pack.h"

#include <cmath>
#include <cstring>

#include "base/errors.h"
#include "core/arg_format.h"
#include "core/key_words.h"
#include "core/tensor_map.h"

namespace triton_embed::detail {

namespace {

double as_double(const ArgValue& v) {
  if (v.kind == ArgKind::kFloat || (v.kind == ArgKind::kScalar && dtype_is_float(v.dtype))) {
    return v.f;
  }
  return v.big ? static_cast<double>(v.u) : static_cast<double>(v.i);
}

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

bool key_and_pack(const KernelState& kernel, const ArgValue* args, Key& key, uint64_t* slots,
                  uint32_t* nslots, DescSlots* descs) {
  return key_and_pack_first(kernel, args, kernel.specs.size(), key, slots, nslots, descs);
}

bool key_and_pack_first(const KernelState& kernel, const ArgValue* args, size_t n, Key& key,
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

}  // namespace triton_embed::detail
