// Heuristics as expressions (src/core/expr.h, src/python/expr_tree.cc, glue.py's
// heuristic_expression): for every supported form, the runtime's evaluation equals Python's
// call of the heuristic on random arguments (value and type, or the exception Python raises);
// forms outside them are named; programs round-trip through their bytes and malformed bytes
// are refused.

#include <gtest/gtest.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "core/expr.h"
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
    te_test::exec("import te_expr_cases\nimport math\n");
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
  } else if (py::hasattr(v, "block_shape")) {  // a hook's descriptor: nothing of it is read
    a.kind = ArgKind::kTensorDesc;
  } else {  // a tensor: its dtype
    a.kind = ArgKind::kPointer;
    a.u = 0x10000;
    a.dtype = te::dtype_from_name(py::str(v.attr("dtype")).cast<std::string>().substr(6));
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
// descriptors (their block shapes, in the order set) and tensors (zeroed), on random configs.
TEST_F(Expr, PreHooksEqualPythonOnRandomConfigs) {
  te_test::Gil gil;
  py::dict cases = te_test::eval("te_expr_cases.HOOK_CASES");
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
        continue;
      }
      ASSERT_EQ(r.fault, ex::Fault::kNone) << where << ": " << r.what;
      py::dict blocks = want[1];
      for (uint32_t i = 0; i < r.num_blocks; ++i) {
        const ex::HookResult::Block& b = r.blocks[i];
        py::list py_dims;  // as the hook assigned it: a list, or a tuple
        for (uint8_t d = 0; d < b.rank; ++d) py_dims.append(b.dims[d]);
        const py::object shape = b.tuple ? py::object(py::tuple(py_dims)) : py::object(py_dims);
        EXPECT_EQ(te_test::repr(shape), te_test::repr(blocks[py::str(params[b.param])]))
            << where << ": " << params[b.param];
      }
      py::list zeroed;
      std::vector<std::string> ours;
      for (uint32_t i = 0; i < r.num_zeroed; ++i) ours.push_back(params[r.zeroed[i]]);
      std::sort(ours.begin(), ours.end());
      for (const std::string& z : ours) zeroed.append(z);
      EXPECT_EQ(te_test::repr(zeroed), te_test::repr(want[2])) << where;
      ++compared;
    }
  }
  EXPECT_GT(compared, 500);
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
  bytes[0] = 3;
  EXPECT_FALSE(ex::Hook::decode(bytes, 2, &back, &why));
  EXPECT_EQ(why, "hook format 3, this library reads 1 and 2");
  h.actions[0].kind = ex::HookAction::Kind::kBlockShape;  // lists stay format 1
  EXPECT_EQ(h.encode()[0], 1);
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
