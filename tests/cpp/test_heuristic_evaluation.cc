// set_heuristic_evaluation() and TRITON_EMBED_HEURISTICS (bundle.h), compile-only for cuda:90
// (no GPU): with expressions chosen, a heuristic the JIT translated is evaluated in C++ and
// Python is not called, with the values (and so the compiled kernels) Python's heuristics give
// on random arguments; a heuristic that did not translate, and a call whose expression faults,
// still run in Python; with Python chosen (the default) every heuristic runs in Python.
//
// CTest runs it three times: test_heuristic_evaluation (no environment variable; the
// Environment* tests skip), heuristic_evaluation_env (TRITON_EMBED_HEURISTICS=expressions) and
// heuristic_evaluation_env_refused (a value that is neither).

#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <set>
#include <string>

#include "message_of.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace tt = triton_embed::detail::testing;
using te::HeuristicEvaluation;

namespace {

class HeuristicEvaluationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec("import te_heur_expr_kernels");
  }
  void TearDown() override { te::set_heuristic_evaluation(HeuristicEvaluation::kPython); }
  static std::string py_repr(const std::string& expr) {
    te_test::Gil gil;
    return te_test::repr(te_test::eval(expr));
  }
};

// The environment variable's tests run only where CTest sets it (see the top of this file).
bool env_is(const char* value) {
  const char* env = std::getenv("TRITON_EMBED_HEURISTICS");
  return env != nullptr && std::string(env) == value;
}

// Two kernels wrapping one @triton.jit function in the same heuristics: on each of many random
// calls, the one whose heuristics Python computes and the one whose heuristics the expressions
// compute (no Python call) compile the same kernel: same hash, signature (the constexprs the
// heuristics set) and num_warps (an option one sets, None included).
TEST_F(HeuristicEvaluationTest, ExpressionsEqualPythonOnRandomArgumentsWithoutCallingPython) {
  if (std::getenv("TRITON_EMBED_HEURISTICS") != nullptr) GTEST_SKIP() << "the variable is set";
  const te::JitFunction by_python("te_heur_expr_kernels", "python_kernel");
  const te::JitFunction by_expression("te_heur_expr_kernels", "expression_kernel");
  std::mt19937_64 rng(2121);
  std::uniform_real_distribution<double> log_n(0.0, 17.0), scale(0.25, 4.0);
  std::uniform_int_distribution<uint64_t> slot(1, 1 << 20);
  std::set<std::string> kernels;
  std::set<int64_t> ns;
  long python_ran = 0;
  for (int i = 0; i < 300; ++i) {
    const int64_t n = static_cast<int64_t>(std::exp2(log_n(rng)));
    ns.insert(n);
    const te::DType dtype = (rng() & 1) != 0 ? te::DType::fp16 : te::DType::fp32;
    const te::Pointer x(0x100000 + 16 * slot(rng), dtype);
    const te::Pointer out(0x40000000 + 16 * slot(rng), te::DType::fp32);
    const double s = scale(rng);
    const std::string call = "n=" + std::to_string(n) + " scale=" + std::to_string(s) +
                             " x=" + std::string(te::dtype_name(dtype));

    te::set_heuristic_evaluation(HeuristicEvaluation::kPython);
    const long before_python = tt::layer_python_calls();
    const te::CompiledKernel& a = by_python.compile(x, out, n, s);
    python_ran += tt::layer_python_calls() - before_python;

    te::set_heuristic_evaluation(HeuristicEvaluation::kExpressions);
    const long before = tt::layer_python_calls();
    const te::CompiledKernel& b = by_expression.compile(x, out, n, s);
    EXPECT_EQ(tt::layer_python_calls(), before) << call << ": Python ran a heuristic";

    EXPECT_EQ(a.hash(), b.hash()) << call;
    EXPECT_EQ(a.signature(), b.signature()) << call;
    EXPECT_EQ(a.num_warps(), b.num_warps()) << call;
    kernels.insert(a.hash());
  }
  EXPECT_GT(ns.size(), 200u);      // distinct arguments: each a new heuristic evaluation
  EXPECT_GE(kernels.size(), 10u);  // the heuristics' values vary
  EXPECT_GE(python_ran, static_cast<long>(ns.size()));  // BLOCK alone: once per new n

  // With Python chosen again, the expression kernel's heuristics run in Python (new n).
  te::set_heuristic_evaluation(HeuristicEvaluation::kPython);
  const long before = tt::layer_python_calls();
  by_expression.compile(te::Pointer(0x10000, te::DType::fp32),
                        te::Pointer(0x20000, te::DType::fp32), int64_t{123457}, 1.5);
  EXPECT_EQ(tt::layer_python_calls(), before + 3);
}

// A heuristic outside the expressions' forms runs in Python (once per new value it reads); the
// kernel's other heuristic does not.
TEST_F(HeuristicEvaluationTest, AHeuristicThatDidNotTranslateStillRunsInPython) {
  if (std::getenv("TRITON_EMBED_HEURISTICS") != nullptr) GTEST_SKIP() << "the variable is set";
  const te::JitFunction partly("te_heur_expr_kernels", "partly_kernel");
  {
    te_test::Gil gil;
    te_test::exec("te_heur_expr_kernels.PARTLY_CALLS.clear()");
  }
  te::set_heuristic_evaluation(HeuristicEvaluation::kExpressions);
  const te::Pointer x(0x10000, te::DType::fp32), out(0x20000, te::DType::fp32);
  const long before = tt::layer_python_calls();
  const te::CompiledKernel& small = partly.compile(x, out, 300);
  const te::CompiledKernel& large = partly.compile(x, out, 3000);
  partly.compile(x, out, 300);  // memoised: no call at all
  EXPECT_EQ(tt::layer_python_calls(), before + 2);
  EXPECT_EQ(py_repr("te_heur_expr_kernels.PARTLY_CALLS"), "[300, 3000]");
  EXPECT_NE(small.signature().find("BLOCK: constexpr = 64, OTHER: constexpr = 64"),
            std::string::npos)
      << small.signature();
  EXPECT_NE(large.signature().find("BLOCK: constexpr = 128, OTHER: constexpr = 64"),
            std::string::npos)
      << large.signature();
}

// Where Python raises (4096 // 0), the expression gives way to Python, which raises its own
// exception: the same error as with Python chosen. Other values take no Python call.
TEST_F(HeuristicEvaluationTest, WherePythonRaisesTheErrorIsPythons) {
  if (std::getenv("TRITON_EMBED_HEURISTICS") != nullptr) GTEST_SKIP() << "the variable is set";
  const te::JitFunction dividing("te_heur_expr_kernels", "dividing_kernel");
  const te::Pointer x(0x10000, te::DType::fp32), out(0x20000, te::DType::fp32);
  te::set_heuristic_evaluation(HeuristicEvaluation::kPython);
  const std::string by_python =
      te_test::message_of<te::PythonError>([&] { dividing.compile(x, out, 0); });
  EXPECT_NE(by_python.find("ZeroDivisionError"), std::string::npos) << by_python;
  te::set_heuristic_evaluation(HeuristicEvaluation::kExpressions);
  const long before = tt::layer_python_calls();
  EXPECT_EQ(te_test::message_of<te::PythonError>([&] { dividing.compile(x, out, 0); }), by_python);
  EXPECT_EQ(tt::layer_python_calls(), before + 1);
  EXPECT_NE(dividing.compile(x, out, 100).signature().find("BLOCK: constexpr = 64"),
            std::string::npos);
  EXPECT_NE(dividing.compile(x, out, 1000).signature().find("BLOCK: constexpr = 128"),
            std::string::npos);
  EXPECT_EQ(tt::layer_python_calls(), before + 1);
}

TEST_F(HeuristicEvaluationTest, ValuesOutsideTheEnumAreRefused) {
  EXPECT_EQ(te_test::message_of<te::ValueError>(
                [] { te::set_heuristic_evaluation(static_cast<HeuristicEvaluation>(7)); }),
            "set_heuristic_evaluation: 7 is not a HeuristicEvaluation (kPython or kExpressions)");
}

// TRITON_EMBED_HEURISTICS=expressions chooses expressions when the program does not call
// set_heuristic_evaluation().
TEST(HeuristicEvaluationEnvironment, ExpressionsChosenByTheVariable) {
  if (!env_is("expressions")) GTEST_SKIP() << "run by heuristic_evaluation_env";
  te::set_target(te::Target::parse("cuda:90"));
  const te::JitFunction k("te_heur_expr_kernels", "expression_kernel");
  const long before = tt::layer_python_calls();
  k.compile(te::Pointer(0x10000, te::DType::fp32), te::Pointer(0x20000, te::DType::fp32),
            int64_t{777}, 2.0);
  EXPECT_EQ(tt::layer_python_calls(), before);
}

// Any other value is refused on the first heuristic that runs, saying what it accepts.
TEST(HeuristicEvaluationEnvironment, OtherValuesAreRefused) {
  if (!env_is("pyhton")) GTEST_SKIP() << "run by heuristic_evaluation_env_refused";
  te::set_target(te::Target::parse("cuda:90"));
  const te::JitFunction k("te_heur_expr_kernels", "expression_kernel");
  EXPECT_EQ(te_test::message_of<te::ValueError>([&] {
              k.compile(te::Pointer(0x10000, te::DType::fp32),
                        te::Pointer(0x20000, te::DType::fp32), int64_t{777}, 2.0);
            }),
            "TRITON_EMBED_HEURISTICS='pyhton': expected 'python' (run each @triton.heuristics "
            "function in Python, the default) or 'expressions' (evaluate the heuristics "
            "translated into expressions in C++, and run only the others in Python)");
}

}  // namespace
