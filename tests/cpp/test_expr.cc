// Heuristics as expressions (src/expr/, src/python/expr_tree.cc, glue/translation.py's
// heuristic_expression): for every supported form, the runtime's evaluation equals Python's
// call of the heuristic on random arguments (value and type, or the exception Python raises);
// forms outside them are named; programs round-trip through their bytes and malformed bytes
// are refused.

#include <gtest/gtest.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "expr/eval.h"
#include "expr/program.h"
#include "python/expr_tree.h"
#include "test_support.h"

namespace te = triton_embed;
namespace ex = triton_embed::detail::expr;
namespace py = pybind11;
using te::detail::ArgKind;
using te::detail::ArgValue;

namespace {

class Expr : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec("import te_expr_cases\nimport math\nimport torch\n");
  }
};

// The ArgValue a C++ caller would pass for a Python value of the test's kinds.
ArgValue to_arg(py::handle v, std::deque<std::string>& strings) {
  ArgValue a;
  std::memset(static_cast<void*>(&a), 0, sizeof(a));
  if (v.is_none()) {
    a.kind = ArgKind::kNone;
  } else if (py::isinstance<py::bool_>(v)) {
    a.kind = ArgKind::kBool;
    a.i = v.cast<bool>();
  } else if (py::isinstance<py::int_>(v)) {
    a.kind = ArgKind::kInt;
    a.i = v.cast<int64_t>();
  } else if (py::isinstance<py::float_>(v)) {
    a.kind = ArgKind::kFloat;
    a.f = v.cast<double>();
  } else if (py::isinstance<py::str>(v)) {
    strings.push_back(v.cast<std::string>());
    a.kind = ArgKind::kStr;
    a.s = strings.back().c_str();
    a.count = static_cast<uint32_t>(strings.back().size());
  } else if (py::isinstance(v, te_test::eval("te_expr_cases.TensorDescriptor"))) {
    // A host descriptor (triton's TensorDescriptor, or a subclass): a C++ caller passes a
    // triton_embed::TensorDescriptor, the Python fast path converts these; a hook reads
    // nothing of it but what it is.
    a.kind = ArgKind::kTensorDesc;
  } else if (py::isinstance(v, te_test::eval("torch.Tensor"))) {  // a tensor: its dtype
    a.kind = ArgKind::kPointer;
    a.u = 0x10000;
    a.dtype = te::dtype_from_name(py::str(v.attr("dtype")).cast<std::string>().substr(6));
  } else {  // any other object
    a.kind = ArgKind::kPyObject;
    a.ptr = v.ptr();
  }
  return a;
}

// The arguments of a call whose Python dict is `args`, by parameter, and which it holds (bit p:
// parameter p is in the dict; one left out is absent from Python's dict).
struct Bound {
  std::deque<std::string> strings;
  std::vector<ArgValue> vals;
  uint64_t given[2] = {0, 0};
};
void bind_args(py::dict args, const std::vector<std::string>& params, Bound& b) {
  for (size_t i = 0; i < params.size(); ++i) {
    const py::str key(params[i]);
    if (args.contains(key)) {
      b.vals.push_back(to_arg(args[key], b.strings));
      b.given[i >> 6] |= uint64_t{1} << (i & 63);
    } else {
      b.vals.push_back(to_arg(py::none(), b.strings));
    }
  }
}

// The Python value of an evaluation's result.
py::object to_python(const ex::Value& v) {
  using K = ex::Value::Kind;
  switch (v.kind) {
    case K::kNone:
      return py::none();
    case K::kBool:
      return py::bool_(v.i != 0);
    case K::kInt: {
      // Through text: an __int128 has no direct conversion.
      __int128 x = v.i;
      const bool neg = x < 0;
      unsigned __int128 u =
          neg ? -static_cast<unsigned __int128>(x) : static_cast<unsigned __int128>(x);
      std::string digits;
      do {
        digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(u % 10)));
        u /= 10;
      } while (u != 0);
      return te_test::eval("int('" + std::string(neg ? "-" : "") + digits + "')");
    }
    case K::kFloat:
      return py::float_(v.f);
    case K::kStr:
      return py::str(std::string(v.s));
    case K::kDType:
      return py::str("dtype");
  }
  return py::none();
}

const char* fault_python_type(ex::Fault f) {
  switch (f) {
    case ex::Fault::kZeroDivision:
      return "ZeroDivisionError";
    case ex::Fault::kTypeError:
      return "TypeError";
    case ex::Fault::kValueError:
      return "ValueError";
    case ex::Fault::kOverflowError:
      return "OverflowError";
    case ex::Fault::kKeyError:
      return "KeyError";
    default:
      return "";
  }
}

TEST_F(Expr, EqualsPythonOnRandomInputsForEverySupportedForm) {
  te_test::Gil gil;
  py::dict cases = te_test::eval("te_expr_cases.CASES");
  ASSERT_GE(cases.size(), 30u);
  int compared = 0, raised = 0, unmodelled = 0;
  for (auto item : cases) {
    const std::string name = item.first.cast<std::string>();
    py::tuple c = py::reinterpret_borrow<py::tuple>(item.second);
    std::vector<std::string> params;
    for (auto k : py::dict(c[0])) params.push_back(k.first.cast<std::string>());
    std::string why;
    const ex::Program p = te::detail::py::heuristic_program(c[1], params, &why);
    ASSERT_FALSE(p.empty()) << name << ": " << why;
    // Through its bytes, as a bundle holds it.
    ex::Program q;
    ASSERT_TRUE(ex::Program::decode(p.encode(), static_cast<uint32_t>(params.size()), &q, &why))
        << why;
    ASSERT_EQ(q.encode(), p.encode());
    for (int seed = 0; seed < 400; ++seed) {
      py::dict args = te_test::eval("te_expr_cases").attr("random_args")(name, seed);
      Bound b;
      bind_args(args, params, b);
      const ex::Result r =
          ex::evaluate(q, b.vals.data(), static_cast<uint32_t>(b.vals.size()), b.given);
      py::tuple want = te_test::eval("te_expr_cases").attr("run")(name, args);
      const std::string where = name + " " + q.str(params) + " with " + te_test::repr(args);
      if (want[0].cast<std::string>() == "raise") {
        ++raised;
        EXPECT_EQ(fault_python_type(r.fault), want[1].cast<std::string>())
            << where << ": Python raised, ours: " << r.what;
        continue;
      }
      if (r.fault == ex::Fault::kUnmodelled) {
        // A value beyond what the evaluator models (an int past 128 bits on the way): it says
        // so and the caller falls back; rare by construction of the inputs.
        ++unmodelled;
        continue;
      }
      ASSERT_EQ(r.fault, ex::Fault::kNone)
          << where << ": " << r.what << "; Python gave " << te_test::repr(want[1]);
      const py::object got = to_python(r.value);
      // Same type, same repr (floats: -0.0, nan and inf included).
      EXPECT_EQ(te_test::repr(py::type::handle_of(got)),
                te_test::repr(py::type::handle_of(want[1])))
          << where;
      EXPECT_EQ(te_test::repr(got), te_test::repr(want[1])) << where;
      ++compared;
    }
  }
  EXPECT_GT(compared, 10000);
  EXPECT_LT(unmodelled, compared / 200) << "evaluations the evaluator declined";
  EXPECT_GT(raised, 50);  // division by zero, order comparisons of strings and numbers
}

// The ops' heuristics (pykernels' softmax, norm and matmul, row_warps with its local name
// included) are all expressions: a runtime-only program computes them for any arguments.
TEST_F(Expr, TheOpsHeuristicsTranslate) {
  te_test::Gil gil;
  py::list found = te_test::eval("te_expr_cases").attr("ops_heuristics")();
  EXPECT_GE(found.size(), 5u);
  for (auto item : found) {
    py::tuple c = py::reinterpret_borrow<py::tuple>(item);
    std::vector<std::string> params;
    for (auto p : py::list(c[2])) params.push_back(p.cast<std::string>());
    std::string why;
    const ex::Program p = te::detail::py::heuristic_program(c[1], params, &why);
    EXPECT_FALSE(p.empty()) << c[0].cast<std::string>() << ": " << why;
  }
}

TEST_F(Expr, FormsOutsideTheEvaluatorAreNamed) {
  te_test::Gil gil;
  py::dict cases = te_test::eval("te_expr_cases.UNSUPPORTED");
  std::vector<std::string> params;
  for (auto p : py::list(te_test::eval("te_expr_cases.UNSUPPORTED_PARAMS")))
    params.push_back(p.cast<std::string>());
  for (auto item : cases) {
    py::tuple c = py::reinterpret_borrow<py::tuple>(item.second);
    std::string why;
    const ex::Program p = te::detail::py::heuristic_program(c[0], params, &why);
    EXPECT_TRUE(p.empty()) << item.first.cast<std::string>();
    EXPECT_NE(why.find(c[1].cast<std::string>()), std::string::npos)
        << item.first.cast<std::string>() << ": " << why;
  }
}

// Config pre-hooks: the actions the runtime applies equal what Python's hook does to the
// descriptors (the block shapes it set, of the type it assigned, and which it set none of) and
// tensors (zeroed), on random configs; the hooks of the fused-attention tutorial set them only
// where the call passes host descriptors.
TEST_F(Expr, PreHooksEqualPythonOnRandomConfigs) {
  te_test::Gil gil;
  py::dict cases = te_test::eval("te_expr_cases.HOOK_CASES");
  std::set<std::string> guarded;
  for (auto n : py::list(te_test::eval("te_expr_cases.GUARDED_HOOK_CASES")))
    guarded.insert(n.cast<std::string>());
  int compared = 0;
  for (auto item : cases) {
    const std::string name = item.first.cast<std::string>();
    py::tuple c = py::reinterpret_borrow<py::tuple>(item.second);
    std::vector<std::string> params;
    for (auto k : py::dict(c[0])) params.push_back(k.first.cast<std::string>());
    std::string why;
    const ex::Hook h = te::detail::py::hook_program(c[1], params, &why);
    ASSERT_FALSE(h.actions.empty()) << name << ": " << why;
    ex::Hook back;
    ASSERT_TRUE(ex::Hook::decode(h.encode(), static_cast<uint32_t>(params.size()), &back, &why))
        << why;
    ASSERT_EQ(back.encode(), h.encode());
    const bool has_guard = std::any_of(h.actions.begin(), h.actions.end(),
                                       [](const ex::HookAction& a) { return !a.guard.empty(); });
    EXPECT_EQ(has_guard, guarded.count(name) == 1) << name << ": " << h.str(params);
    EXPECT_EQ(h.encode()[0], has_guard ? 3 : name == "attention" ? 2 : 1) << name;
    std::set<std::string> outcomes;  // what the hook did, over the random calls
    for (int seed = 0; seed < 200; ++seed) {
      py::dict nargs = te_test::eval("te_expr_cases").attr("random_hook_args")(name, seed);
      Bound b;
      bind_args(nargs, params, b);
      const ex::HookResult r =
          ex::apply(back, b.vals.data(), static_cast<uint32_t>(b.vals.size()), b.given);
      py::tuple want = te_test::eval("te_expr_cases").attr("run_hook")(name, nargs);
      const std::string where = name + " " + back.str(params) + " with " + te_test::repr(nargs);
      if (want[0].cast<std::string>() == "raise") {
        EXPECT_EQ(fault_python_type(r.fault), want[1].cast<std::string>())
            << where << ": " << r.what;
        outcomes.insert("raise");
        continue;
      }
      ASSERT_EQ(r.fault, ex::Fault::kNone) << where << ": " << r.what;
      // The block shape each argument ends with (a later one replaces an earlier), by name.
      std::map<std::string, py::object> ours_blocks;
      for (uint32_t i = 0; i < r.num_blocks; ++i) {
        const ex::HookResult::Block& b = r.blocks[i];
        py::list py_dims;  // as the hook assigned it: a list, or a tuple
        for (uint8_t d = 0; d < b.rank; ++d) py_dims.append(b.dims[d]);
        ours_blocks[params[b.param]] =
            b.tuple ? py::object(py::tuple(py_dims)) : py::object(py_dims);
      }
      py::list blocks;
      for (const auto& [p, shape] : ours_blocks) blocks.append(py::make_tuple(p, shape));
      EXPECT_EQ(te_test::repr(blocks), te_test::repr(want[1])) << where;
      py::list zeroed;
      std::vector<std::string> ours;
      for (uint32_t i = 0; i < r.num_zeroed; ++i) ours.push_back(params[r.zeroed[i]]);
      std::sort(ours.begin(), ours.end());
      for (const std::string& z : ours) zeroed.append(z);
      EXPECT_EQ(te_test::repr(zeroed), te_test::repr(want[2])) << where;
      std::string did;
      for (const auto& [p, shape] : ours_blocks) did += p + " ";
      outcomes.insert(did + "| " + te_test::repr(zeroed));
      ++compared;
    }
    if (guarded.count(name) == 1) {
      EXPECT_GE(outcomes.size(), 2u) << name << ": the random calls took one path only";
    }
  }
  EXPECT_GT(compared, 1500);
}

TEST_F(Expr, PreHookFormsOutsideTheTranslatorAreNamed) {
  te_test::Gil gil;
  py::dict cases = te_test::eval("te_expr_cases.HOOK_UNSUPPORTED");
  const std::vector<std::string> params = {"a", "BLOCK_M"};
  for (auto item : cases) {
    const std::string name = item.first.cast<std::string>();
    py::object hook = te_test::eval("te_expr_cases").attr("unsupported_hook")(name);
    std::string why;
    const ex::Hook h = te::detail::py::hook_program(hook, params, &why);
    EXPECT_TRUE(h.actions.empty()) << name;
    const std::string expected =
        py::reinterpret_borrow<py::tuple>(item.second)[1].cast<std::string>();
    EXPECT_NE(why.find(expected), std::string::npos) << name << ": " << why;
  }
}

// A hook with a tuple block shape is written as hook format 2 (format 1 has no kind 2): it
// reads back; the same bytes labelled format 1, or a format this library does not know, are
// refused with the reason.
TEST_F(Expr, TupleBlockShapesAreHookFormat2) {
  std::vector<ex::Node> nodes(1);
  nodes[0].op = ex::Op::kArg;
  nodes[0].param = 1;
  ex::Hook h;
  ex::HookAction a;
  a.kind = ex::HookAction::Kind::kBlockShapeTuple;
  a.param = 0;
  a.dims.push_back(ex::Program::from_nodes(nodes));
  h.actions.push_back(a);
  std::string bytes = h.encode();
  ASSERT_EQ(bytes[0], 2);
  ex::Hook back;
  std::string why;
  ASSERT_TRUE(ex::Hook::decode(bytes, 2, &back, &why)) << why;
  EXPECT_EQ(back.str({"d", "BM"}), "nargs[\"d\"].block_shape = (args[\"BM\"],)");
  te::ArgValue vals[2] = {};
  vals[1].kind = te::ArgKind::kInt;
  vals[1].i = 64;
  const ex::HookResult r = ex::apply(back, vals, 2);
  ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
  ASSERT_EQ(r.num_blocks, 1u);
  EXPECT_TRUE(r.blocks[0].tuple);
  EXPECT_EQ(r.blocks[0].dims[0], 64);
  bytes[0] = 1;
  EXPECT_FALSE(ex::Hook::decode(bytes, 2, &back, &why));
  EXPECT_EQ(why, "hook action 0: kind 2, parameter 0, 1 dimensions");
  bytes[0] = 3;  // format 3 has each action's guard after its dimensions: none here
  EXPECT_FALSE(ex::Hook::decode(bytes, 2, &back, &why));
  EXPECT_EQ(why, "truncated");
  bytes[0] = 4;
  EXPECT_FALSE(ex::Hook::decode(bytes, 2, &back, &why));
  EXPECT_EQ(why, "hook format 4, this library reads 1, 2 and 3");
  h.actions[0].kind = ex::HookAction::Kind::kBlockShape;  // lists stay format 1
  EXPECT_EQ(h.encode()[0], 1);
}

// Little-endian bytes, written field by field as a bundle holds them.
struct Bytes {
  std::string s;
  template <class T>
  Bytes& put(T v) {
    s.append(reinterpret_cast<const char*>(&v), sizeof(v));
    return *this;
  }
  Bytes& append(const std::string& b) {
    s += b;
    return *this;
  }
};

// The bytes of a one-node program: expression format `format`, operation `op` of parameter
// `param`.
std::string one_node_program(uint8_t format, uint8_t op, uint16_t param) {
  Bytes b;
  b.put<uint8_t>(format).put<uint32_t>(1);
  b.put<uint8_t>(op).put<uint8_t>(0).put<uint16_t>(param);
  b.put<uint32_t>(0).put<uint32_t>(0).put<uint32_t>(0).put<int64_t>(0).put<double>(0);
  b.put<uint32_t>(0);
  return b.s;
}

// The bytes of a one-action block-shape hook: hook format `format`, action kind `kind` on
// parameter 0, one dimension `dim`.
std::string one_block_hook(uint8_t format, uint8_t kind, const std::string& dim) {
  Bytes b;
  b.put<uint8_t>(format).put<uint32_t>(1);
  b.put<uint8_t>(kind).put<uint16_t>(0).put<uint32_t>(1);
  b.put<uint32_t>(static_cast<uint32_t>(dim.size())).append(dim);
  return b.s;
}

ex::Program program(std::vector<ex::Node> nodes) { return ex::Program::from_nodes(nodes); }

ex::Node node(ex::Op op, uint16_t param = 0, uint32_t a = 0, uint32_t b = 0, int64_t i = 0) {
  ex::Node n;
  n.op = op;
  n.param = param;
  n.a = a;
  n.b = b;
  n.i = i;
  return n;
}

// The operations' numbers are stored in bundles: isinstance of a descriptor is appended after
// the last of expression format 1.
TEST_F(Expr, TheDescriptorTestIsAppendedToTheOperations) {
  EXPECT_EQ(static_cast<int>(ex::Op::kIf), 44);
  EXPECT_EQ(static_cast<int>(ex::Op::kArgIsDescriptor), 45);
  EXPECT_EQ(static_cast<int>(ex::Op::kCount), 46);
}

// Bytes written before guards and the descriptor test decode exactly as before, and encode
// back to the same bytes.
TEST_F(Expr, OldProgramAndHookBytesDecodeAsBefore) {
  const std::string arg1 = one_node_program(1, static_cast<uint8_t>(ex::Op::kArg), 1);
  ex::Program p;
  std::string why;
  ASSERT_TRUE(ex::Program::decode(arg1, 2, &p, &why)) << why;
  EXPECT_EQ(p.str({"d", "BM"}), "args[\"BM\"]");
  EXPECT_EQ(p.format(), 1);
  EXPECT_EQ(p.encode(), arg1);
  for (uint8_t format : {1, 2}) {
    const uint8_t kind = format == 1 ? 0 : 2;  // a list; a tuple (format 2)
    const std::string bytes = one_block_hook(format, kind, arg1);
    ex::Hook h;
    ASSERT_TRUE(ex::Hook::decode(bytes, 2, &h, &why)) << why;
    ASSERT_EQ(h.actions.size(), 1u);
    EXPECT_TRUE(h.actions[0].guard.empty());
    EXPECT_EQ(h.str({"d", "BM"}), format == 1 ? "nargs[\"d\"].block_shape = [args[\"BM\"]]"
                                              : "nargs[\"d\"].block_shape = (args[\"BM\"],)");
    EXPECT_EQ(h.encode(), bytes);
    te::ArgValue vals[2] = {};
    vals[0].kind = te::ArgKind::kPointer;  // not read: an unguarded action applies regardless
    vals[1].kind = te::ArgKind::kInt;
    vals[1].i = 32;
    const ex::HookResult r = ex::apply(h, vals, 2);
    ASSERT_EQ(r.num_blocks, 1u);
    EXPECT_EQ(r.blocks[0].dims[0], 32);
  }
}

// A program that asks whether an argument is a host descriptor is expression format 2: it
// round-trips; format 1 bytes holding the operation, a format this library does not know, and
// a hook of format 1 or 2 holding such a program are refused with the reason.
TEST_F(Expr, TheDescriptorTestIsExpressionFormat2) {
  // 64 if isinstance(args["d"], TensorDescriptor) else 32
  const ex::Program p = program({node(ex::Op::kArgIsDescriptor, 0), node(ex::Op::kInt, 0, 0, 0, 64),
                                 node(ex::Op::kInt, 0, 0, 0, 32), [] {
                                   ex::Node n = node(ex::Op::kIf, 0, 0, 1);
                                   n.c = 2;
                                   return n;
                                 }()});
  EXPECT_EQ(p.format(), 2);
  EXPECT_EQ(p.str({"d"}), "(64 if isinstance(args[\"d\"], TensorDescriptor) else 32)");
  ASSERT_EQ(p.reads().size(), 1u);
  EXPECT_EQ(p.reads()[0].param, 0);
  EXPECT_FALSE(p.reads()[0].dtype);
  std::string bytes = p.encode();
  ASSERT_EQ(bytes[0], 2);
  ex::Program back;
  std::string why;
  ASSERT_TRUE(ex::Program::decode(bytes, 1, &back, &why)) << why;
  EXPECT_EQ(back.encode(), bytes);
  EXPECT_FALSE(ex::Program::decode(bytes, 0, &back, &why));
  EXPECT_EQ(why, "node 0: parameter 0 of a kernel with 0");
  te::ArgValue v{};
  v.kind = te::ArgKind::kTensorDesc;
  ex::Result r = ex::evaluate(back, &v, 1);
  ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
  EXPECT_EQ(r.value.kind, ex::Value::Kind::kInt);
  EXPECT_EQ(static_cast<int64_t>(r.value.i), 64);
  for (te::ArgKind other : {te::ArgKind::kPointer, te::ArgKind::kNone, te::ArgKind::kPyObject,
                            te::ArgKind::kInt, te::ArgKind::kTuple}) {
    v.kind = other;
    r = ex::evaluate(back, &v, 1);
    ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
    EXPECT_EQ(static_cast<int64_t>(r.value.i), 32) << static_cast<int>(other);
  }
  const uint64_t none_given[1] = {0};
  r = ex::evaluate(back, &v, 1, none_given);
  EXPECT_EQ(r.fault, ex::Fault::kKeyError);
  // The operation in format 1 bytes.
  bytes[0] = 1;
  EXPECT_FALSE(ex::Program::decode(bytes, 1, &back, &why));
  EXPECT_EQ(why, "node 0: operation 45 (isinstance), which expression format 1 has not");
  EXPECT_FALSE(ex::Program::decode(one_node_program(1, 45, 0), 1, &back, &why));
  EXPECT_EQ(why, "node 0: operation 45 (isinstance), which expression format 1 has not");
  EXPECT_TRUE(ex::Program::decode(one_node_program(2, 45, 0), 1, &back, &why)) << why;
  EXPECT_FALSE(ex::Program::decode(one_node_program(2, 46, 0), 1, &back, &why));
  EXPECT_EQ(why, "node 0: unknown operation");
  bytes[0] = 3;
  EXPECT_FALSE(ex::Program::decode(bytes, 1, &back, &why));
  EXPECT_EQ(why, "expression format 3, this library reads 1 and 2");
  // In a hook: a dimension that uses it makes the hook format 3; formats 1 and 2 hold format 1
  // programs only.
  ex::Hook h;
  ex::HookAction a;
  a.param = 0;
  a.dims.push_back(p);
  h.actions.push_back(a);
  const std::string hook_bytes = h.encode();
  EXPECT_EQ(hook_bytes[0], 3);
  ex::Hook hb;
  ASSERT_TRUE(ex::Hook::decode(hook_bytes, 1, &hb, &why)) << why;
  EXPECT_EQ(hb.encode(), hook_bytes);
  for (uint8_t format : {1, 2}) {
    EXPECT_FALSE(ex::Hook::decode(one_block_hook(format, 0, p.encode()), 1, &hb, &why));
    EXPECT_EQ(why, "hook action 0, dimension 0: expression format 2, this library reads 1");
  }
}

// A guarded action applies when its guard is truthy and is skipped when it is falsy; a guard's
// fault is the hook's. Guards are hook format 3: they round-trip, show in the hook's text, and
// a library that reads up to format 2 says so.
TEST_F(Expr, GuardedActionsAreHookFormat3AndSkippedWhenTheGuardIsFalse) {
  // nargs["d"].block_shape = [args["BM"]] when d is a host descriptor;
  // nargs["t"].zero_() when args["BM"] > 64.
  ex::Hook h;
  ex::HookAction block;
  block.param = 0;
  block.dims.push_back(program({node(ex::Op::kArg, 1)}));
  block.guard = program({node(ex::Op::kArgIsDescriptor, 0)});
  ex::HookAction zero;
  zero.kind = ex::HookAction::Kind::kZero;
  zero.param = 2;
  zero.guard =
      program({node(ex::Op::kArg, 1), node(ex::Op::kInt, 0, 0, 0, 64), node(ex::Op::kGt, 0, 0, 1)});
  h.actions = {block, zero};
  const std::string bytes = h.encode();
  ASSERT_EQ(bytes[0], 3);
  ex::Hook back;
  std::string why;
  ASSERT_TRUE(ex::Hook::decode(bytes, 3, &back, &why)) << why;
  EXPECT_EQ(back.encode(), bytes);
  const std::vector<std::string> names = {"d", "BM", "t"};
  EXPECT_EQ(back.str(names),
            "nargs[\"d\"].block_shape = [args[\"BM\"]] when isinstance(args[\"d\"], "
            "TensorDescriptor); nargs[\"t\"].zero_() when (args[\"BM\"] > 64)");
  te::ArgValue vals[3] = {};
  vals[0].kind = te::ArgKind::kTensorDesc;
  vals[1].kind = te::ArgKind::kInt;
  vals[1].i = 32;
  vals[2].kind = te::ArgKind::kPointer;
  vals[2].dtype = te::DType::fp32;
  ex::HookResult r = ex::apply(back, vals, 3);
  ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
  ASSERT_EQ(r.num_blocks, 1u);
  EXPECT_EQ(r.blocks[0].param, 0);
  EXPECT_EQ(r.blocks[0].rank, 1);
  EXPECT_EQ(r.blocks[0].dims[0], 32);
  EXPECT_EQ(r.num_zeroed, 0u);           // 32 > 64 is false: skipped
  vals[0].kind = te::ArgKind::kPointer;  // not a descriptor: no block shape
  vals[1].i = 128;
  r = ex::apply(back, vals, 3);
  ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
  EXPECT_EQ(r.num_blocks, 0u);
  ASSERT_EQ(r.num_zeroed, 1u);
  EXPECT_EQ(r.zeroed[0], 2);
  // A guard's fault stops the hook: the descriptor left out (KeyError), None > 64 (TypeError).
  const uint64_t no_d[1] = {0b110};
  r = ex::apply(back, vals, 3, no_d);
  EXPECT_EQ(r.fault, ex::Fault::kKeyError);
  vals[1].kind = te::ArgKind::kNone;
  r = ex::apply(back, vals, 3);
  EXPECT_EQ(r.fault, ex::Fault::kTypeError) << r.what;
  EXPECT_EQ(r.num_blocks, 0u);
  // Every truncation is refused; a guard's parameter is checked; so is the format.
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    EXPECT_FALSE(ex::Hook::decode(bytes.substr(0, cut), 3, &back, &why)) << cut;
  }
  ex::Hook far;
  ex::HookAction z = zero;
  z.param = 0;
  z.guard = program({node(ex::Op::kArgIsNone, 3)});
  far.actions = {z};
  EXPECT_FALSE(ex::Hook::decode(far.encode(), 2, &back, &why));
  EXPECT_EQ(why, "hook action 0, guard: node 0: parameter 3 of a kernel with 2");
  std::string v2 = bytes;
  v2[0] = 2;  // a library that reads up to format 2 has no guards: it cannot read these bytes
  EXPECT_FALSE(ex::Hook::decode(v2, 3, &back, &why));
  std::string v4 = bytes;
  v4[0] = 4;
  EXPECT_FALSE(ex::Hook::decode(v4, 3, &back, &why));
  EXPECT_EQ(why, "hook format 4, this library reads 1, 2 and 3");
  // Without guards (and format 2 programs) the hook stays format 1.
  h.actions[0].guard = ex::Program();
  h.actions[1].guard = ex::Program();
  EXPECT_EQ(h.encode()[0], 1);
}

// The fused-attention tutorial's hook, translated: on a call that passes raw pointers (the
// kernel then builds its descriptors on the device) it sets no block shape and reads nothing
// else (FP8_OUTPUT may be missing); on one that passes host descriptors it sets all four. It
// reads the call's descriptor argument, so the runtime applies it per launch (finish_choice).
TEST_F(Expr, TheAttentionTutorialHookSetsNoBlocksOnPointers) {
  te_test::Gil gil;
  const std::vector<std::string> params = {"desc_q",  "desc_k",  "desc_v",   "desc_o",
                                           "BLOCK_M", "BLOCK_N", "HEAD_DIM", "FP8_OUTPUT"};
  for (const char* fn : {"_host_descriptor_pre_hook", "plain_descriptor_hook"}) {
    SCOPED_TRACE(fn);
    std::string why;
    const ex::Hook h =
        te::detail::py::hook_program(te_test::eval("te_expr_cases").attr(fn), params, &why);
    ASSERT_EQ(h.actions.size(), 4u) << why;
    EXPECT_EQ(h.str(params),
              "nargs[\"desc_q\"].block_shape = [args[\"BLOCK_M\"], args[\"HEAD_DIM\"]] when "
              "isinstance(args[\"desc_q\"], TensorDescriptor); "
              "nargs[\"desc_v\"].block_shape = [(args[\"HEAD_DIM\"] if args[\"FP8_OUTPUT\"] else "
              "args[\"BLOCK_N\"]), (args[\"BLOCK_N\"] if args[\"FP8_OUTPUT\"] else "
              "args[\"HEAD_DIM\"])] when isinstance(args[\"desc_q\"], TensorDescriptor); "
              "nargs[\"desc_k\"].block_shape = [args[\"BLOCK_N\"], args[\"HEAD_DIM\"]] when "
              "isinstance(args[\"desc_q\"], TensorDescriptor); "
              "nargs[\"desc_o\"].block_shape = [args[\"BLOCK_M\"], args[\"HEAD_DIM\"]] when "
              "isinstance(args[\"desc_q\"], TensorDescriptor)");
    for (const ex::HookAction& a : h.actions) {
      ASSERT_EQ(a.guard.reads().size(), 1u);
      EXPECT_EQ(a.guard.reads()[0].param, 0);  // a call argument, not a meta-parameter
    }
    te::ArgValue vals[8] = {};
    for (int p = 0; p < 4; ++p) {
      vals[p].kind = te::ArgKind::kPointer;
      vals[p].dtype = te::DType::fp16;
      vals[p].u = 0x10000 * (p + 1);
    }
    const int64_t meta[3] = {128, 32, 64};  // BLOCK_M, BLOCK_N, HEAD_DIM
    for (int p = 4; p < 7; ++p) {
      vals[p].kind = te::ArgKind::kInt;
      vals[p].i = meta[p - 4];
    }
    vals[7].kind = te::ArgKind::kBool;
    const uint64_t no_fp8[1] = {0x7f};
    for (const uint64_t* given : {static_cast<const uint64_t*>(nullptr), no_fp8}) {
      const ex::HookResult r = ex::apply(h, vals, 8, given);
      EXPECT_EQ(r.fault, ex::Fault::kNone) << r.what;
      EXPECT_EQ(r.num_blocks, 0u);
      EXPECT_EQ(r.num_zeroed, 0u);
    }
    for (int p = 0; p < 4; ++p) vals[p].kind = te::ArgKind::kTensorDesc;
    for (bool fp8 : {false, true}) {
      vals[7].i = fp8;
      const ex::HookResult r = ex::apply(h, vals, 8);
      ASSERT_EQ(r.fault, ex::Fault::kNone) << r.what;
      ASSERT_EQ(r.num_blocks, 4u);
      const int64_t want[4][3] = {
          {0, 128, 64}, {2, fp8 ? 64 : 32, fp8 ? 32 : 64}, {1, 32, 64}, {3, 128, 64}};
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(r.blocks[i].param, want[i][0]);
        ASSERT_EQ(r.blocks[i].rank, 2);
        EXPECT_FALSE(r.blocks[i].tuple);
        EXPECT_EQ(r.blocks[i].dims[0], want[i][1]) << i;
        EXPECT_EQ(r.blocks[i].dims[1], want[i][2]) << i;
      }
    }
    // Host descriptors and FP8_OUTPUT missing: Python raises KeyError, so does the hook.
    const ex::HookResult r = ex::apply(h, vals, 8, no_fp8);
    EXPECT_EQ(r.fault, ex::Fault::kKeyError);
  }
}

TEST_F(Expr, MalformedProgramsAreRefusedWithTheReason) {
  std::vector<ex::Node> nodes(2);
  nodes[0].op = ex::Op::kArg;
  nodes[0].param = 1;
  nodes[1].op = ex::Op::kNeg;
  nodes[1].a = 0;
  const std::string good = ex::Program::from_nodes(nodes).encode();
  ex::Program p;
  std::string why;
  EXPECT_TRUE(ex::Program::decode(good, 2, &p, &why)) << why;
  EXPECT_FALSE(ex::Program::decode(good, 1, &p, &why));
  EXPECT_EQ(why, "node 0: parameter 1 of a kernel with 1");
  for (size_t cut = 0; cut < good.size(); ++cut) {
    EXPECT_FALSE(ex::Program::decode(good.substr(0, cut), 2, &p, &why)) << cut;
  }
  EXPECT_FALSE(ex::Program::decode(good + "x", 2, &p, &why));
  EXPECT_EQ(why, "1 bytes after the last node");
  // A child that is not an earlier node (a cycle), and nesting deeper than the limit.
  nodes[1].a = 1;
  EXPECT_THROW(ex::Program::from_nodes(nodes), te::ValueError);
  std::vector<ex::Node> deep(ex::kMaxDepth + 1);
  deep[0].op = ex::Op::kInt;
  for (size_t i = 1; i < deep.size(); ++i) {
    deep[i].op = ex::Op::kNeg;
    deep[i].a = static_cast<uint32_t>(i - 1);
  }
  try {
    ex::Program::from_nodes(deep);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos) << e.what();
  }
  deep.pop_back();
  EXPECT_NO_THROW(ex::Program::from_nodes(deep));
}

}  // namespace
