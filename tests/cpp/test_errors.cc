// error.h: every error is typed and says what went wrong, where, and what to do; where Python
// Triton raises for the same bad call, the type matches Python's (the README's table, one
// test per row below, each also running the Python equivalent).

#include <cstdint>
#include <exception>
#include <string>
#include <typeinfo>

#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;
using namespace triton_embed::literals;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0;
}

class Errors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { te::set_target(te::Target::parse("cuda:90")); }
};

TEST_F(Errors, ModuleNotFoundCarriesTheTraceback) {
  try {
    te::JitFunction("no_such_module_xyz", "k");
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(starts_with(msg,
                            "cannot load kernel no_such_module_xyz.k: no module named "
                            "'no_such_module_xyz' (looked in sys.path = ["))
        << msg;
    EXPECT_NE(msg.find("Traceback (most recent call last):"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ModuleNotFoundError: No module named 'no_such_module_xyz'"),
              std::string::npos)
        << msg;
  }
}

TEST_F(Errors, KernelNotFoundSuggestsCloseNames) {
  try {
    te::JitFunction("pykernels.vector", "add_kernl");
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(starts_with(
        msg, "cannot load kernel pykernels.vector.add_kernl: module 'pykernels.vector' ("))
        << msg;
    EXPECT_NE(msg.find("vector.py) has no attribute 'add_kernl'; did you mean 'add_kernel'?"),
              std::string::npos)
        << msg;
  }
  try {
    te::JitFunction("pykernels.vector", "zzz");
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "has no attribute 'zzz'; its kernels are: add_kernel, axpy_kernel"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Errors, NotAJitFunction) {
  try {
    te::JitFunction("te_compile_kernels", "not_a_kernel");
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(
        e.what(),
        "cannot load kernel te_compile_kernels.not_a_kernel: "
        "'te_compile_kernels.not_a_kernel' is not a @triton.jit function (it is a builtins.int)");
  }
  try {
    te::JitFunction("te_compile_kernels", "plain_python_function");
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "cannot load kernel te_compile_kernels.plain_python_function: "
                 "'te_compile_kernels.plain_python_function' is not a @triton.jit function (it is "
                 "a builtins.function)");
  }
}

TEST_F(Errors, ImportFailureCarriesTheTraceback) {
  try {
    te::JitFunction("te_raises_on_import", "k");
    FAIL() << "expected PythonError";
  } catch (const te::PythonError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(
        starts_with(msg,
                    "cannot load kernel te_raises_on_import.k: importing or reading it raised\n"
                    "Traceback (most recent call last):"))
        << msg;
    EXPECT_NE(msg.find("te_raises_on_import.py\", line 3, in <module>"), std::string::npos) << msg;
    EXPECT_NE(msg.find("RuntimeError: te_raises_on_import: this module refuses to import"),
              std::string::npos)
        << msg;
  }
}

TEST_F(Errors, TooManyParameters) {
  try {
    te::JitFunction("te_compile_kernels", "too_many_params");
    FAIL() << "expected NotSupportedError";
  } catch (const te::NotSupportedError& e) {
    EXPECT_STREQ(e.what(),
                 "te_compile_kernels.too_many_params has 97 parameters; triton_embed launches "
                 "kernels with at most 96");
  }
}

TEST_F(Errors, WrongArgumentCount) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  try {
    add.compile(at<float>(0x1000), at<float>(0x2000));
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(
        e.what(),
        "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 2");
  }
  EXPECT_THROW(add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), 1, 2, 3),
               te::TypeError);
  te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  try {
    axpy.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), 1.0);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK): expected 5 to 6 "
                 "arguments (the last 1 have defaults), got 4");
  }
}

TEST_F(Errors, ValuesThatDoNotFitTheAnnotation) {
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  try {
    ann.compile(at<float>(0x1000), at<float>(0x2000), 10, 0.5, 2, 128);
    FAIL() << "expected OverflowError";
  } catch (const te::OverflowError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #4 'flag': 2 "
                 "does not fit the annotated type u1 (range [0, 1])");
  }
  try {
    ann.compile(at<float>(0x1000), at<float>(0x2000), uint64_t{1} << 63, 0.5, true, 128);
    FAIL() << "expected OverflowError";
  } catch (const te::OverflowError& e) {
    EXPECT_STREQ(
        e.what(),
        "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #2 'n': "
        "9223372036854775808 does not fit the annotated type i64 (range [-2^63, 2^63 - 1])");
  }
  try {
    ann.compile(at<float>(0x1000), at<float>(0x2000), 1.5, 0.5, true, 128);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #2 'n': "
                 "expected an integer for the annotated type i64, got a float (1.5)");
  }
  try {
    ann.compile(1.0, at<float>(0x2000), 10, 0.5, true, 128);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #0 'x_ptr': "
                 "expected a pointer for the annotated type *fp32, got a float (1)");
  }
}

TEST_F(Errors, ConstexprOnlyValues) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  try {
    add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), "abc", 1024);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(
        e.what(),
        "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #3 'n_elements': a "
        "string 'abc' can only be passed to a tl.constexpr parameter; declare the "
        "parameter as tl.constexpr or pass a number, bool, pointer or tuple");
  }
  try {
    add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), te::DType::fp16, 1024);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_NE(
        std::string(e.what()).find("argument #3 'n_elements': a dtype (fp16) can only be passed"),
        std::string::npos);
  }
  try {
    add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), 16, at<float>(0x4000));
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #4 'BLOCK': a "
                 "pointer cannot be passed to a tl.constexpr parameter");
  }
  try {
    add.compile(te::Pointer(uint64_t{0x1000}, te::DType::invalid), at<float>(0x2000),
                at<float>(0x3000), 16, 64);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #0 'x_ptr': the "
                 "pointer has no element type; pass triton_embed::Pointer(ptr, DType::...)");
  }
}

TEST_F(Errors, GridMetaLookups) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  te::detail::ArgValue vals[6];  // Constexpr takes a nested slot
  te::detail::fill_args(vals, at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), 4096,
                        te::Constexpr(256));
  const te::Meta meta = te::detail::testing::meta(add, vals, 5);
  EXPECT_EQ(meta["n_elements"], 4096);
  EXPECT_EQ(meta["BLOCK"], 256);
  EXPECT_EQ(meta.get_float("BLOCK"), 256.0);
  EXPECT_TRUE(meta.contains("x_ptr"));
  EXPECT_FALSE(meta.contains("nope"));
  try {
    meta["nope"];
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    EXPECT_STREQ(e.what(),
                 "grid callable of add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): no "
                 "parameter named 'nope'");
  }
  try {
    meta["x_ptr"];
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
                 "grid callable of add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): "
                 "parameter 'x_ptr' is a pointer to fp32, not an integer below 2^63");
  }
}

}  // namespace

// ---- the README's table: our type against Python's, row by row ------------------------------

namespace {

const char* type_name(const te::Error& e) {
  // Most derived first.
  if (dynamic_cast<const te::NoDeviceError*>(&e)) return "NoDeviceError";
  if (dynamic_cast<const te::CudaError*>(&e)) return "CudaError";
  if (dynamic_cast<const te::OverflowError*>(&e)) return "OverflowError";
  if (dynamic_cast<const te::TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const te::ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const te::LookupError*>(&e)) return "LookupError";
  if (dynamic_cast<const te::CompileError*>(&e)) return "CompileError";
  if (dynamic_cast<const te::NotSupportedError*>(&e)) return "NotSupportedError";
  if (dynamic_cast<const te::PythonError*>(&e)) return "PythonError";
  if (dynamic_cast<const te::OutOfResourcesError*>(&e)) return "OutOfResourcesError";
  return "Error";
}

// Runs f, which must throw exactly E (not a subclass); returns the message.
template <class E, class F>
std::string raises_exactly(F&& f) {
  try {
    f();
  } catch (const te::Error& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << "raised " << type_name(e) << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "raised nothing";
  return "";
}

// The qualified name of the exception class the Python expression raises when evaluated,
// or "nothing".
std::string python_raises(const std::string& expr) {
  te_test::Gil gil;
  py::object cls = te_test::eval("raised(lambda: " + expr + ")");
  if (cls.is_none()) return "nothing";
  const std::string mod = cls.attr("__module__").cast<std::string>();
  const std::string name = cls.attr("__qualname__").cast<std::string>();
  return mod == "builtins" ? name : mod + "." + name;
}

// Whether the Python expression raises a subclass of the Python class `base`.
bool python_raises_a(const std::string& expr, const std::string& base) {
  te_test::Gil gil;
  return te_test::eval("issubclass(raised(lambda: " + expr + ") or type(None), " + base + ")")
      .cast<bool>();
}

class ErrorTable : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec(
        "from te_helpers import launcher_convert, launcher_grid, raised, warmup_hashes\n"
        "from triton.runtime.jit import create_function_from_signature\n"
        "from triton.compiler.compiler import make_backend\n"
        "import pykernels.vector\n"
        "def bound_args(fn, *args):\n"
        "    b = create_function_from_signature(fn.signature, fn.params,\n"
        "                                       make_backend(GPUTarget('cuda', 90, 32)))\n"
        "    return b(*args)[0]\n"
        "X, Y, O = P(0x1000), P(0x2000), P(0x3000)\n");
  }
  static float* ptr(uint64_t a) { return reinterpret_cast<float*>(a); }
};

// Python: dynamic_func() missing / takes N positional arguments but M were given.
TEST_F(ErrorTable, ArgumentCountIsTypeError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_EQ(raises_exactly<te::TypeError>([&] { add.compile(ptr(0x1000), ptr(0x2000)); }),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 2");
  raises_exactly<te::TypeError>(
      [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, 64, 1); });
  EXPECT_EQ(python_raises("warmup_hashes('pykernels.vector', 'add_kernel', [X, Y], {})"),
            "TypeError");
  EXPECT_EQ(
      python_raises("warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 16, 64, 1], {})"),
      "TypeError");
}

// Python: missing a required argument / got multiple values for argument.
TEST_F(ErrorTable, MissingOrRepeatedArgumentIsTypeError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_EQ(raises_exactly<te::TypeError>(
                [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), "BLOCK"_a = 64); }),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): missing 1 required argument: "
            "'n_elements'");
  EXPECT_EQ(raises_exactly<te::TypeError>([&] {
              add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, 64, "BLOCK"_a = 64);
            }),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): got multiple values for "
            "argument 'BLOCK' (#4): by position and by name");
  EXPECT_EQ(
      python_raises("warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O], {'BLOCK': 64})"),
      "TypeError");
  EXPECT_EQ(
      python_raises(
          "warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 16, 64], {'BLOCK': 64})"),
      "TypeError");
}

// Python: KeyError("Keyword argument nope was specified but unrecognised"), for a parameter
// name and an option name alike.
TEST_F(ErrorTable, UnknownNameIsLookupError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_EQ(raises_exactly<te::LookupError>(
                [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, 64, "nope"_a = 3); }),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): got an unexpected named "
            "argument 'nope'; the parameters are the names in the signature");
  const std::string msg = raises_exactly<te::LookupError>([&] {
    add.with_options(te::Options().set("num_wraps", 8))
        .compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, 64);
  });
  EXPECT_EQ(
      msg.rfind("pykernels.vector.add_kernel: unknown Triton option 'num_wraps'; the options are: ",
                0),
      0u)
      << msg;
  EXPECT_EQ(python_raises(
                "warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 16, 64], {'nope': 3})"),
            "KeyError");
  EXPECT_TRUE(python_raises_a(
      "warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 16, 64], {'num_wraps': 8})",
      "LookupError"));
}

// Python takes an option among the keywords; here options go through with_options().
TEST_F(ErrorTable, OptionAsNamedArgumentIsNotSupported) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  EXPECT_EQ(
      raises_exactly<te::NotSupportedError>(
          [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, 64, "num_warps"_a = 8); }),
      "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): got an unexpected named argument "
      "'num_warps': it is a Triton option, not a parameter; set it with "
      "with_options(triton_embed::Options().num_warps(...))");
  EXPECT_EQ(
      python_raises(
          "warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 16, 64], {'num_warps': 8})"),
      "nothing");
}

// Python: TypeError("failed to specialize argument of type: str") from the binder.
TEST_F(ErrorTable, UnspecialisableValueIsTypeError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  raises_exactly<te::TypeError>(
      [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), "abc", 64); });
  raises_exactly<te::TypeError>(
      [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), te::DType::fp16, 64); });
  raises_exactly<te::TypeError>(
      [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), std::make_tuple("a", 1), 64); });
  EXPECT_EQ(
      python_raises("warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, 'abc', 64], {})"),
      "TypeError");
  EXPECT_EQ(python_raises(
                "warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, tl.float16, 64], {})"),
            "TypeError");
  EXPECT_EQ(
      python_raises("warmup_hashes('pykernels.vector', 'add_kernel', [X, Y, O, ('a', 1), 64], {})"),
      "TypeError");
}

// Python's launcher: PyLong_AsLong(1.5) and a pointer without data_ptr() raise TypeError.
TEST_F(ErrorTable, WrongKindForAnAnnotationIsTypeError) {
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  raises_exactly<te::TypeError>(
      [&] { ann.compile(ptr(0x1000), ptr(0x2000), 1.5, 0.5, true, 128); });
  raises_exactly<te::TypeError>([&] { ann.compile(1.0, ptr(0x2000), 10, 0.5, true, 128); });
  EXPECT_EQ(python_raises("launcher_convert('i64', 1.5)"), "TypeError");
  EXPECT_EQ(python_raises("launcher_convert('*fp32', 1.0)"), "TypeError");
}

// Python's launcher: OverflowError from PyLong_AsLongLong / PyLong_AsUnsignedLongLong /
// PyFloat_Pack2. It truncates values that fit a C long but not a narrower type; we refuse them.
TEST_F(ErrorTable, NumberThatDoesNotFitIsOverflowError) {
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  const char* sig = "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK)";
  EXPECT_EQ(raises_exactly<te::OverflowError>(
                [&] { ann.compile(ptr(0x1000), ptr(0x2000), uint64_t{1} << 63, 0.5, true, 128); }),
            std::string(sig) +
                ": argument #2 'n': 9223372036854775808 does not fit the annotated "
                "type i64 (range [-2^63, 2^63 - 1])");
  EXPECT_EQ(
      raises_exactly<te::OverflowError>([&] { ann.compile(-1, ptr(0x2000), 10, 0.5, true, 128); }),
      std::string(sig) +
          ": argument #0 'x_ptr': -1 is not a valid address; pass a pointer "
          "or an address from 0 to 2^64 - 1");
  uint64_t slots[8];
  EXPECT_EQ(raises_exactly<te::OverflowError>([&] {
              te::detail::testing::dry_run(ann, slots, ptr(0x1000), ptr(0x2000), int64_t{5}, 1e6,
                                           true, 128);
            }),
            std::string(sig) +
                ": argument #3 'alpha': 1e+06 is too large for fp16 (largest finite "
                "value 65504)");
  EXPECT_EQ(raises_exactly<te::OverflowError>(
                [&] { ann.compile(ptr(0x1000), ptr(0x2000), 10, 0.5, 2, 128); }),
            std::string(sig) +
                ": argument #4 'flag': 2 does not fit the annotated type u1 (range [0, 1])");
  te::JitFunction u8("te_spec_kernels", "k_u8");
  raises_exactly<te::OverflowError>([&] { u8.compile(-1); });
  EXPECT_EQ(python_raises("launcher_convert('i64', 2**63)"), "OverflowError");
  EXPECT_EQ(python_raises("launcher_convert('*fp32', -1)"), "OverflowError");
  EXPECT_EQ(python_raises("launcher_convert('fp16', 1e6)"), "OverflowError");
  EXPECT_EQ(python_raises("launcher_convert('u8', -1)"), "OverflowError");
  EXPECT_EQ(python_raises("launcher_convert('u1', 2)"), "nothing");  // Python passes 2 on
  // Catchable as a ValueError too.
  EXPECT_THROW(ann.compile(ptr(0x1000), ptr(0x2000), 10, 0.5, 2, 128), te::ValueError);
}

// Python's launcher parses the grid as C ints (OverflowError from 2^31); it launches nothing
// for a negative axis and leaves y, z >= 65536 to the driver (a RuntimeError). We refuse the
// latter two before the driver call.
TEST_F(ErrorTable, GridOutOfRange) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  // The grid as a launch checks it, at a capturing site (the suite's target: cuda:90).
  const te::JitFunction two_ctas = add.with_options(te::Options().num_ctas(2));
  const auto check_grid = [&](const te::Grid& grid, int num_ctas) {
    uint64_t slots[8];
    te::detail::testing::dry_run_on(grid, num_ctas == 1 ? add : two_ctas, slots, ptr(0x1000),
                                    ptr(0x2000), ptr(0x3000), 4096, 1024);
  };
  const std::string big =
      raises_exactly<te::OverflowError>([&] { check_grid(te::Grid(int64_t{1} << 31), 1); });
  EXPECT_EQ(big,
            "launching pykernels.vector.add_kernel: grid (2147483648, 1, 1) has an axis of 2^31 "
            "or more; each axis is a 32-bit int (x * num_ctas below 2^31, y and z below 65536): "
            "split the work over more axes or more work per program");
  EXPECT_EQ(raises_exactly<te::ValueError>([&] { check_grid(te::Grid(-1), 1); }),
            "launching pykernels.vector.add_kernel: grid (-1, 1, 1) is out of range: each axis "
            "must be >= 0, x * num_ctas (1) below 2^31 and y, z below 65536");
  raises_exactly<te::ValueError>([&] { check_grid(te::Grid(1, 70000), 1); });
  raises_exactly<te::ValueError>([&] { check_grid(te::Grid(1 << 30), 2); });
  check_grid(te::Grid(0x7FFFFFFF, 65535, 65535), 1);  // the largest
  EXPECT_EQ(python_raises("launcher_grid(2**31)"), "OverflowError");
  EXPECT_EQ(python_raises("launcher_grid(-1)"), "nothing");
}

// Python's grid callable gets the bound arguments as a dict: KeyError for an unknown name.
TEST_F(ErrorTable, GridCallableUnknownNameIsLookupError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  te::detail::ArgValue vals[5];
  te::detail::fill_args(vals, ptr(0x1000), ptr(0x2000), ptr(0x3000), 4096, 256);
  const te::Meta meta = te::detail::testing::meta(add, vals, 5);
  raises_exactly<te::LookupError>([&] { meta["nope"]; });
  raises_exactly<te::TypeError>([&] { meta["x_ptr"]; });
  EXPECT_EQ(python_raises("bound_args(pykernels.vector.add_kernel, X, Y, O, 4096, 256)['nope']"),
            "KeyError");
  EXPECT_EQ(
      python_raises(
          "triton.cdiv(bound_args(pykernels.vector.add_kernel, X, Y, O, 4096, 256)['x_ptr'], 2)"),
      "TypeError");
}

// Python: a host-memory tensor fails in the launcher's pointer check with ValueError ("cannot be
// accessed from Triton (cpu tensor?)"), which needs a GPU to run.
TEST_F(ErrorTable, HostMemoryPointerIsValueError) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  te::detail::ArgValue vals[5];
  te::detail::fill_args(vals, ptr(0x1000), ptr(0x2000), ptr(0x3000), 4096, 256);
  vals[1].flags = te::detail::kArgHostMemory;  // as the torch layer marks a CPU tensor
  uint64_t slots[8];
  EXPECT_EQ(raises_exactly<te::ValueError>([&] {
              te::detail::testing::dry_run_values(te::detail::testing::state(add),
                                                  te::detail::testing::interned_options(add), vals,
                                                  5, slots);
            }),
            "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #1 'y_ptr': got a CPU "
            "tensor; a GPU launch needs device memory. Move it to the GPU, or launch with "
            "triton_embed::launch (<triton_embed/torch.h>), which runs CPU tensors through "
            "Triton's interpreter");
}

// Python: CompilationError (triton.compiler.errors) from warmup.
TEST_F(ErrorTable, CompileFailureIsCompileError) {
  te::JitFunction broken("te_broken_kernels", "broken_kernel");
  const std::string msg =
      raises_exactly<te::CompileError>([&] { broken.compile(ptr(0x1000), 16, 128); });
  EXPECT_EQ(msg.rfind("Triton failed to compile te_broken_kernels.broken_kernel as ", 0), 0u)
      << msg;
  EXPECT_EQ(python_raises("warmup_hashes('te_broken_kernels', 'broken_kernel', [X, 16, 128], {})"),
            "triton.compiler.errors.CompilationError");
  // The error's cause is the exception Triton raised (the Python fast path raises that one);
  // the library's own errors have none.
  try {
    broken.compile(ptr(0x1000), 16, 128);
    ADD_FAILURE() << "compiled";
  } catch (const te::CompileError& e) {
    ASSERT_NE(e.cause(), nullptr);
    try {
      std::rethrow_exception(e.cause());
    } catch (py::error_already_set& python) {
      te_test::Gil gil;
      EXPECT_EQ(py::str(python.type().attr("__qualname__")).cast<std::string>(),
                "CompilationError");
    }
  }
  try {
    broken.compile(ptr(0x1000));
    ADD_FAILURE() << "compiled";
  } catch (const te::TypeError& e) {
    EXPECT_EQ(e.cause(), nullptr) << e.what();
  }
}

// Python takes these at the binder; they differ on purpose (the README says why).
TEST_F(ErrorTable, StricterThanPython) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  // A pointer for a tl.constexpr parameter: Python bakes the tensor object into the kernel.
  raises_exactly<te::TypeError>(
      [&] { add.compile(ptr(0x1000), ptr(0x2000), ptr(0x3000), 16, ptr(0x4000)); });
  EXPECT_EQ(python_raises("bound_args(pykernels.vector.add_kernel, X, Y, O, 16, X)"), "nothing");
  // A pointer without an element type: Python's binder reads .dtype (AttributeError).
  raises_exactly<te::TypeError>([&] {
    add.compile(te::Pointer(uint64_t{0x1000}, te::DType::invalid), ptr(0x2000), ptr(0x3000), 16,
                64);
  });
  te_test::Gil gil;
  te_test::exec("class NoDtype:\n    def data_ptr(self):\n        return 0x1000\n");
  EXPECT_EQ(python_raises("bound_args(pykernels.vector.add_kernel, NoDtype(), Y, O, 16, 64)"),
            "AttributeError");
}

}  // namespace
