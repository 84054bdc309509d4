#include "calls_file.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/errors.h"
#include "core/jit_internal.h"

namespace triton_embed::tools {

namespace {

// What an argument can be, for messages.
constexpr const char* kArgumentForms =
    "*DTYPE (a pointer, e.g. *fp32 or *fp16:unaligned), a scalar type (i32, i64:16, fp32, "
    "bool, ...), a number, true, false, None, a quoted string or tl.DTYPE";

// The scalar types a calls file names, as Triton's signatures write them.
struct ScalarName {
  const char* name;
  DType type;
};
constexpr ScalarName kScalarTypes[] = {
    {"bool", DType::u1},   {"u1", DType::u1},     {"i8", DType::i8},     {"i16", DType::i16},
    {"i32", DType::i32},   {"i64", DType::i64},   {"u8", DType::u8},     {"u16", DType::u16},
    {"u32", DType::u32},   {"u64", DType::u64},   {"fp16", DType::fp16}, {"bf16", DType::bf16},
    {"fp32", DType::fp32}, {"fp64", DType::fp64},
};

DType scalar_type(std::string_view name) {
  for (const ScalarName& s : kScalarTypes) {
    if (name == s.name) return s.type;
  }
  return DType::invalid;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

bool is_module_name(std::string_view s) {
  if (s.empty()) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!is_identifier(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// The element type of *NAME: a Triton or torch type name, without a module prefix.
DType element_type(std::string_view name) {
  if (name.empty() || name.find('.') != std::string_view::npos) return DType::invalid;
  return dtype_from_name(name);
}

bool parse_int(std::string_view s, Value& v) {
  std::string_view digits = s;
  const bool negative = !digits.empty() && digits[0] == '-';
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
  if (digits.empty()) return false;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  const std::string text(s);
  errno = 0;
  char* end = nullptr;
  if (negative) {
    v.i = std::strtoll(text.c_str(), &end, 10);
  } else {
    v.u = std::strtoull(text.c_str(), &end, 10);
    if (errno == 0 && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      v.big = true;
    } else {
      v.i = static_cast<int64_t>(v.u);
    }
  }
  if (errno == ERANGE) {
    v.error = "the integer " + text + " is out of range (from -2^63 to 2^64 - 1)";
    return true;
  }
  v.kind = Value::Kind::kInt;
  return true;
}

// A decimal float as Python writes one (0.5, -2., 1e-6); no hex, inf or nan.
bool parse_float(std::string_view s, Value& v) {
  bool digit = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (std::strchr(".eE+-", c) == nullptr) {
      return false;
    }
  }
  if (!digit) return false;
  const std::string text(s);
  char* end = nullptr;
  errno = 0;
  const double f = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return false;
  if (errno == ERANGE && std::isinf(f)) {
    v.error = "the float " + text + " is out of range";
    return true;
  }
  v.kind = Value::Kind::kFloat;
  v.f = f;
  return true;
}

// Parses one argument. A token that is no argument comes back as a kWord whose `error` says
// why (an option's value may still be such a word).
Value parse_value(std::string_view s) {
  Value v;
  v.text = std::string(s);
  auto fail = [&](std::string why) {
    v.kind = Value::Kind::kWord;
    v.error = std::move(why);
    return v;
  };
  if (s.empty()) return fail("an empty value; expected " + std::string(kArgumentForms));
  const char q = s[0];
  if (q == '"' || q == '\'') {
    if (s.size() < 2 || s.back() != q ||
        s.substr(1, s.size() - 2).find(q) != std::string_view::npos) {
      return fail("'" + v.text + "' is not a string; expected a string as \"TEXT\" or 'TEXT'");
    }
    v.kind = Value::Kind::kStr;
    v.text = std::string(s.substr(1, s.size() - 2));
    return v;
  }
  if (q == '*') {
    const std::string_view body = s.substr(1);
    const size_t colon = body.find(':');
    const std::string_view name = body.substr(0, colon);
    v.dtype = element_type(name);
    if (v.dtype == DType::invalid) {
      return fail("'" + v.text + "': '" + std::string(name) +
                  "' is not an element type; expected a pointer as *DTYPE with a Triton type (e.g. "
                  "*fp32, *fp16, *bf16, *i64, *u8)");
    }
    v.div16 = true;
    if (colon != std::string_view::npos) {
      const std::string_view suffix = body.substr(colon + 1);
      if (suffix == "unaligned" || suffix == "any") {
        v.div16 = false;  // both compile the entry with no alignment assumption
      } else if (suffix != "16") {
        return fail("'" + v.text + "': unknown alignment ':" + std::string(suffix) +
                    "'; expected *" + std::string(name) + " or *" + std::string(name) +
                    ":16 (16-byte aligned), *" + std::string(name) + ":unaligned or *" +
                    std::string(name) + ":any (no alignment assumption)");
      }
    }
    v.kind = Value::Kind::kPointer;
    return v;
  }
  if (s == "None") {
    v.kind = Value::Kind::kNone;
    return v;
  }
  if (s == "true" || s == "True" || s == "false" || s == "False") {
    v.kind = Value::Kind::kBool;
    v.i = (s == "true" || s == "True") ? 1 : 0;
    return v;
  }
  if (s.substr(0, 3) == "tl.") {
    v.dtype = element_type(s.substr(3));
    if (v.dtype == DType::invalid) {
      return fail("'" + v.text +
                  "' is not a Triton dtype; expected tl.DTYPE (e.g. tl.float16, "
                  "tl.bfloat16, tl.int32)");
    }
    v.kind = Value::Kind::kDType;
    return v;
  }
  {
    const size_t colon = s.find(':');
    const std::string_view name = s.substr(0, colon);
    const DType t = scalar_type(name);
    if (t != DType::invalid) {
      v.dtype = t;
      if (colon != std::string_view::npos) {
        const bool integer = !dtype_is_float(t) && t != DType::u1;
        const std::string_view suffix = s.substr(colon + 1);
        if (!integer || (suffix != "16" && suffix != "any")) {
          return fail(
              "'" + v.text + "': " +
              (integer
                   ? "unknown specialisation ':" + std::string(suffix) + "'; expected " +
                         std::string(name) + " (not divisible by 16), " + std::string(name) +
                         ":16 (divisible by 16) or " + std::string(name) +
                         ":any (no assumption: serves every value)"
                   : std::string(name) + " takes no ':' suffix; expected " + std::string(name)));
        }
        // :any compiles what a value that is neither divisible by 16 nor 1 compiles: the
        // entry with no assumption, which serves every value (docs/aot.md).
        v.div16 = suffix == "16";
      }
      v.kind = Value::Kind::kScalarType;
      return v;
    }
  }
  if (parse_int(s, v) || parse_float(s, v)) {
    if (!v.error.empty()) return fail(v.error);
    return v;
  }
  return fail("'" + v.text + "' is not an argument; expected " + std::string(kArgumentForms));
}

[[noreturn]] void syntax_error(const std::string& file, int line, const std::string& what) {
  throw ValueError(file + ":" + std::to_string(line) + ": " + what);
}

// One logical line: its first line number and its text with comments removed.
struct Logical {
  int line;
  std::string text;
};

// Strips a '#' comment (outside quotes); an unterminated quote is an error.
std::string strip_comment(const std::string& s, const std::string& file, int line) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '#') {
      return s.substr(0, i);
    }
  }
  if (quote != 0) {
    syntax_error(file, line,
                 std::string("a string opened with ") + quote +
                     " is not closed on its line; expected a closing " + quote);
  }
  return s;
}

std::vector<Logical> logical_lines(std::string_view text, const std::string& file) {
  std::vector<Logical> out;
  std::string pending;
  int pending_line = 0;
  int n = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = text.find('\n', pos);
    std::string raw(text.substr(pos, eol == std::string_view::npos ? eol : eol - pos));
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    ++n;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    const size_t first = raw.find_first_not_of(" \t");
    if (pending_line == 0 && first != std::string::npos &&
        (raw.compare(first, 5, "#rule") == 0 || raw.compare(first, 5, "#grid") == 0) &&
        (raw.size() == first + 5 || std::isspace(static_cast<unsigned char>(raw[first + 5])))) {
      out.push_back({n, raw.substr(first)});  // a directive, not a comment
      continue;
    }
    std::string s = strip_comment(raw, file, n);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    const bool continues = !s.empty() && s.back() == '\\';
    if (continues) s.pop_back();
    if (pending_line == 0) pending_line = n;
    pending += " " + s;
    if (!continues) {
      out.push_back({pending_line, pending});
      pending.clear();
      pending_line = 0;
    }
  }
  if (pending_line != 0) {
    syntax_error(file, pending_line,
                 "the last line ends with '\\'; expected another line to continue it");
  }
  return out;
}

// Splits on whitespace outside quotes (quotes are closed: strip_comment checked).
std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (char c : s) {
    if (quote == 0 && std::isspace(static_cast<unsigned char>(c))) {
      if (in_token) out.push_back(cur);
      cur.clear();
      in_token = false;
      continue;
    }
    if (quote != 0) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    }
    cur += c;
    in_token = true;
  }
  if (in_token) out.push_back(cur);
  return out;
}

// A value list: integers separated by ',' (`16,256,4096`), where `...` after three or more
// continues their constant step or ratio up to the value after it (`1,2,4,...,65536`).
// Returns false when `s` is not a list (no ','); a list that is not well formed is an error.
bool parse_list(std::string_view s, const std::string& where, const std::string& what,
                std::vector<Value>& out) {
  if (s.find(',') == std::string_view::npos || s.find_first_of("\"'") != std::string_view::npos) {
    return false;
  }
  auto fail = [&](const std::string& why) {
    throw ValueError(where + ": " + what + ": '" + std::string(s) + "': " + why +
                     "; expected a value list of integers, e.g. 16,256,4096 or 1,2,4,...,65536");
  };
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t comma = s.find(',', start);
    parts.push_back(s.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<int64_t> vals;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "...") {
      if (i < 3 || i + 2 != parts.size()) {
        fail("'...' needs three values or more before it and one after it");
      }
      const int64_t a = vals[i - 3], b = vals[i - 2], c = vals[i - 1];
      Value end;
      if (!parse_int(parts[i + 1], end) || end.kind != Value::Kind::kInt || end.big) {
        fail("'" + std::string(parts[i + 1]) + "' is not an integer");
      }
      const bool arithmetic = b - a == c - b && b != a;
      const bool geometric = a != 0 && b % a == 0 && c % b == 0 && b / a == c / b && b / a > 1;
      if (!arithmetic && !geometric) fail("the values before '...' have no constant step or ratio");
      int64_t v = c;
      while (v != end.i) {
        const int64_t step = arithmetic ? b - a : b / a;
        const int64_t limit = std::numeric_limits<int64_t>::max();
        if (arithmetic ? (step > 0 ? v > limit - step : v < -limit - step)
                       : (v > limit / step || v < -limit / step)) {
          fail(std::to_string(end.i) + " is not in the sequence");
        }
        const int64_t next = arithmetic ? v + step : v * step;
        if ((next > end.i) == (v < end.i) && next != end.i) {
          fail(std::to_string(end.i) + " is not in the sequence");
        }
        if (vals.size() >= kMaxCallsPerLine) fail("more than 4096 values");
        v = next;
        vals.push_back(v);
      }
      break;
    }
    Value v;
    if (!parse_int(parts[i], v) || v.kind != Value::Kind::kInt || v.big) {
      fail("'" + std::string(parts[i]) + "' is not an integer");
    }
    vals.push_back(v.i);
  }
  for (int64_t v : vals) {
    Value x;
    parse_int(std::to_string(v), x);
    out.push_back(std::move(x));
  }
  return true;
}

}  // namespace

std::vector<int64_t> parse_values(std::string_view text, const std::string& where) {
  std::vector<Value> list;
  Value one;
  if (!parse_list(text, where, "values", list)) {
    if (!parse_int(text, one) || one.kind != Value::Kind::kInt || one.big) {
      throw ValueError(where + ": values: '" + std::string(text) +
                       "' is not an integer; expected an integer or a value list, e.g. "
                       "16,256,4096 or 1,2,4,...,65536");
    }
    list.push_back(one);
  }
  std::vector<int64_t> out;
  for (const Value& v : list) out.push_back(v.i);
  return out;
}

namespace {

// Where a value list goes in a call: a positional argument, or a named one (`named`).
struct ListSlot {
  bool named = false;
  size_t index = 0;
  std::vector<Value> values;
};

Call parse_call(const std::vector<std::string>& toks, const std::string& file, int line,
                std::vector<ListSlot>& lists) {
  Call c;
  c.file = file;
  c.line = line;
  const std::string& k = toks[0];
  const size_t colon = k.find(':');
  const size_t split = colon != std::string::npos ? colon : k.rfind('.');
  if (split == std::string::npos || !is_module_name(k.substr(0, split)) ||
      !is_identifier(k.substr(split + 1))) {
    syntax_error(file, line,
                 "'" + k +
                     "' is not a kernel; expected MODULE:KERNEL or MODULE.KERNEL first (e.g. "
                     "pykernels.vector:add_kernel)");
  }
  c.module = k.substr(0, split);
  c.kernel = k.substr(split + 1);
  std::set<std::string> names;
  for (size_t i = 1; i < toks.size(); ++i) {
    const std::string& t = toks[i];
    if (t[0] == '@') {
      try {
        const Target target = Target::parse(std::string_view(t).substr(1));
        bool seen = false;
        for (const Target& have : c.targets) seen = seen || have == target;
        if (!seen) c.targets.push_back(target);
      } catch (const ValueError& e) {
        syntax_error(file, line, "'" + t + "': " + e.what());
      }
      continue;
    }
    const size_t eq = t.find('=');
    const size_t quote = t.find_first_of("\"'");
    if (eq != std::string::npos && (quote == std::string::npos || eq < quote)) {
      Named n;
      n.name = t.substr(0, eq);
      if (!is_identifier(n.name)) {
        syntax_error(file, line,
                     "'" + t + "': '" + n.name +
                         "' is not a name; expected NAME=VALUE with NAME a parameter "
                         "of the kernel or a Triton option (e.g. BLOCK=1024, num_warps=8)");
      }
      if (!names.insert(n.name).second) {
        syntax_error(file, line, "'" + n.name + "' is given twice; expected each NAME=VALUE once");
      }
      std::vector<Value> list;
      if (parse_list(std::string_view(t).substr(eq + 1), file + ":" + std::to_string(line), n.name,
                     list)) {
        n.value = list.front();
        lists.push_back({true, c.named.size(), std::move(list)});
      } else {
        n.value = parse_value(std::string_view(t).substr(eq + 1));
      }
      if (n.value.text.empty() && n.value.kind == Value::Kind::kWord) {
        syntax_error(file, line, "'" + t + "' has no value; expected " + n.name + "=VALUE");
      }
      c.named.push_back(std::move(n));
      continue;
    }
    if (!c.named.empty()) {
      syntax_error(
          file, line,
          "the positional argument '" + t + "' follows the named argument '" + c.named.back().name +
              "=...'; expected positional arguments first, then NAME=VALUE items (as in Python)");
    }
    std::vector<Value> list;
    if (parse_list(t, file + ":" + std::to_string(line),
                   "argument " + std::to_string(c.positional.size() + 1), list)) {
      lists.push_back({false, c.positional.size(), list});
      c.positional.push_back(std::move(list.front()));
      continue;
    }
    Value v = parse_value(t);
    if (v.kind == Value::Kind::kWord) {
      syntax_error(file, line,
                   "argument " + std::to_string(c.positional.size() + 1) + ": " + v.error);
    }
    c.positional.push_back(std::move(v));
  }
  return c;
}

}  // namespace

std::vector<Call> parse_calls(std::string_view text, const std::string& file,
                              std::vector<RuleDecl>* rules) {
  std::vector<Call> calls;
  for (const Logical& l : logical_lines(text, file)) {
    const std::vector<std::string> toks = tokens(l.text);
    if (toks.empty()) continue;
    if (toks[0] == "#rule" || toks[0] == "#grid") {
      // #rule MODULE:KERNEL RULE, #grid MODULE:KERNEL GRID (the rest of the line).
      const bool grid = toks[0] == "#grid";
      const std::string expected =
          grid ? "expected #grid MODULE:KERNEL DIMS (e.g. #grid pykernels.matmul:matmul_kernel "
                 "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N))"
               : "expected #rule MODULE:KERNEL RULE (e.g. #rule pykernels.matmul:matmul_kernel "
                 "M=nearest)";
      if (toks.size() < 3) {
        syntax_error(file, l.line,
                     std::string("a ") + toks[0] + " line without " + (grid ? "a grid" : "a rule") +
                         "; " + expected);
      }
      const std::string& k = toks[1];
      const size_t colon = k.find(':');
      const size_t split = colon != std::string::npos ? colon : k.rfind('.');
      if (split == std::string::npos || !is_module_name(k.substr(0, split)) ||
          !is_identifier(k.substr(split + 1))) {
        syntax_error(file, l.line, "'" + k + "' is not a kernel; " + expected);
      }
      RuleDecl r;
      r.file = file;
      r.line = l.line;
      r.grid = grid;
      r.kernel = k.substr(0, split) + "." + k.substr(split + 1);
      for (size_t i = 2; i < toks.size(); ++i) r.rule += (i > 2 ? " " : "") + toks[i];
      if (rules != nullptr) rules->push_back(std::move(r));
      continue;
    }
    std::vector<ListSlot> lists;
    const Call c = parse_call(toks, file, l.line, lists);
    // One call per combination of the lists' values, the last list varying fastest.
    size_t total = 1;
    for (const ListSlot& s : lists) {
      total *= s.values.size();
      if (total > kMaxCallsPerLine) {
        syntax_error(file, l.line, "its value lists make more than 4096 calls; expected fewer");
      }
    }
    for (size_t n = 0; n < total; ++n) {
      Call e = c;
      size_t rest = n;
      for (size_t i = lists.size(); i-- > 0;) {
        const ListSlot& s = lists[i];
        const Value& v = s.values[rest % s.values.size()];
        rest /= s.values.size();
        (s.named ? e.named[s.index].value : e.positional[s.index]) = v;
      }
      calls.push_back(std::move(e));
    }
  }
  return calls;
}

std::vector<Call> read_calls_file(const std::string& path, std::vector<RuleDecl>* rules) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    TE_THROW(ValueError) << "calls file " << path << ": cannot open it: " << std::strerror(errno)
                         << "; check the path";
  }
  std::ostringstream os;
  os << f.rdbuf();
  if (f.bad()) {
    TE_THROW(ValueError) << "calls file " << path << ": cannot read it: " << std::strerror(errno);
  }
  return parse_calls(os.str(), path, rules);
}

detail::CallArgs BoundCall::args() const {
  detail::CallArgs a;
  a.vals = vals.data();
  a.npos = static_cast<uint32_t>(npos);
  a.nnamed = static_cast<uint32_t>(names.size());
  a.names = names.data();
  return a;
}

namespace {

// A fake device address for argument slot `slot` (compile-only: never dereferenced): on a
// 16-byte boundary, or one element past one.
uint64_t address(size_t slot, const Value& v) {
  const uint64_t base = uint64_t{0x100000} * (slot + 1);
  if (v.div16) return base;
  const int size = dtype_size(v.dtype);
  return base + static_cast<uint64_t>(size > 0 ? size : 1);
}

// The argument `v` passes as the parameter `param` (-1: none, too many arguments).
detail::ArgValue to_arg(const Call& c, const JitFunction& k, int param, size_t slot,
                        const Value& v) {
  using detail::ArgKind;
  const std::vector<ParamInfo>& params = k.params();
  if (v.kind == Value::Kind::kScalarType && param >= 0 && params[param].is_constexpr) {
    TE_THROW(TypeError) << c.where() << ": "
                        << detail::kernel_arg_where(detail::JitAccess::state(k), param)
                        << ": a tl.constexpr parameter takes a value (e.g. 1024, true, "
                        << "\"text\", tl.float16), not the type '" << v.text << "'";
  }
  detail::ArgValue a{};
  switch (v.kind) {
    case Value::Kind::kPointer:
      a.kind = ArgKind::kPointer;
      a.dtype = v.dtype;
      a.u = address(slot, v);
      break;
    case Value::Kind::kScalarType:
      // A value of the type with the specialisation asked for (never 1, which Triton
      // specialises apart): what triton_embed::i64(n), fp16(x), ... pass.
      if (v.dtype == DType::u1) {
        a.kind = ArgKind::kBool;
        a.i = 0;
      } else {
        a.kind = ArgKind::kScalar;
        a.dtype = v.dtype;
        if (dtype_is_float(v.dtype)) {
          a.f = 0.5;
        } else {
          a.i = v.div16 ? 16 : 3;
        }
      }
      break;
    case Value::Kind::kInt:
      a.kind = ArgKind::kInt;
      a.big = v.big ? 1 : 0;
      if (v.big) {
        a.u = v.u;
      } else {
        a.i = v.i;
      }
      break;
    case Value::Kind::kFloat:
      a.kind = ArgKind::kFloat;
      a.f = v.f;
      break;
    case Value::Kind::kBool:
      a.kind = ArgKind::kBool;
      a.i = v.i;
      break;
    case Value::Kind::kNone:
      a.kind = ArgKind::kNone;
      break;
    case Value::Kind::kStr:
      a.kind = ArgKind::kStr;
      a.s = v.text.data();
      a.count = static_cast<uint32_t>(v.text.size());
      break;
    case Value::Kind::kDType:
      a.kind = ArgKind::kDType;
      a.dtype = v.dtype;
      break;
    case Value::Kind::kWord:
      break;  // refused by parse_call (positional) and bind (named)
  }
  return a;
}

OptionValue to_option(const Call& c, const Named& n) {
  const Value& v = n.value;
  switch (v.kind) {
    case Value::Kind::kInt:
      TE_CHECK(!v.big, ValueError) << c.where() << ": option " << n.name << "=" << v.text
                                   << ": the value is out of range; expected a 64-bit integer";
      return OptionValue(v.i);
    case Value::Kind::kFloat:
      return OptionValue(v.f);
    case Value::Kind::kBool:
      return OptionValue(v.i != 0);
    case Value::Kind::kNone:
      TE_THROW(ValueError) << c.where() << ": option " << n.name << "=None: an option cannot be "
                           << "None; leave it out to get Triton's default";
    default:
      return OptionValue(v.text);  // a string: arch=sm90a, or a word that reads as another form
  }
}

}  // namespace

BoundCall bind(const Call& c, const JitFunction& k) {
  const std::vector<ParamInfo>& params = k.params();
  BoundCall b;
  b.npos = c.positional.size();
  b.vals.reserve(c.positional.size() + c.named.size());
  for (size_t i = 0; i < c.positional.size(); ++i) {
    const int param = i < params.size() ? static_cast<int>(i) : -1;
    b.vals.push_back(to_arg(c, k, param, b.vals.size(), c.positional[i]));
  }
  for (const Named& n : c.named) {
    int param = -1;
    for (size_t p = 0; p < params.size(); ++p) {
      if (params[p].name == n.name) param = static_cast<int>(p);
    }
    if (param < 0) {
      b.options.set(n.name, to_option(c, n));
      continue;
    }
    TE_CHECK(n.value.kind != Value::Kind::kWord, ValueError)
        << c.where() << ": " << detail::kernel_arg_where(detail::JitAccess::state(k), param) << ": "
        << n.value.error;
    b.vals.push_back(to_arg(c, k, param, b.vals.size(), n.value));
    b.names.push_back(ArgName(n.name.data(), n.name.size()));
  }
  return b;
}

}  // namespace triton_embed::tools
