#include "bundle/kernel_table.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/errors.h"
#include "triton_embed/error.h"
#include "triton_embed/named.h"

namespace triton_embed::detail::bundle {

namespace {

// The parameter table's own version: bumped when its encoding changes (the file format's
// version covers the container, not the opaque fields the integration writes).
constexpr uint8_t kParamsVersion = 1;
// A default encoded as "needs Python" (an object only the interpreter holds).
constexpr uint8_t kNeedsPython = 0xFF;

class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) { raw(&v, sizeof(v)); }
  void u64(uint64_t v) { raw(&v, sizeof(v)); }
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
    u8(static_cast<uint8_t>(v.kind));
    u8(static_cast<uint8_t>(v.dtype));
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
  std::string take() { return std::move(out_); }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string out_;
};

class Reader {
 public:
  Reader(std::string_view b, KernelState& k, const std::string& where)
      : b_(b), k_(k), where_(where) {}
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
  // in the kernel's value storage, as the JIT layer interns what it converts.
  bool value(ArgValue& v) {
    v = ArgValue{};
    const uint8_t kind = u8();
    if (kind == kNeedsPython) return false;
    if (kind > static_cast<uint8_t>(ArgKind::kTensorDesc)) fail("unknown value kind");
    v.kind = static_cast<ArgKind>(kind);
    v.dtype = static_cast<DType>(u8());
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
        if (!value(inner[0])) return false;
        v.elems = intern(std::move(inner));
        return true;
      }
      case ArgKind::kTuple: {
        v.count = u32();
        if (v.count > kMaxArgs * 4) fail("a tuple default of implausible length");
        std::vector<ArgValue> elems(v.count);
        for (auto& e : elems) {
          if (!value(e)) return false;
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
  bool done() const noexcept { return pos_ == b_.size(); }
  [[noreturn]] void fail(const char* what) {
    throw BundleError(where_ + ": its parameter table is damaged (" + what + " at byte " +
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
};

}  // namespace

std::string encode_params(const KernelState& k) {
  Writer w;
  w.u8(kParamsVersion);
  w.u32(static_cast<uint32_t>(k.triton_version));
  w.u32(static_cast<uint32_t>(k.params.size()));
  for (size_t i = 0; i < k.params.size(); ++i) {
    const ParamInfo& p = k.params[i];
    const ParamSpec& s = k.specs[i];
    w.bytes(p.name);
    w.u8(static_cast<uint8_t>(p.is_constexpr | p.do_not_specialize << 1 |
                              p.do_not_specialize_on_alignment << 2 | p.is_const << 3 |
                              p.has_default << 4));
    w.bytes(p.annotation);
    w.bytes(p.default_repr);
    w.u8(static_cast<uint8_t>(s.is_constexpr | s.specialize << 1 | s.align << 2 |
                              s.is_const << 3));
    w.u8(static_cast<uint8_t>(s.ann));
    w.u8(static_cast<uint8_t>(s.ann_dtype));
    if (p.has_default) w.value(k.defaults[i]);
  }
  return w.take();
}

void decode_params(std::string_view bytes, KernelState& k, const std::string& where) {
  Reader r(bytes, k, where);
  const uint8_t version = r.u8();
  if (version != kParamsVersion) {
    throw BundleError(where + ": its parameter table is of version " + std::to_string(version) +
                          ", this library reads version " + std::to_string(kParamsVersion) +
                          ": rebuild the bundle with this version of triton_embed",
                      version > kParamsVersion ? BundleError::Reason::kTooNew
                                               : BundleError::Reason::kCorrupt);
  }
  k.triton_version = static_cast<int>(r.u32());
  const uint32_t n = r.u32();
  if (n > kMaxArgs) r.fail("more parameters than a kernel can have");
  k.params.clear();
  k.specs.clear();
  k.name_hashes.clear();
  k.defaults.clear();
  k.min_args = 0;
  bool seen_default = false;
  for (uint32_t i = 0; i < n; ++i) {
    ParamInfo p;
    ParamSpec s;
    p.name = std::string(r.bytes());
    p.index = static_cast<int>(i);
    const uint8_t flags = r.u8();
    p.is_constexpr = flags & 1;
    p.do_not_specialize = flags & 2;
    p.do_not_specialize_on_alignment = flags & 4;
    p.is_const = flags & 8;
    p.has_default = flags & 16;
    p.annotation = std::string(r.bytes());
    p.default_repr = std::string(r.bytes());
    const uint8_t sflags = r.u8();
    s.is_constexpr = sflags & 1;
    s.specialize = sflags & 2;
    s.align = sflags & 4;
    s.is_const = sflags & 8;
    const uint8_t ann = r.u8();
    if (ann > static_cast<uint8_t>(AnnKind::kUnsupported)) r.fail("unknown annotation kind");
    s.ann = static_cast<AnnKind>(ann);
    s.ann_dtype = static_cast<DType>(r.u8());
    ArgValue def{};
    def.kind = ArgKind::kNone;
    // A default only Python holds cannot be filled in here: the parameters up to it must be
    // passed (min_args), as for one without a default.
    const bool usable_default = p.has_default && r.value(def);
    if (usable_default) {
      seen_default = true;
    } else if (!seen_default || p.has_default) {
      k.min_args = k.params.size() + 1;
      if (!usable_default) def = ArgValue{};
    }
    k.name_hashes.push_back(name_hash(p.name.data(), p.name.size()));
    k.params.push_back(std::move(p));
    k.specs.push_back(s);
    k.defaults.push_back(def);
  }
  if (!r.done()) r.fail("bytes after the last parameter");
}

std::string encode_options(const Options& options) {
  std::string out;
  for (const auto& [name, v] : options.entries()) {
    TE_CHECK(name.find_first_of("=\n") == std::string::npos, ValueError)
        << "option name '" << name << "' cannot be stored in a bundle";
    out += name;
    out += '=';
    char buf[64];
    switch (v.kind()) {
      case OptionValue::Kind::kBool:
        out += v.as_bool() ? "b1" : "b0";
        break;
      case OptionValue::Kind::kInt:
        std::snprintf(buf, sizeof(buf), "i%" PRId64, v.as_int());
        out += buf;
        break;
      case OptionValue::Kind::kFloat:
        std::snprintf(buf, sizeof(buf), "f%a", v.as_float());
        out += buf;
        break;
      case OptionValue::Kind::kString:
        TE_CHECK(v.as_string().find('\n') == std::string::npos, ValueError)
            << "option " << name << ": a string with a line break cannot be stored in a bundle";
        out += 's';
        out += v.as_string();
        break;
    }
    out += '\n';
  }
  return out;
}

Options decode_options(std::string_view text, const std::string& where) {
  auto fail = [&](std::string_view line) -> Options {
    throw BundleError(where + ": damaged options line '" + std::string(line) +
                          "'; rebuild the bundle",
                      BundleError::Reason::kCorrupt);
  };
  Options o;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return fail(text);
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 >= line.size()) return fail(line);
    const std::string name(line.substr(0, eq));
    const std::string value(line.substr(eq + 2));
    char* end = nullptr;
    switch (line[eq + 1]) {
      case 'b':
        if (value != "0" && value != "1") return fail(line);
        o.set(name, value == "1");
        break;
      case 'i': {
        const long long i = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0') return fail(line);
        o.set(name, static_cast<int64_t>(i));
        break;
      }
      case 'f': {
        const double f = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0') return fail(line);
        o.set(name, f);
        break;
      }
      case 's':
        o.set(name, std::string_view(value));
        break;
      default:
        return fail(line);
    }
  }
  return o;
}

}  // namespace triton_embed::detail::bundle
