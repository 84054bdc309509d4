// error.h: every error is typed and says what went wrong, where, and what to do.

#include <string>

#include <triton_embed/detail/testing.h>

#include "test_support.h"

namespace te = triton_embed;

namespace {

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

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
    EXPECT_TRUE(starts_with(msg, "cannot load kernel no_such_module_xyz.k: no module named "
                                 "'no_such_module_xyz' (looked in sys.path = ["))
        << msg;
    EXPECT_NE(msg.find("Traceback (most recent call last):"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ModuleNotFoundError: No module named 'no_such_module_xyz'"), std::string::npos) << msg;
  }
}

TEST_F(Errors, KernelNotFoundSuggestsCloseNames) {
  try {
    te::JitFunction("pykernels.vector", "add_kernl");
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(starts_with(msg, "cannot load kernel pykernels.vector.add_kernl: module 'pykernels.vector' ("))
        << msg;
    EXPECT_NE(msg.find("vector.py) has no attribute 'add_kernl'; did you mean 'add_kernel'?"), std::string::npos)
        << msg;
  }
  try {
    te::JitFunction("pykernels.vector", "zzz");
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {
    EXPECT_NE(std::string(e.what()).find("has no attribute 'zzz'; its kernels are: add_kernel, axpy_kernel"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Errors, NotAJitFunction) {
  try {
    te::JitFunction("te_compile_kernels", "not_a_kernel");
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_STREQ(e.what(),
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
    EXPECT_TRUE(starts_with(msg, "cannot load kernel te_raises_on_import.k: importing or reading it raised\n"
                                 "Traceback (most recent call last):"))
        << msg;
    EXPECT_NE(msg.find("te_raises_on_import.py\", line 3, in <module>"), std::string::npos) << msg;
    EXPECT_NE(msg.find("RuntimeError: te_raises_on_import: this module refuses to import"), std::string::npos)
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
    EXPECT_STREQ(e.what(), "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): expected 5 arguments, got 2");
  }
  EXPECT_THROW(add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), 1, 2, 3), te::TypeError);
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
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #4 'flag': 2 "
                 "does not fit the annotated type u1");
  }
  try {
    ann.compile(at<float>(0x1000), at<float>(0x2000), uint64_t{1} << 63, 0.5, true, 128);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #2 'n': "
                 "9223372036854775808 does not fit the annotated type i64");
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
    EXPECT_STREQ(e.what(),
                 "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #3 'n_elements': a "
                 "string 'abc' can only be passed to a tl.constexpr parameter; declare the "
                 "parameter as tl.constexpr or pass a number, bool, pointer or tuple");
  }
  try {
    add.compile(at<float>(0x1000), at<float>(0x2000), at<float>(0x3000), te::DType::fp16, 1024);
    FAIL() << "expected TypeError";
  } catch (const te::TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("argument #3 'n_elements': a dtype (fp16) can only be passed"),
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
    add.compile(te::Pointer(uint64_t{0x1000}, te::DType::invalid), at<float>(0x2000), at<float>(0x3000), 16, 64);
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
  const te::Meta meta(add.state(), vals, 5);
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
