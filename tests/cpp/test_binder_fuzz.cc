// A randomized property test of the argument binder against the installed Triton's binder:
// random argument lists (integers at every boundary, floats, bools, None, pointers of every
// alignment and dtype, strings, dtypes, tl.constexpr values, nested tuples, left-out
// defaults, wrong counts) bound to the kernels of tests/kernels/te_fuzz_kernels.py (every
// flag, annotation, constexpr and default mixed). For each list triton_embed's
// specialisation (types, keys, constexpr values) must equal Triton's binder's, or both must
// fail: with the same exception type at the same parameter, or with the error triton_embed
// raises where Triton fails only at launch (the predictor below, as in
// test_specialize_parity.cc).
//
// Budget: TRITON_EMBED_FUZZ_CASES cases (default 20000, about 2 s; 2000 under a sanitizer), seed
// TRITON_EMBED_FUZZ_SEED (default: a fresh one, printed). The regression file
// (tests/cpp/binder_fuzz_regressions.txt) is replayed first; a disagreement is appended to
// it (commit it with the fix), and the failure names the seed and the case.

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;
using te::detail::ArgKind;
using te::detail::ArgValue;

namespace {

// ---- values: one tree, three forms (text, Python expression, ArgValue) ----------------------

struct Val {
  char tag = 'n';  // i int64, u uint64 >= 2^63, b bool, f float, n None, p pointer, s str,
                   // d dtype, c tl.constexpr(elems[0]), t tuple
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  int dtype = 0;
  std::string s;
  std::vector<Val> elems;
};

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
  return buf;
}

std::string float_text(double f) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%a", f);
  return buf;
}

// Text form: i:-5 u:18446744073709551615 b:1 f:0x1.8p+0 n p:0x1000:11 s:abc d:11 c(i:5)
// t(i:1,n) t()
std::string to_text(const Val& v) {
  switch (v.tag) {
    case 'i':
      return "i:" + std::to_string(v.i);
    case 'u':
      return "u:" + std::to_string(v.u);
    case 'b':
      return std::string("b:") + (v.i ? "1" : "0");
    case 'f':
      return "f:" + float_text(v.f);
    case 'n':
      return "n";
    case 'p':
      return "p:" + hex(v.u) + ":" + std::to_string(v.dtype);
    case 's':
      return "s:" + v.s;
    case 'd':
      return "d:" + std::to_string(v.dtype);
    case 'c':
      return "c(" + to_text(v.elems[0]) + ")";
    default: {
      std::string out = "t(";
      for (size_t k = 0; k < v.elems.size(); ++k) out += (k ? "," : "") + to_text(v.elems[k]);
      return out + ")";
    }
  }
}

class Parser {
 public:
  explicit Parser(const std::string& text) : t_(text) {}
  Val value() {
    Val v;
    v.tag = next();
    if (v.tag == 'n') return v;
    if (v.tag == 'c' || v.tag == 't') {
      expect('(');
      if (v.tag == 't' && peek() == ')') {
        ++pos_;
        return v;
      }
      for (;;) {
        v.elems.push_back(value());
        if (v.tag == 't' && peek() == ',') {
          ++pos_;
          continue;
        }
        expect(')');
        return v;
      }
    }
    expect(':');
    const std::string tok = token();
    switch (v.tag) {
      case 'i':
        v.i = std::stoll(tok);
        break;
      case 'u':
        v.u = std::stoull(tok);
        break;
      case 'b':
        v.i = tok == "1";
        break;
      case 'f':
        v.f = std::strtod(tok.c_str(), nullptr);
        break;
      case 's':
        v.s = tok;
        break;
      case 'd':
        v.dtype = std::stoi(tok);
        break;
      case 'p': {
        const size_t colon = tok.find(':');
        if (colon == std::string::npos) throw std::runtime_error("bad pointer '" + tok + "'");
        v.u = std::stoull(tok.substr(0, colon), nullptr, 16);
        v.dtype = std::stoi(tok.substr(colon + 1));
        break;
      }
      default:
        throw std::runtime_error("bad tag in '" + t_ + "'");
    }
    return v;
  }
  bool done() const { return pos_ >= t_.size(); }

 private:
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  char next() {
    if (pos_ >= t_.size()) throw std::runtime_error("truncated value '" + t_ + "'");
    return t_[pos_++];
  }
  void expect(char c) {
    if (next() != c) throw std::runtime_error(std::string("expected '") + c + "' in '" + t_ + "'");
  }
  std::string token() {  // up to ',' or ')' (a pointer's "addr:dtype" included)
    const size_t start = pos_;
    while (pos_ < t_.size() && t_[pos_] != ',' && t_[pos_] != ')') ++pos_;
    return t_.substr(start, pos_ - start);
  }
  std::string t_;
  size_t pos_ = 0;
};

std::string dtype_tl(int d) { return std::string(te::dtype_tl_name(static_cast<te::DType>(d))); }

std::string to_python(const Val& v) {
  switch (v.tag) {
    case 'i':
      return std::to_string(v.i);
    case 'u':
      return std::to_string(v.u);
    case 'b':
      return v.i ? "True" : "False";
    case 'f':
      return "float.fromhex('" + float_text(v.f) + "')";
    case 'n':
      return "None";
    case 'p':
      return "P(" + hex(v.u) + ", '" + dtype_tl(v.dtype) + "')";
    case 's':
      return "'" + v.s + "'";
    case 'd':
      return "tl." + dtype_tl(v.dtype);
    case 'c':
      return "tl.constexpr(" + to_python(v.elems[0]) + ")";
    default: {
      std::string out = "(";
      for (const Val& e : v.elems) out += to_python(e) + ", ";
      return out + ")";
    }
  }
}

// ArgValues of a value tree; nested arrays are kept in `pool`, strings point into the tree.
class ArgBuilder {
 public:
  void fill(const Val& v, ArgValue& out) {
    out = ArgValue{};
    switch (v.tag) {
      case 'i':
        out.kind = ArgKind::kInt;
        out.i = v.i;
        return;
      case 'u':
        out.kind = ArgKind::kInt;
        out.big = 1;
        out.u = v.u;
        return;
      case 'b':
        out.kind = ArgKind::kBool;
        out.i = v.i;
        return;
      case 'f':
        out.kind = ArgKind::kFloat;
        out.f = v.f;
        return;
      case 'n':
        out.kind = ArgKind::kNone;
        return;
      case 'p':
        out.kind = ArgKind::kPointer;
        out.dtype = static_cast<te::DType>(v.dtype);
        out.u = v.u;
        return;
      case 's':
        out.kind = ArgKind::kStr;
        out.s = v.s.data();
        out.count = static_cast<uint32_t>(v.s.size());
        return;
      case 'd':
        out.kind = ArgKind::kDType;
        out.dtype = static_cast<te::DType>(v.dtype);
        return;
      default: {
        ArgValue* elems = alloc(v.elems.size());
        for (size_t k = 0; k < v.elems.size(); ++k) fill(v.elems[k], elems[k]);
        out.kind = v.tag == 'c' ? ArgKind::kConstexpr : ArgKind::kTuple;
        out.count = v.tag == 'c' ? 0 : static_cast<uint32_t>(v.elems.size());
        out.elems = elems;
        return;
      }
    }
  }

 private:
  ArgValue* alloc(size_t n) {
    pool_.push_back(std::make_unique<ArgValue[]>(n == 0 ? 1 : n));
    return pool_.back().get();
  }
  std::vector<std::unique_ptr<ArgValue[]>> pool_;
};

// ---- random values --------------------------------------------------------------------------

constexpr int kLastDType = static_cast<int>(te::DType::fp64);

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  uint64_t below(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }

  Val value(int depth) {
    Val v;
    const uint64_t r = below(100);
    if (r < 28) return integer();
    if (r < 35) {
      v.tag = 'b';
      v.i = static_cast<int64_t>(below(2));
    } else if (r < 45) {
      static const double kFloats[] = {0.0,     -0.0, 1.0,   1.5,   16.0,   -2.5,      65504.0,
                                       65520.0, 1e6,  1e300, -1e-8, 3.0e-8, 1.0 / 0.0, -1.0 / 0.0};
      v.tag = 'f';
      v.f = chance(70) ? kFloats[below(std::size(kFloats))]
                       : std::ldexp(static_cast<double>(below(1u << 20)) - (1 << 19),
                                    static_cast<int>(below(60)) - 30);
    } else if (r < 51) {
      v.tag = 'n';
    } else if (r < 72) {
      v.tag = 'p';
      const uint64_t base = (below(uint64_t{1} << 40) + 1) << 8;
      v.u = chance(5) ? 0 : base + (chance(50) ? 0 : below(32));
      v.dtype = 1 + static_cast<int>(below(kLastDType));
    } else if (r < 78) {
      static const char* kStrs[] = {"abc", "mode", "fp16", "double", "x", "add_1"};
      v.tag = 's';
      v.s = kStrs[below(std::size(kStrs))];
    } else if (r < 83) {
      v.tag = 'd';
      v.dtype = 1 + static_cast<int>(below(kLastDType));
    } else if (r < 89) {
      v.tag = 'c';
      Val inner = chance(60) ? integer() : value(2);
      while (inner.tag == 'c' || inner.tag == 't' || inner.tag == 'p' || inner.tag == 'd')
        inner = integer();
      v.elems.push_back(inner);
    } else if (depth < 2) {
      v.tag = 't';
      const uint64_t n = below(4);
      for (uint64_t k = 0; k < n; ++k) v.elems.push_back(value(depth + 1));
    } else {
      return integer();
    }
    return v;
  }

 private:
  Val integer() {
    static const int64_t kEdges[] = {0,
                                     1,
                                     -1,
                                     2,
                                     15,
                                     16,
                                     17,
                                     32,
                                     127,
                                     128,
                                     -128,
                                     -129,
                                     255,
                                     256,
                                     32767,
                                     32768,
                                     -32768,
                                     65535,
                                     65536,
                                     2147483647,
                                     2147483648LL,
                                     -2147483647LL - 1,
                                     -2147483649LL,
                                     4294967295LL,
                                     4294967296LL,
                                     INT64_MAX,
                                     INT64_MIN,
                                     INT64_MAX - 15,
                                     INT64_MIN + 16};
    static const uint64_t kBig[] = {uint64_t{1} << 63, UINT64_MAX, UINT64_MAX - 15,
                                    (uint64_t{1} << 63) + 16};
    Val v;
    v.tag = 'i';
    const uint64_t r = below(100);
    if (r < 55) {
      v.i = kEdges[below(std::size(kEdges))];
    } else if (r < 62) {
      v.tag = 'u';
      v.u = kBig[below(std::size(kBig))];
    } else if (r < 80) {
      v.i = static_cast<int64_t>(below(1u << 20)) * 16 - (int64_t{1} << 23);
    } else {
      const int bits = 1 + static_cast<int>(below(63));
      v.i = static_cast<int64_t>(below(uint64_t{1} << bits));
      if (chance(40)) v.i = -v.i;
    }
    return v;
  }
  std::mt19937_64 rng_;
};

// ---- the two sides --------------------------------------------------------------------------

const char* kKernels[] = {"f_plain",    "f_flags",    "f_annotated", "f_narrow",
                          "f_defaults", "f_pointers", "f_tuples",    "f_mixed"};

// Triton's result for a call, as "spec: <repr>" or "error: <type> at <#i | count>". Per
// parameter: the error triton_embed raises where Triton accepts at bind time and fails only
// at launch (or, for a pointer in a tl.constexpr parameter, bakes the object into the
// kernel), else Triton's binder's result for that parameter alone; the first error wins. The
// whole call also goes through the kernel's own binder, which must agree with the parts.
const char* kPythonSide = R"PY(
import inspect
from triton.runtime.jit import create_function_from_signature
from triton.compiler.compiler import make_backend
import te_fuzz_kernels

_backend = make_backend(GPUTarget("cuda", 90, 32))
_full, _single = {}, {}
from te_helpers import predicted_launch_error as _predicted

def _one(fn, i, value):
    kp = fn.params[i]
    predicted = _predicted(kp, value)
    if predicted:
        return None, predicted
    if (fn, i) not in _single:
        p = list(fn.signature.parameters.values())[i].replace(default=inspect.Parameter.empty)
        _single[(fn, i)] = create_function_from_signature(inspect.Signature([p]), [kp], _backend)
    try:
        return _single[(fn, i)](value)[1][0], None
    except Exception as e:
        return None, type(e).__name__

def triton_result(kernel, values):
    fn = getattr(te_fuzz_kernels, kernel)
    if kernel not in _full:
        _full[kernel] = create_function_from_signature(fn.signature, fn.params, _backend)
    ps = list(fn.signature.parameters.values())
    required = sum(p.default is inspect.Parameter.empty for p in ps)
    try:
        whole = repr(_full[kernel](*values)[1])
    except Exception as e:
        whole = type(e).__name__
    if not required <= len(values) <= len(ps):
        assert whole == "TypeError", whole
        return "error: TypeError at count"
    full = list(values) + [p.default for p in ps[len(values):]]
    specs = []
    for i, v in enumerate(full):
        spec, err = _one(fn, i, v)
        if err:
            return "error: %s at #%d" % (err, i)
        specs.append(spec)
    assert whole == repr(specs), (whole, specs)
    return "spec: " + whole
)PY";

std::string error_kind(const te::Error& e) {
  if (dynamic_cast<const te::OverflowError*>(&e)) return "OverflowError";
  if (dynamic_cast<const te::TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const te::ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const te::LookupError*>(&e)) return "LookupError";
  if (dynamic_cast<const te::NotSupportedError*>(&e)) return "NotSupportedError";
  return "Error";
}

// triton_embed's result in the same form ("at #i" from the message's "argument #i").
std::string ours_result(const te::JitFunction& fn, const std::vector<Val>& args) {
  ArgBuilder b;
  ArgValue vals[te::detail::kMaxArgs + 2];
  for (size_t k = 0; k < args.size(); ++k) b.fill(args[k], vals[k]);
  try {
    te_test::Gil gil;
    py::object r = te_test::steal(
        te::detail::testing::specialization(te::detail::testing::state(fn), vals, args.size()));
    return "spec: " + te_test::repr(r[py::int_(0)]);
  } catch (const te::Error& e) {
    const std::string msg = e.what();
    const size_t at = msg.find(": argument #");
    const std::string where =
        at == std::string::npos ? "count" : "#" + std::to_string(std::atoi(msg.c_str() + at + 12));
    return "error: " + error_kind(e) + " at " + where;
  }
}

struct Case {
  std::string kernel;
  std::vector<Val> args;
  std::string text() const {
    std::string out = kernel;
    for (const Val& v : args) out += " " + to_text(v);
    return out;
  }
  std::string python() const {
    std::string out = "(";
    for (const Val& v : args) out += to_python(v) + ", ";
    return out + ")";
  }
};

Case parse_case(const std::string& line) {
  std::istringstream in(line);
  Case c;
  in >> c.kernel;
  std::string tok;
  while (in >> tok) {
    Parser p(tok);
    c.args.push_back(p.value());
    if (!p.done()) throw std::runtime_error("trailing text in '" + tok + "'");
  }
  return c;
}

class BinderFuzz : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec(kPythonSide);
  }

  void SetUp() override {
    for (const char* k : kKernels) fns_.emplace_back("te_fuzz_kernels", k);
  }

  const te::JitFunction& fn(const std::string& name) {
    for (size_t k = 0; k < std::size(kKernels); ++k) {
      if (name == kKernels[k]) return fns_[k];
    }
    throw std::runtime_error("no fuzz kernel '" + name + "'");
  }

  // Compares both sides for one case; "" when they agree, else a description. `ours` gets
  // triton_embed's result.
  std::string compare(const Case& c, std::string* ours_out = nullptr) {
    const std::string ours = ours_result(fn(c.kernel), c.args);
    if (ours_out != nullptr) *ours_out = ours;
    te_test::Gil gil;
    py::tuple values = te_test::eval(c.python()).cast<py::tuple>();
    const std::string theirs =
        py::module_::import("__main__").attr("triton_result")(c.kernel, values).cast<std::string>();
    if (ours == theirs) return "";
    return c.kernel + c.python() + "\n  triton_embed: " + ours + "\n  Triton:       " + theirs;
  }

  std::vector<te::JitFunction> fns_;
};

std::vector<std::string> regression_lines() {
  std::ifstream in(TE_FUZZ_REGRESSIONS);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 0) : fallback;
}

TEST_F(BinderFuzz, RegressionsAgreeWithTriton) {
  const std::vector<std::string> lines = regression_lines();
  ASSERT_GE(lines.size(), 10u) << "cannot read " << TE_FUZZ_REGRESSIONS;
  for (const std::string& line : lines) {
    const Case c = parse_case(line);
    ASSERT_EQ(c.text(), line) << "the regression line does not round-trip";
    const std::string diff = compare(c);
    EXPECT_EQ(diff, "") << "regression case: " << line;
  }
}

TEST_F(BinderFuzz, RandomCallsAgreeWithTriton) {
  const bool sanitized =
      std::getenv("ASAN_OPTIONS") != nullptr || std::getenv("TSAN_OPTIONS") != nullptr;
  const uint64_t cases = env_u64("TRITON_EMBED_FUZZ_CASES", sanitized ? 2000 : 20000);
  const uint64_t seed =
      env_u64("TRITON_EMBED_FUZZ_SEED", std::random_device{}() * uint64_t{0x100000001} ^
                                            static_cast<uint64_t>(std::time(nullptr)));
  std::printf("binder fuzz: %" PRIu64 " cases, TRITON_EMBED_FUZZ_SEED=%" PRIu64 "\n", cases, seed);
  Gen g(seed);
  const std::vector<std::string> known = regression_lines();
  int errors = 0, specs = 0, failures = 0;
  for (uint64_t n = 0; n < cases; ++n) {
    Case c;
    const size_t which = g.below(std::size(kKernels));
    c.kernel = kKernels[which];
    const size_t np = fns_[which].params().size();
    const size_t count = g.chance(8) ? g.below(np + 3) : np - (g.chance(30) ? g.below(3) : 0);
    for (size_t k = 0; k < count; ++k) c.args.push_back(g.value(0));
    std::string ours;
    const std::string diff = compare(c, &ours);
    if (diff.empty()) {
      (ours.rfind("spec", 0) == 0 ? specs : errors)++;
      continue;
    }
    ++failures;
    const std::string line = c.text();
    ADD_FAILURE() << "TRITON_EMBED_FUZZ_SEED=" << seed << " case " << n << ": " << diff
                  << "\n  recorded in " << TE_FUZZ_REGRESSIONS << " as: " << line;
    bool seen = false;
    for (const std::string& k : known) seen = seen || k == line;
    if (!seen) std::ofstream(TE_FUZZ_REGRESSIONS, std::ios::app) << line << "\n";
    if (failures >= 20) break;
  }
  std::printf("binder fuzz: %d specialisations and %d errors agreed\n", specs, errors);
  // Both outcomes must be well represented, or the generator has drifted.
  if (failures == 0 && cases >= 400) {
    EXPECT_GT(specs, static_cast<int>(cases / 10));
    EXPECT_GT(errors, static_cast<int>(cases / 10));
  }
}

}  // namespace
