// Parity with Triton's own specialisation: every C++ value, bound to kernels covering every
// specialisation flag and annotation, must give the (type, key) list that the installed
// Triton's JITFunction binder (and so native_specialize_impl) gives the matching Python value.
// Where Triton only fails at launch (a value that does not fit an annotated type), the C++
// side must raise the typed error the test predicts instead.

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;

namespace {

struct Case {
  std::string py;  // the same value in Python
  std::function<py::object(const te::JitFunction&)> ours;
  std::function<int(const te::JitFunction&)> fast_agrees;  // the launch's one-pass path
};

template <class T>
Case make_case(T value, std::string py_expr) {
  return Case{std::move(py_expr),
              [value](const te::JitFunction& fn) {
                return te_test::steal(te::detail::testing::specialization_of(fn, value));
              },
              [value](const te::JitFunction& fn) {
                return te::detail::testing::fast_path_agrees_for(fn, value);
              }};
}

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<Case> all_cases() {
  std::vector<Case> c;
  // Integers at every boundary, from several C++ types.
  c.push_back(make_case(0, "0"));
  c.push_back(make_case(1, "1"));
  c.push_back(make_case(1u, "1"));
  c.push_back(make_case(int64_t{1}, "1"));
  c.push_back(make_case(15, "15"));
  c.push_back(make_case(16, "16"));
  c.push_back(make_case(17, "17"));
  c.push_back(make_case(-1, "-1"));
  c.push_back(make_case(-16, "-16"));
  c.push_back(make_case(int8_t{-128}, "-128"));
  c.push_back(make_case(int8_t{127}, "127"));
  c.push_back(make_case(uint8_t{255}, "255"));
  c.push_back(make_case(int16_t{-32768}, "-32768"));
  c.push_back(make_case(uint16_t{65535}, "65535"));
  c.push_back(make_case(int32_t{2147483647}, "2**31 - 1"));
  c.push_back(make_case(int64_t{2147483648LL}, "2**31"));
  c.push_back(make_case(uint32_t{2147483648u}, "2**31"));
  c.push_back(make_case(std::numeric_limits<int32_t>::min(), "-2**31"));
  c.push_back(make_case(int64_t{-2147483649LL}, "-2**31 - 1"));
  c.push_back(make_case(uint32_t{4294967295u}, "2**32 - 1"));
  c.push_back(make_case(int64_t{1} << 32, "2**32"));
  c.push_back(make_case(std::numeric_limits<int64_t>::max(), "2**63 - 1"));
  c.push_back(make_case(std::numeric_limits<int64_t>::min(), "-2**63"));
  c.push_back(make_case(uint64_t{1} << 63, "2**63"));
  c.push_back(make_case(std::numeric_limits<uint64_t>::max(), "2**64 - 1"));
  c.push_back(make_case(std::numeric_limits<uint64_t>::max() - 15, "2**64 - 16"));
  c.push_back(make_case(uint64_t{48}, "48"));
  // Bools and floats.
  c.push_back(make_case(true, "True"));
  c.push_back(make_case(false, "False"));
  c.push_back(make_case(1.5f, "1.5"));
  c.push_back(make_case(2.5, "2.5"));
  c.push_back(make_case(1.0, "1.0"));
  c.push_back(make_case(16.0, "16.0"));
  c.push_back(make_case(-0.0, "-0.0"));
  c.push_back(make_case(1e300, "1e300"));
  // Pointers at every alignment mod 16 (and 16 itself).
  for (uint64_t k = 0; k <= 16; ++k) {
    const uint64_t addr = 0x7f0000001000ull + k;
    c.push_back(make_case(reinterpret_cast<float*>(addr), "P(" + hex(addr) + ", 'float32')"));
  }
  c.push_back(
      make_case(reinterpret_cast<float*>(0x7f0000001100ull), "P(0x7f0000001100, 'float32')"));
  // Every element type.
  for (int t = 1; t <= static_cast<int>(te::DType::fp64); ++t) {
    const auto dt = static_cast<te::DType>(t);
    c.push_back(make_case(te::Pointer(uint64_t{0x7000}, dt),
                          "P(0x7000, '" + std::string(te::dtype_tl_name(dt)) + "')"));
    c.push_back(make_case(te::Pointer(uint64_t{0x7008}, dt),
                          "P(0x7008, '" + std::string(te::dtype_tl_name(dt)) + "')"));
  }
  c.push_back(make_case(reinterpret_cast<const double*>(0x9000), "P(0x9000, 'float64')"));
  c.push_back(make_case(reinterpret_cast<int8_t*>(0x9001), "P(0x9001, 'int8')"));
  c.push_back(make_case(reinterpret_cast<uint8_t*>(0x9010), "P(0x9010, 'uint8')"));
  c.push_back(make_case(reinterpret_cast<int16_t*>(0x9002), "P(0x9002, 'int16')"));
  c.push_back(make_case(reinterpret_cast<uint16_t*>(0x9020), "P(0x9020, 'uint16')"));
  c.push_back(make_case(reinterpret_cast<int32_t*>(0x9004), "P(0x9004, 'int32')"));
  c.push_back(make_case(reinterpret_cast<uint32_t*>(0x9030), "P(0x9030, 'uint32')"));
  c.push_back(make_case(reinterpret_cast<int64_t*>(0x9040), "P(0x9040, 'int64')"));
  c.push_back(make_case(reinterpret_cast<uint64_t*>(0x9048), "P(0x9048, 'uint64')"));
  c.push_back(make_case(reinterpret_cast<bool*>(0x9050), "P(0x9050, 'bool')"));
  c.push_back(make_case(reinterpret_cast<float*>(0), "P(0, 'float32')"));
  // None.
  c.push_back(make_case(nullptr, "None"));
  c.push_back(make_case(std::nullopt, "None"));
  c.push_back(make_case(std::optional<int>(), "None"));
  c.push_back(make_case(std::optional<int>(16), "16"));
  // Tuples (elements are specialised with Triton's default flags).
  c.push_back(make_case(std::make_tuple(1, 2, 16), "(1, 2, 16)"));
  c.push_back(make_case(std::tuple<>(), "()"));
  c.push_back(
      make_case(std::make_tuple(reinterpret_cast<float*>(0x7010), 7), "(P(0x7010, 'float32'), 7)"));
  c.push_back(make_case(std::make_tuple(std::make_tuple(1, nullptr), std::make_tuple(2.5, true)),
                        "((1, None), (2.5, True))"));
  c.push_back(make_case(std::make_pair(16, int64_t{1} << 40), "(16, 2**40)"));
  c.push_back(make_case(std::make_tuple(te::Constexpr(3), 32), "(tl.constexpr(3), 32)"));
  c.push_back(make_case(std::make_tuple("a", 1), "('a', 1)"));
  // Strings, dtypes, constexpr values.
  c.push_back(make_case("abc", "'abc'"));
  c.push_back(make_case(std::string("fp16"), "'fp16'"));
  c.push_back(make_case(te::DType::fp16, "tl.float16"));
  c.push_back(make_case(te::DType::u1, "tl.int1"));
  c.push_back(make_case(te::DType::fp8e4nv, "tl.float8e4nv"));
  c.push_back(make_case(te::DType::u32, "tl.uint32"));
  c.push_back(make_case(te::Constexpr(5), "tl.constexpr(5)"));
  c.push_back(make_case(te::Constexpr(2.5), "tl.constexpr(2.5)"));
  c.push_back(make_case(te::Constexpr(true), "tl.constexpr(True)"));
  c.push_back(make_case(te::Constexpr("mode"), "tl.constexpr('mode')"));
  return c;
}

const char* kKernels[] = {
    "k_plain",     "k_dns",       "k_dnsoa",   "k_dns_dnsoa", "k_constexpr", "k_i8",   "k_i16",
    "k_i32",       "k_i64",       "k_u8",      "k_u16",       "k_u32",       "k_u64",  "k_i32_dns",
    "k_i64_dnsoa", "k_u1",        "k_fp16",    "k_bf16",      "k_fp32",      "k_fp64", "k_ptr_fp16",
    "k_ptr_str",   "k_const_ptr", "k_ptr_dns", "k_ptr_dnsoa",
};

// Triton's binder and the errors triton_embed raises where Triton only fails at launch.
const char* kPythonSide = R"PY(
from triton.runtime.jit import create_function_from_signature
from triton.compiler.compiler import make_backend
import te_spec_kernels

_backend = make_backend(GPUTarget("cuda", 90, 32))
_binders = {}

def triton_spec(kernel, value):
    fn = getattr(te_spec_kernels, kernel)
    if kernel not in _binders:
        _binders[kernel] = create_function_from_signature(fn.signature, fn.params, _backend)
    try:
        _, spec, _ = _binders[kernel](value)
        return repr(spec)
    except Exception as e:
        return type(e).__name__

from te_helpers import predicted_launch_error

def expected_error(kernel, value):
    """None where Triton's binder result must match; else the error triton_embed raises."""
    return predicted_launch_error(getattr(te_spec_kernels, kernel).params[0], value)
)PY";

std::string ours_result(const Case& c, const te::JitFunction& fn) {
  try {
    py::object r = c.ours(fn);
    return te_test::repr(r[py::int_(0)]);
  } catch (const te::TypeError&) {
    return "TypeError";
  } catch (const te::OverflowError&) {
    return "OverflowError";
  } catch (const te::ValueError&) {
    return "ValueError";
  } catch (const te::Error& e) {
    return std::string("Error: ") + e.what();
  }
}

class SpecializeParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te_test::Gil gil;
    te_test::install_python_helpers();
    te_test::exec(kPythonSide);
  }
};

TEST_F(SpecializeParity, EveryValueOnEveryFlagAndAnnotation) {
  const std::vector<Case> cases = all_cases();
  int compared = 0, predicted_errors = 0;
  for (const char* kernel : kKernels) {
    te::JitFunction fn("te_spec_kernels", kernel);
    te_test::Gil gil;
    for (const Case& c : cases) {
      const std::string ours = ours_result(c, fn);
      py::object value = te_test::eval(c.py);
      const std::string theirs =
          py::module_::import("__main__").attr("triton_spec")(kernel, value).cast<std::string>();
      py::object expected = py::module_::import("__main__").attr("expected_error")(kernel, value);
      if (expected.is_none()) {
        EXPECT_EQ(ours, theirs) << kernel << "(" << c.py << ")";
        ++compared;
      } else {
        EXPECT_EQ(ours, expected.cast<std::string>())
            << kernel << "(" << c.py << "): Triton's binder gives " << theirs;
        ++predicted_errors;
      }
    }
  }
  // The table above is large on purpose; make sure it was exercised.
  EXPECT_GT(compared, 1300);
  EXPECT_GT(predicted_errors, 900);
  std::printf("compared %d specialisations with Triton's, predicted %d errors\n", compared,
              predicted_errors);
}

TEST_F(SpecializeParity, LaunchOnePassPathAgreesWithTheGeneralPath) {
  // The launch path keys and packs common calls in one pass; it must give the key words and
  // packed values the general path gives, for every value on every kernel, or decline.
  const std::vector<Case> cases = all_cases();
  int agreed = 0, declined = 0;
  for (const char* kernel : kKernels) {
    te::JitFunction fn("te_spec_kernels", kernel);
    for (const Case& c : cases) {
      int r = -2;
      try {
        r = c.fast_agrees(fn);
      } catch (const te::Error&) {
        continue;  // the general path raises for this value
      }
      EXPECT_NE(r, 0) << kernel << "(" << c.py << "): the one-pass key or packing differs";
      (r == 1 ? agreed : declined)++;
    }
  }
  EXPECT_GT(agreed, 300);
  EXPECT_GT(declined, 100);
  std::printf("one-pass path: %d calls agreed, %d declined\n", agreed, declined);
}

TEST_F(SpecializeParity, RuntimeLeavesArePackedFiveToAKeyWord) {
  // Scalars and pointers take 12 bits each in run words (bit 63 set), five to a word; any
  // other leaf ends the run and takes words of its own. The one-pass path writes the same.
  te::JitFunction k("te_spec_kernels", "k_twelve");
  float* p = reinterpret_cast<float*>(uintptr_t{0x10000});
  const te::Pointer h(uintptr_t{0x20008}, te::DType::fp16);
  namespace tt = te::detail::testing;
  const auto all_runtime =
      tt::key_words_of(k, p, 17, h, 2.5, true, int64_t{1} << 40, p, 16, h, -3, p, 0.5f);
  ASSERT_EQ(all_runtime.size(), 3u);  // 12 leaves: 5 + 5 + 2
  for (uint64_t w : all_runtime) EXPECT_NE(w >> 63, 0u) << std::hex << w;
  EXPECT_EQ(all_runtime[2] >> 24,
            uint64_t{1} << 39);  // a run of 2: nothing above bit 23 but the marker
  EXPECT_EQ(
      tt::fast_path_agrees_for(k, p, 17, h, 2.5, true, int64_t{1} << 40, p, 16, h, -3, p, 0.5f), 1);
  // The integer 1 specialises to a constexpr: it ends the run of four before it, and the
  // seven after it start a new one (4 | constexpr word, tag, value | 5 + 2).
  const auto split = tt::key_words_of(k, p, 17, h, 2.5, 1, int64_t{1} << 40, p, 16, h, -3, p, 0.5f);
  ASSERT_EQ(split.size(), 6u);
  EXPECT_NE(split[0] >> 63, 0u);
  EXPECT_EQ(split[1] >> 63, 0u);
  EXPECT_EQ(split[3], 1u);
  EXPECT_EQ(tt::fast_path_agrees_for(k, p, 17, h, 2.5, 1, int64_t{1} << 40, p, 16, h, -3, p, 0.5f),
            1);
  // What distinguishes specialisations still distinguishes keys: one leaf changed in the
  // second run (alignment, element type, int width) changes the key.
  EXPECT_NE(tt::key_words_of(k, p, 17, h, 2.5, true, int64_t{1} << 40, p, 17, h, -3, p, 0.5f),
            all_runtime);
  EXPECT_NE(tt::key_words_of(k, p, 17, h, 2.5, true, int64_t{1} << 40, h, 16, h, -3, p, 0.5f),
            all_runtime);
  EXPECT_NE(tt::key_words_of(k, p, 17, h, 2.5, true, 40, p, 16, h, -3, p, 0.5f), all_runtime);
}

TEST_F(SpecializeParity, ForcedScalarsMatchAnnotations) {
  struct Forced {
    te::Scalar value;
    const char* annotated_kernel;
    const char* py;
  };
  const Forced forced[] = {
      {te::i32(16), "k_i32", "16"},
      {te::i32(1), "k_i32", "1"},
      {te::i32(17), "k_i32", "17"},
      {te::i64(1), "k_i64", "1"},
      {te::i64(-32), "k_i64", "-32"},
      {te::i8(-128), "k_i8", "-128"},
      {te::u8(255), "k_u8", "255"},
      {te::u16(16), "k_u16", "16"},
      {te::u32(7), "k_u32", "7"},
      {te::u64(std::numeric_limits<uint64_t>::max()), "k_u64", "2**64 - 1"},
      {te::u1(true), "k_u1", "True"},
      {te::fp16(0.5), "k_fp16", "0.5"},
      {te::bf16(2.0), "k_bf16", "2.0"},
      {te::fp32(3.0), "k_fp32", "3.0"},
      {te::fp64(1.5), "k_fp64", "1.5"},
  };
  te::JitFunction plain("te_spec_kernels", "k_plain");
  te::JitFunction dns("te_spec_kernels", "k_dns");
  te_test::Gil gil;
  for (const Forced& f : forced) {
    // A forced type on an unannotated parameter specialises as the annotation would.
    py::object ours = te_test::steal(te::detail::testing::specialization_of(plain, f.value));
    py::object value = te_test::eval(f.py);
    const std::string theirs = py::module_::import("__main__")
                                   .attr("triton_spec")(f.annotated_kernel, value)
                                   .cast<std::string>();
    EXPECT_EQ(te_test::repr(ours[py::int_(0)]), theirs) << f.annotated_kernel << "(" << f.py << ")";
  }
  // do_not_specialize still applies: no key.
  py::object ours = te_test::steal(te::detail::testing::specialization_of(dns, te::i32(16)));
  EXPECT_EQ(
      te_test::repr(ours[py::int_(0)]),
      py::module_::import("__main__").attr("triton_spec")("k_i32_dns", 16).cast<std::string>());
  // A forced value out of its type's range is an error.
  try {
    py::object r =
        te_test::steal(te::detail::testing::specialization_of(plain, te::i32(int64_t{1} << 40)));
    FAIL() << "expected OverflowError";
  } catch (const te::OverflowError& e) {
    EXPECT_STREQ(e.what(),
                 "k_plain(a): argument #0 'a': 1099511627776 does not fit the forced type i32 "
                 "(range [-2^31, 2^31 - 1])");
  }
}

TEST_F(SpecializeParity, JitFunctionArguments) {
  te::JitFunction relu("te_compile_kernels", "relu");
  te::JitFunction plain("te_spec_kernels", "k_plain");
  te::JitFunction cexpr("te_spec_kernels", "k_constexpr");
  te_test::Gil gil;
  te_test::exec("import te_compile_kernels");
  py::object fn = te_test::eval("te_compile_kernels.relu");
  auto spec = [](const te::JitFunction& k, const te::JitFunction& arg) {
    py::object r = te_test::steal(te::detail::testing::specialization_of(k, arg));
    return te_test::repr(r[py::int_(0)]);
  };
  auto triton = py::module_::import("__main__").attr("triton_spec");
  EXPECT_EQ(spec(plain, relu), triton("k_plain", fn).cast<std::string>());
  EXPECT_EQ(spec(cexpr, relu), triton("k_constexpr", fn).cast<std::string>());
}

TEST_F(SpecializeParity, HalfPackingMatchesPython) {
  // fp16 scalars are packed as CPython's struct 'e' format (PyFloat_Pack2) packs them.
  te_test::Gil gil;
  te_test::exec("import struct");
  const double values[] = {0.0,      -0.0,         1.0,    0.1,    -0.1,  1.0 / 3,        65504.0,
                           65519.99, 6.0e-8,       3.0e-8, 2.9e-8, 1e-10, 0.000061035156, 1234.5678,
                           -2.5e-5,  1.00048828125};
  for (double v : values) {
    uint16_t ours = 0;
    ASSERT_TRUE(te::detail::testing::half_bits(v, &ours)) << v;
    char expr[128];
    std::snprintf(expr, sizeof(expr), "struct.unpack('<H', struct.pack('<e', float('%.17g')))[0]",
                  v);
    EXPECT_EQ(ours, te_test::eval(expr).cast<int>()) << v;
  }
  uint16_t bits = 0;
  EXPECT_FALSE(te::detail::testing::half_bits(65520.0, &bits));
  EXPECT_THROW(te_test::eval("struct.pack('<e', 65520.0)"), py::error_already_set);
}

}  // namespace
