#pragma once

// The byte codec of the opaque fields this library writes into bundles (src/bundle/
// kernel_table.cc: parameter tables and options; src/bundle/decisions.cc: layers and tuning
// records): little-endian integers, length-prefixed bytes and ArgValues. A value's kind and
// dtype are stored as the numbers of bundle/enum_codes.h. A Reader that runs out of bytes or
// meets an unknown tag throws BundleError (kCorrupt) naming the bundle, the kernel and the
// field.

#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/errors.h"
#include "bundle/enum_codes.h"
#include "core/kernel_state.h"
#include "triton_embed/error.h"

namespace triton_embed::detail::bundle {

// A default encoded as "needs Python" (an object only the interpreter holds).
constexpr uint8_t kNeedsPython = 0xFF;

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
  void i32(int32_t v) { u32(static_cast<uint32_t>(v)); }
  void bytes(std::string_view s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.append(s.data(), s.size());
  }
  void value(const ArgValue& v) {
    if (v.kind == ArgKind::kPyObject || v.kind == ArgKind::kJitFunction ||
        v.kind == ArgKind::kTensorDesc) {
      u8(kNeedsPython);
      return;
    }
    code(v.kind);
    code(v.dtype);
    u8(v.big);
    u8(v.flags);
    switch (v.kind) {
      case ArgKind::kStr:
        bytes(std::string_view(v.s, v.count));
        return;
      case ArgKind::kConstexpr:
        value(*v.elems);
        return;
      case ArgKind::kTuple:
        u32(v.count);
        for (uint32_t i = 0; i < v.count; ++i) value(v.elems[i]);
        return;
      case ArgKind::kNone:
      case ArgKind::kDType:
        return;
      default:  // numbers and pointers: the 64-bit payload
        u64(v.u);
        return;
    }
  }
  // An enumerator as the number bundles store for it (bundle/enum_codes.h).
  template <class E>
  void code(E v) {
    const uint8_t c = to_disk(v);
    TE_ICHECK(c != kNoCode) << "an enumerator with no number in src/bundle/enum_codes.h: "
                            << static_cast<int>(v);
    u8(c);
  }
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  // `what` names the field being read in errors ("parameter table", "layers", ...).
  Reader(std::string_view b, KernelState& k, const std::string& where, const char* what)
      : b_(b), k_(k), where_(where), what_(what) {}
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(b_[pos_++]);
  }
  uint32_t u32() {
    uint32_t v;
    raw(&v, sizeof(v));
    return v;
  }
  uint64_t u64() {
    uint64_t v;
    raw(&v, sizeof(v));
    return v;
  }
  std::string_view bytes() {
    const uint32_t n = u32();
    need(n);
    std::string_view s = b_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A value; false for a default that needs Python. Strings and nested values are interned
  // in the kernel's value storage, as the JIT layer interns what it converts. Constexprs and
  // tuples nest at most kMaxValueDepth deep (Triton's own defaults and results nest a few).
  static constexpr int kMaxValueDepth = 32;
  bool value(ArgValue& v, int depth = 1) {
    v = ArgValue{};
    if (depth > kMaxValueDepth) fail("a value nested deeper than 32 tuples or constexprs");
    const uint8_t kind = u8();
    if (kind == kNeedsPython) return false;
    if (!from_disk(kind, &v.kind)) fail("unknown value kind");
    if (!from_disk(u8(), &v.dtype)) fail("an unknown dtype");
    v.big = u8();
    v.flags = u8();
    switch (v.kind) {
      case ArgKind::kStr: {
        const std::string_view s = bytes();
        std::lock_guard<std::mutex> lock(k_.values_mu);
        k_.value_strings.emplace_back(s);
        v.s = k_.value_strings.back().c_str();
        v.count = static_cast<uint32_t>(s.size());
        return true;
      }
      case ArgKind::kConstexpr: {
        std::vector<ArgValue> inner(1);
        if (!value(inner[0], depth + 1)) return false;
        v.elems = intern(std::move(inner));
        return true;
      }
      case ArgKind::kTuple: {
        v.count = u32();
        if (v.count > kMaxArgs * 4) fail("a tuple default of implausible length");
        std::vector<ArgValue> elems(v.count);
        for (auto& e : elems) {
          if (!value(e, depth + 1)) return false;
        }
        v.elems = intern(std::move(elems));
        return true;
      }
      case ArgKind::kNone:
      case ArgKind::kDType:
        return true;
      case ArgKind::kPyObject:
      case ArgKind::kJitFunction:
      case ArgKind::kTensorDesc:
        fail("an object value where only plain data is stored");
      default:
        v.u = u64();
        return true;
    }
  }
  // An enumerator stored as bundle/enum_codes.h numbers it; fails naming `what` for a number
  // it does not name.
  template <class E>
  E code(const char* what) {
    E v{};
    if (!from_disk(u8(), &v)) fail(what);
    return v;
  }
  bool done() const noexcept { return pos_ == b_.size(); }
  int32_t i32() { return static_cast<int32_t>(u32()); }
  [[noreturn]] void fail(const char* what) {
    throw BundleError(where_ + ": its " + what_ + " is damaged (" + what + " at byte " +
                          std::to_string(pos_) + " of " + std::to_string(b_.size()) +
                          "); rebuild the bundle",
                      BundleError::Reason::kCorrupt);
  }

 private:
  void need(size_t n) {
    if (b_.size() - pos_ < n) fail("it ends early");
  }
  void raw(void* p, size_t n) {
    need(n);
    std::memcpy(p, b_.data() + pos_, n);
    pos_ += n;
  }
  const ArgValue* intern(std::vector<ArgValue> vals) {
    std::lock_guard<std::mutex> lock(k_.values_mu);
    k_.value_nested.push_back(std::move(vals));
    return k_.value_nested.back().data();
  }
  std::string_view b_;
  size_t pos_ = 0;
  KernelState& k_;
  const std::string& where_;
  const char* what_;
};

}  // namespace triton_embed::detail::bundle
