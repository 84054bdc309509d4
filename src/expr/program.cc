// Expression programs and hooks (expr/program.h): their checks, their bytes (encode, decode)
// and their Python-like text.

#include "expr/program.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <utility>

#include "base/errors.h"

namespace triton_embed::detail::expr {

namespace {

constexpr uint8_t kFormat = 1;
// Expression format 2: format 1 and the operations appended after kIf (kArgIsDescriptor).
constexpr uint8_t kDescriptorFormat = 2;

}  // namespace

const char* op_text(Op op) {
  static const char* const kText[] = {"None",
                                      "bool",
                                      "int",
                                      "float",
                                      "str",
                                      "dtype",
                                      "arg",
                                      ".dtype",
                                      ".element_size()",
                                      "is None",
                                      "-",
                                      "+",
                                      "not",
                                      "~",
                                      "abs",
                                      "triton.next_power_of_2",
                                      "int",
                                      "float",
                                      "bool",
                                      ".get",
                                      "+",
                                      "-",
                                      "*",
                                      "/",
                                      "//",
                                      "%",
                                      "**",
                                      "<<",
                                      ">>",
                                      "&",
                                      "|",
                                      "^",
                                      "triton.cdiv",
                                      "min",
                                      "max",
                                      "==",
                                      "!=",
                                      "<",
                                      "<=",
                                      ">",
                                      ">=",
                                      "is",
                                      "and",
                                      "or",
                                      "if",
                                      "isinstance"};
  static_assert(sizeof(kText) / sizeof(kText[0]) == static_cast<size_t>(Op::kCount));
  return kText[static_cast<size_t>(op)];
}

namespace {

// Whether op reads parameter `param` of its node.
bool reads_param(Op op) {
  return (op >= Op::kArg && op <= Op::kArgIsNone) || op == Op::kArgOr || op == Op::kArgIsDescriptor;
}

// The expression format a program with these nodes is written in.
uint8_t format_of(const std::vector<Node>& nodes) {
  for (const Node& x : nodes) {
    if (x.op == Op::kArgIsDescriptor) return kDescriptorFormat;
  }
  return kFormat;
}

// ---- encoding: u8 format, u32 node count, then per node: u8 op, u8 flag, u16 param, u32 a, b,
// c, i64 i, f64 f, u32 string length, the string's bytes. Little-endian.

void put(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

template <class T>
void put(std::string& out, T v) {
  put(out, &v, sizeof(v));
}

struct Reader {
  std::string_view in;
  size_t at = 0;
  bool ok = true;
  template <class T>
  T get() {
    T v{};
    if (in.size() - at < sizeof(T)) {
      ok = false;
      return v;
    }
    std::memcpy(&v, in.data() + at, sizeof(T));
    at += sizeof(T);
    return v;
  }
};

}  // namespace

std::string Program::check(const std::vector<Node>& nodes, uint32_t num_params) {
  if (nodes.empty()) return "no nodes";
  if (nodes.size() > kMaxNodes) {
    return std::to_string(nodes.size()) + " nodes, more than " + std::to_string(kMaxNodes);
  }
  std::vector<int> depth(nodes.size(), 1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    const Node& x = nodes[n];
    if (x.op >= Op::kCount) return "node " + std::to_string(n) + ": unknown operation";
    const Arity ar = arity(x.op);
    const uint32_t kids[3] = {x.a, x.b, x.c};
    const int nk = ar == Arity::kLeaf ? 0 : ar == Arity::kUnary ? 1 : ar == Arity::kBinary ? 2 : 3;
    for (int k = 0; k < nk; ++k) {
      if (kids[k] >= n) {
        return "node " + std::to_string(n) + " (" + op_text(x.op) + "): operand " +
               std::to_string(k) + " is node " + std::to_string(kids[k]) + ", not an earlier one";
      }
      depth[n] = std::max(depth[n], depth[kids[k]] + 1);
    }
    if (depth[n] > kMaxDepth) {
      return "node " + std::to_string(n) + ": nested deeper than " + std::to_string(kMaxDepth);
    }
    if (reads_param(x.op) && x.param >= num_params) {
      return "node " + std::to_string(n) + ": parameter " + std::to_string(x.param) +
             " of a kernel with " + std::to_string(num_params);
    }
    if (x.op == Op::kBool && x.i != 0 && x.i != 1)
      return "node " + std::to_string(n) + ": a bool not 0 or 1";
    if (x.op == Op::kDType &&
        (x.i <= 0 || x.i > static_cast<int64_t>(DType::fp64) || x.flag > kTritonDType)) {
      return "node " + std::to_string(n) + ": an unknown dtype";
    }
    if (x.s.size() > kMaxString) return "node " + std::to_string(n) + ": a string too long";
  }
  return "";
}

void Program::index_reads() {
  reads_.clear();
  for (const Node& x : nodes_) {
    if (!reads_param(x.op)) continue;
    const bool dtype = x.op == Op::kArgDType || x.op == Op::kArgElementSize;
    bool seen = false;
    for (const Read& r : reads_) seen |= r.param == x.param && r.dtype == dtype;
    if (!seen) reads_.push_back({x.param, dtype});
  }
  std::sort(reads_.begin(), reads_.end(), [](const Read& l, const Read& r) {
    return l.param != r.param ? l.param < r.param : l.dtype < r.dtype;
  });
}

Program Program::from_nodes(std::vector<Node> nodes) {
  const std::string why = check(nodes, std::numeric_limits<uint16_t>::max() + 1u);
  TE_CHECK(why.empty(), ValueError) << "an expression program: " << why;
  Program p;
  p.nodes_ = std::move(nodes);
  p.index_reads();
  return p;
}

uint8_t Program::format() const noexcept { return format_of(nodes_); }

std::string Program::encode() const {
  std::string out;
  put(out, format());
  put(out, static_cast<uint32_t>(nodes_.size()));
  for (const Node& x : nodes_) {
    put(out, static_cast<uint8_t>(x.op));
    put(out, x.flag);
    put(out, x.param);
    put(out, x.a);
    put(out, x.b);
    put(out, x.c);
    put(out, x.i);
    put(out, x.f);
    put(out, static_cast<uint32_t>(x.s.size()));
    put(out, x.s.data(), x.s.size());
  }
  return out;
}

bool Program::decode(std::string_view bytes, uint32_t num_params, Program* out, std::string* why) {
  return decode_up_to(bytes, num_params, kDescriptorFormat, out, why);
}

bool Program::decode_up_to(std::string_view bytes, uint32_t num_params, uint8_t max_format,
                           Program* out, std::string* why) {
  Reader r{bytes};
  const uint8_t format = r.get<uint8_t>();
  if (r.ok && (format < kFormat || format > max_format)) {
    *why = "expression format " + std::to_string(format) + ", this library reads " +
           (max_format == kFormat ? std::to_string(kFormat)
                                  : std::to_string(kFormat) + " and " + std::to_string(max_format));
    return false;
  }
  const uint32_t count = r.get<uint32_t>();
  if (r.ok && (count == 0 || count > kMaxNodes)) {
    *why = std::to_string(count) + " nodes (1 to " + std::to_string(kMaxNodes) + ")";
    return false;
  }
  std::vector<Node> nodes;
  for (uint32_t n = 0; r.ok && n < count; ++n) {
    Node x;
    const uint8_t op = r.get<uint8_t>();
    if (r.ok && format == kFormat && op == static_cast<uint8_t>(Op::kArgIsDescriptor)) {
      *why = "node " + std::to_string(n) + ": operation " + std::to_string(op) +
             " (isinstance), which expression format 1 has not";
      return false;
    }
    x.op = op < static_cast<uint8_t>(Op::kCount) ? static_cast<Op>(op) : Op::kCount;
    x.flag = r.get<uint8_t>();
    x.param = r.get<uint16_t>();
    x.a = r.get<uint32_t>();
    x.b = r.get<uint32_t>();
    x.c = r.get<uint32_t>();
    x.i = r.get<int64_t>();
    x.f = r.get<double>();
    const uint32_t len = r.get<uint32_t>();
    if (!r.ok || len > kMaxString || bytes.size() - r.at < len) {
      r.ok = false;
      break;
    }
    x.s.assign(bytes.data() + r.at, len);
    r.at += len;
    nodes.push_back(std::move(x));
  }
  if (!r.ok) {
    *why = "truncated";
    return false;
  }
  if (r.at != bytes.size()) {
    *why = std::to_string(bytes.size() - r.at) + " bytes after the last node";
    return false;
  }
  std::string bad = check(nodes, num_params);
  if (!bad.empty()) {
    *why = std::move(bad);
    return false;
  }
  out->nodes_ = std::move(nodes);
  out->index_reads();
  return true;
}

// ---- hooks: u8 format, u32 action count, then per action: u8 kind, u16 param, u32 dims, each
// dim a u32 length and a program's bytes; in format 3, then a u32 length (0: no guard) and the
// guard program's bytes. Format 2 is a hook with a tuple block shape (kind 2, which format 1 has
// not); format 3 one with a guard or a program of expression format 2 (which formats 1 and 2
// hold none of). A library that reads fewer formats says which it reads.

constexpr uint8_t kHookTupleFormat = 2;
constexpr uint8_t kHookGuardFormat = 3;

std::string Hook::encode() const {
  std::string out;
  const bool tuples = std::any_of(actions.begin(), actions.end(), [](const HookAction& a) {
    return a.kind == HookAction::Kind::kBlockShapeTuple;
  });
  const bool guards = std::any_of(actions.begin(), actions.end(), [](const HookAction& a) {
    return !a.guard.empty() || std::any_of(a.dims.begin(), a.dims.end(),
                                           [](const Program& d) { return d.format() != kFormat; });
  });
  const uint8_t format = guards ? kHookGuardFormat : tuples ? kHookTupleFormat : kFormat;
  put(out, format);
  put(out, static_cast<uint32_t>(actions.size()));
  for (const HookAction& a : actions) {
    put(out, static_cast<uint8_t>(a.kind));
    put(out, a.param);
    put(out, static_cast<uint32_t>(a.dims.size()));
    for (const Program& d : a.dims) {
      const std::string b = d.encode();
      put(out, static_cast<uint32_t>(b.size()));
      put(out, b.data(), b.size());
    }
    if (format == kHookGuardFormat) {
      const std::string b = a.guard.empty() ? std::string() : a.guard.encode();
      put(out, static_cast<uint32_t>(b.size()));
      put(out, b.data(), b.size());
    }
  }
  return out;
}

bool Hook::decode(std::string_view bytes, uint32_t num_params, Hook* out, std::string* why) {
  Reader r{bytes};
  const uint8_t format = r.get<uint8_t>();
  if (r.ok && (format < kFormat || format > kHookGuardFormat)) {
    *why = "hook format " + std::to_string(format) + ", this library reads " +
           std::to_string(kFormat) + ", " + std::to_string(kHookTupleFormat) + " and " +
           std::to_string(kHookGuardFormat);
    return false;
  }
  const uint32_t count = r.get<uint32_t>();
  if (r.ok && count > kMaxHookActions) {
    *why =
        std::to_string(count) + " hook actions (at most " + std::to_string(kMaxHookActions) + ")";
    return false;
  }
  // Format 1 has kinds up to kZero; format 2 adds kBlockShapeTuple; format 3 adds guards and
  // programs of expression format 2.
  const uint8_t last_kind = static_cast<uint8_t>(
      format >= kHookTupleFormat ? HookAction::Kind::kBlockShapeTuple : HookAction::Kind::kZero);
  const uint8_t program_format = format == kHookGuardFormat ? kDescriptorFormat : kFormat;
  Hook h;
  for (uint32_t n = 0; r.ok && n < count; ++n) {
    HookAction a;
    const uint8_t kind = r.get<uint8_t>();
    a.param = r.get<uint16_t>();
    const uint32_t ndims = r.get<uint32_t>();
    if (!r.ok) break;
    if (kind > last_kind || a.param >= num_params || ndims > 5 ||
        (kind == static_cast<uint8_t>(HookAction::Kind::kZero)) != (ndims == 0)) {
      *why = "hook action " + std::to_string(n) + ": kind " + std::to_string(kind) +
             ", parameter " + std::to_string(a.param) + ", " + std::to_string(ndims) +
             " dimensions";
      return false;
    }
    a.kind = static_cast<HookAction::Kind>(kind);
    for (uint32_t d = 0; d < ndims; ++d) {
      const uint32_t len = r.get<uint32_t>();
      if (!r.ok || bytes.size() - r.at < len) {
        r.ok = false;
        break;
      }
      Program p;
      if (!Program::decode_up_to(bytes.substr(r.at, len), num_params, program_format, &p, why)) {
        *why =
            "hook action " + std::to_string(n) + ", dimension " + std::to_string(d) + ": " + *why;
        return false;
      }
      r.at += len;
      a.dims.push_back(std::move(p));
    }
    if (r.ok && format == kHookGuardFormat) {
      const uint32_t len = r.get<uint32_t>();
      if (!r.ok || bytes.size() - r.at < len) {
        r.ok = false;
        break;
      }
      if (len != 0 && !Program::decode_up_to(bytes.substr(r.at, len), num_params, program_format,
                                             &a.guard, why)) {
        *why = "hook action " + std::to_string(n) + ", guard: " + *why;
        return false;
      }
      r.at += len;
    }
    if (!r.ok) break;
    h.actions.push_back(std::move(a));
  }
  if (!r.ok) {
    *why = "truncated";
    return false;
  }
  if (r.at != bytes.size()) {
    *why = std::to_string(bytes.size() - r.at) + " bytes after the last hook action";
    return false;
  }
  *out = std::move(h);
  return true;
}

std::string Hook::str(const std::vector<std::string>& names) const {
  std::string out;
  for (const HookAction& a : actions) {
    if (!out.empty()) out += "; ";
    const std::string n = a.param < names.size() ? names[a.param] : "#" + std::to_string(a.param);
    if (a.kind == HookAction::Kind::kZero) {
      out += "nargs[\"" + n + "\"].zero_()";
    } else {
      const bool tuple = a.kind == HookAction::Kind::kBlockShapeTuple;
      out += "nargs[\"" + n + "\"].block_shape = " + (tuple ? "(" : "[");
      for (size_t d = 0; d < a.dims.size(); ++d) out += (d ? ", " : "") + a.dims[d].str(names);
      out += tuple ? (a.dims.size() == 1 ? ",)" : ")") : "]";
    }
    if (!a.guard.empty()) out += " when " + a.guard.str(names);
  }
  return out;
}

std::string Program::str(const std::vector<std::string>& names) const {
  std::vector<std::string> text(nodes_.size());
  auto name = [&](uint16_t p) {
    return "args[\"" + (p < names.size() ? names[p] : "#" + std::to_string(p)) + "\"]";
  };
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Node& x = nodes_[n];
    const std::string& a = text[x.a];
    const std::string& b = text[x.b];
    std::string& t = text[n];
    switch (x.op) {
      case Op::kNone:
        t = "None";
        break;
      case Op::kBool:
        t = x.i ? "True" : "False";
        break;
      case Op::kInt:
        t = std::to_string(x.i);
        break;
      case Op::kFloat: {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%.17g", x.f);
        t = buf;
        break;
      }
      case Op::kStr:
        t = "'" + x.s + "'";
        break;
      case Op::kDType:
        t = std::string(x.flag == kTritonDType ? "tl." : "torch.") +
            std::string(dtype_tl_name(static_cast<DType>(x.i)));
        break;
      case Op::kArg:
        t = name(x.param);
        break;
      case Op::kArgDType:
        t = name(x.param) + ".dtype";
        break;
      case Op::kArgElementSize:
        t = name(x.param) + ".element_size()";
        break;
      case Op::kArgIsNone:
        t = "(" + name(x.param) + " is None)";
        break;
      case Op::kArgIsDescriptor:
        t = "isinstance(" + name(x.param) + ", TensorDescriptor)";
        break;
      case Op::kArgOr: {
        const std::string n = name(x.param);
        t = "args.get(" + n.substr(5, n.size() - 6) + ", " + a + ")";
        break;
      }
      case Op::kNeg:
      case Op::kPos:
      case Op::kInvert:
        t = "(" + std::string(op_text(x.op)) + a + ")";
        break;
      case Op::kNot:
        t = "(not " + a + ")";
        break;
      case Op::kAbs:
      case Op::kNextPow2:
      case Op::kToInt:
      case Op::kToFloat:
      case Op::kToBool:
        t = std::string(op_text(x.op)) + "(" + a + ")";
        break;
      case Op::kCdiv:
      case Op::kMin:
      case Op::kMax:
        t = std::string(op_text(x.op)) + "(" + a + ", " + b + ")";
        break;
      case Op::kIf:
        t = "(" + b + " if " + a + " else " + text[x.c] + ")";
        break;
      default:
        t = "(" + a + " " + op_text(x.op) + " " + b + ")";
        break;
    }
  }
  return text.back();
}

}  // namespace triton_embed::detail::expr
