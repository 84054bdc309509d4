#include "bundle/kernel_table.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/errors.h"
#include "bundle/codec.h"
#include "triton_embed/error.h"
#include "triton_embed/named.h"

namespace triton_embed::detail::bundle {

namespace {

// The parameter table's own version: bumped when its encoding changes (the file format's
// version covers the container, not the opaque fields the integration writes).
constexpr uint8_t kParamsVersion = 1;

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
    w.u8(static_cast<uint8_t>(s.is_constexpr | s.specialize << 1 | s.align << 2 | s.is_const << 3));
    w.code(s.ann);
    w.code(s.ann_dtype);
    if (p.has_default) w.value(k.defaults[i]);
  }
  return w.take();
}

void decode_params(std::string_view bytes, KernelState& k, const std::string& where) {
  Reader r(bytes, k, where, "parameter table");
  const uint8_t version = r.u8();
  if (version != kParamsVersion) {
    throw BundleError(
        where + ": its parameter table is of version " + std::to_string(version) +
            ", this library reads version " + std::to_string(kParamsVersion) +
            ": rebuild the bundle with this version of triton_embed",
        version > kParamsVersion ? BundleError::Reason::kTooNew : BundleError::Reason::kCorrupt);
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
    s.ann = r.code<AnnKind>("unknown annotation kind");
    s.ann_dtype = r.code<DType>("an unknown annotation dtype");
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
    throw BundleError(
        where + ": damaged options line '" + std::string(line) + "'; rebuild the bundle",
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
