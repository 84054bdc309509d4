// jit.h: compiling in-process for an explicit target (no GPU needed). The kernel hash must be
// the one Python's JITFunction produces for the same arguments and options.

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "alloc_counter.h"
#include "core/triton_versions.h"
#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;
namespace py = pybind11;

namespace {

class Compile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    te::set_target(te::Target::parse("cuda:90"));
    te_test::Gil gil;
    te_test::install_python_helpers();
  }
  static std::string python_hash(const char* module, const char* kernel, const std::string& args,
                                 const std::string& kwargs = "{}") {
    te_test::Gil gil;
    return py::module_::import("te_helpers")
        .attr("warmup_hashes")(module, kernel, te_test::eval(args), te_test::eval(kwargs))
        .cast<std::string>();
  }
};

template <class T>
T* at(uint64_t addr) {
  return reinterpret_cast<T*>(addr);
}

TEST_F(Compile, HashMatchesPythonAligned) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  const te::CompiledKernel& k =
      add.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 98432, 1024);
  EXPECT_EQ(
      k.hash(),
      python_hash(
          "pykernels.vector", "add_kernel",
          "(P(0x10000, 'float32'), P(0x20000, 'float32'), P(0x30000, 'float32'), 98432, 1024)"));
  EXPECT_EQ(k.name(), "add_kernel");
  EXPECT_EQ(k.target(), "cuda:90");
  EXPECT_EQ(k.signature(),
            "add_kernel(x_ptr: *fp32 D, y_ptr: *fp32 D, out_ptr: *fp32 D, n_elements: i32 D, "
            "BLOCK: constexpr = 1024)");
  EXPECT_EQ(k.num_warps(), 4);
  EXPECT_EQ(k.num_stages(), 3);
  EXPECT_EQ(k.num_ctas(), 1);
  EXPECT_EQ(k.num_kernel_params(), 6);  // 4 runtime arguments + 2 scratch pointers
  ASSERT_GE(k.cubin().size(), 4u);
  EXPECT_EQ(std::memcmp(k.cubin().data(),
                        "\x7f"
                        "ELF",
                        4),
            0);
  EXPECT_NE(k.ptx().find(".entry add_kernel"), std::string_view::npos);
}

TEST_F(Compile, HashMatchesPythonMisalignedAndOne) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  const auto& a =
      add.compile(at<float>(0x10004), at<float>(0x20000), at<float>(0x30008), 1000, 256);
  EXPECT_EQ(
      a.hash(),
      python_hash(
          "pykernels.vector", "add_kernel",
          "(P(0x10004, 'float32'), P(0x20000, 'float32'), P(0x30008, 'float32'), 1000, 256)"));
  EXPECT_EQ(a.signature(),
            "add_kernel(x_ptr: *fp32, y_ptr: *fp32 D, out_ptr: *fp32, n_elements: i32, "
            "BLOCK: constexpr = 256)");
  const auto& one = add.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 1, 256);
  EXPECT_EQ(
      one.hash(),
      python_hash("pykernels.vector", "add_kernel",
                  "(P(0x10000, 'float32'), P(0x20000, 'float32'), P(0x30000, 'float32'), 1, 256)"));
  EXPECT_EQ(one.num_kernel_params(), 5);  // n_elements == 1 became a constexpr
  const auto& big = add.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000),
                                int64_t{1} << 33, 256);
  EXPECT_EQ(
      big.hash(),
      python_hash(
          "pykernels.vector", "add_kernel",
          "(P(0x10000, 'float32'), P(0x20000, 'float32'), P(0x30000, 'float32'), 2**33, 256)"));
  EXPECT_NE(big.signature().find("n_elements: i64 D"), std::string::npos);
}

TEST_F(Compile, HashMatchesPythonWithOptions) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  auto add8 = add.with_options(te::Options().num_warps(8).num_stages(2));
  const auto& k =
      add8.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 4096, 2048);
  EXPECT_EQ(k.num_warps(), 8);
  EXPECT_EQ(k.num_stages(), 2);
  EXPECT_EQ(k.hash(),
            python_hash(
                "pykernels.vector", "add_kernel",
                "(P(0x10000, 'float32'), P(0x20000, 'float32'), P(0x30000, 'float32'), 4096, 2048)",
                "{'num_warps': 8, 'num_stages': 2}"));
  // The default options give a different kernel, cached separately.
  const auto& d =
      add.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 4096, 2048);
  EXPECT_NE(&d, &k);
  EXPECT_EQ(d.num_warps(), 4);
}

TEST_F(Compile, HashMatchesPythonDefaultsFloatsAndFp16) {
  te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  const auto& k =
      axpy.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 2.5, 4096);
  EXPECT_EQ(
      k.hash(),
      python_hash(
          "pykernels.vector", "axpy_kernel",
          "(P(0x10000, 'float32'), P(0x20000, 'float32'), P(0x30000, 'float32'), 2.5, 4096)"));
  // The default BLOCK = 1024 filled in equals passing it.
  EXPECT_EQ(&k, &axpy.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 2.5, 4096,
                              1024));
  te::JitFunction scale("te_compile_kernels", "scale_kernel");
  const auto& s = scale.compile(te::Pointer(uint64_t{0x40000}, te::DType::fp16),
                                te::Pointer(uint64_t{0x50000}, te::DType::fp16), 0.5f, 333);
  EXPECT_EQ(s.hash(), python_hash("te_compile_kernels", "scale_kernel",
                                  "(P(0x40000, 'float16'), P(0x50000, 'float16'), 0.5, 333)"));
}

TEST_F(Compile, HashMatchesPythonFlagsTuplesDtypesStringsAndFunctions) {
  te::JitFunction flags("te_compile_kernels", "flags_kernel");
  EXPECT_EQ(flags.compile(at<float>(0x10000), at<float>(0x20000), 64, 64).hash(),
            python_hash("te_compile_kernels", "flags_kernel",
                        "(P(0x10000, 'float32'), P(0x20000, 'float32'), 64, 64)"));
  te::JitFunction tup("te_compile_kernels", "tuple_kernel");
  const auto& t = tup.compile(std::make_tuple(at<float>(0x10000), at<float>(0x20004)),
                              std::make_tuple(64, 1), at<float>(0x30000), 64);
  EXPECT_EQ(
      t.hash(),
      python_hash(
          "te_compile_kernels", "tuple_kernel",
          "((P(0x10000, 'float32'), P(0x20004, 'float32')), (64, 1), P(0x30000, 'float32'), 64)"));
  EXPECT_EQ(t.num_kernel_params(),
            6);  // two pointers, one size (the other is constexpr 1), out, scratch x2
  te::JitFunction dt("te_compile_kernels", "dtype_kernel");
  EXPECT_EQ(dt.compile(at<float>(0x10000), te::Pointer(uint64_t{0x20000}, te::DType::fp16), 100,
                       te::DType::fp16, "double", 128)
                .hash(),
            python_hash(
                "te_compile_kernels", "dtype_kernel",
                "(P(0x10000, 'float32'), P(0x20000, 'float16'), 100, tl.float16, 'double', 128)"));
  te::JitFunction apply("te_compile_kernels", "apply_kernel");
  te::JitFunction relu("te_compile_kernels", "relu");
  te::JitFunction negate("te_compile_kernels", "negate");
  const auto& r = apply.compile(at<float>(0x10000), at<float>(0x20000), 100, relu, 128);
  const auto& n = apply.compile(at<float>(0x10000), at<float>(0x20000), 100, negate, 128);
  EXPECT_NE(r.hash(), n.hash());
  {
    te_test::Gil gil;
    te_test::exec("import te_compile_kernels");
  }
  EXPECT_EQ(
      r.hash(),
      python_hash(
          "te_compile_kernels", "apply_kernel",
          "(P(0x10000, 'float32'), P(0x20000, 'float32'), 100, te_compile_kernels.relu, 128)"));
}

TEST_F(Compile, HashMatchesPythonAnnotatedAndScalars) {
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  // n == 1 on an annotated parameter stays a runtime i64 (key 1), alpha packs as fp16.
  const auto& k = ann.compile(at<float>(0x10000), at<float>(0x20000), 1, 0.5, true, 128);
  EXPECT_EQ(k.hash(),
            python_hash("te_compile_kernels", "annotated_kernel",
                        "(P(0x10000, 'float32'), P(0x20000, 'float32'), 1, 0.5, True, 128)"));
  EXPECT_EQ(k.num_kernel_params(), 7);
  te::JitFunction mixed("te_compile_kernels", "mixed_kernel");
  EXPECT_EQ(mixed.compile(at<float>(0x10000), at<float>(0x20000), 4096, 2.0, false, 128).hash(),
            python_hash("te_compile_kernels", "mixed_kernel",
                        "(P(0x10000, 'float32'), P(0x20000, 'float32'), 4096, 2.0, False, 128)"));
}

TEST_F(Compile, HashMatchesPythonWithTupleConstexprStringAndDtypeDefaults) {
  te::JitFunction d("te_compile_kernels", "defaults_kernel");
  const auto& k = d.compile(at<float>(0x10000), te::Pointer(uint64_t{0x20000}, te::DType::fp16));
  EXPECT_EQ(k.hash(), python_hash("te_compile_kernels", "defaults_kernel",
                                  "(P(0x10000, 'float32'), P(0x20000, 'float16'))"));
  EXPECT_EQ(k.signature(),
            "defaults_kernel(x_ptr: *fp32 D, out_ptr: *fp16 D, sizes: (i32 D, constexpr = 1), "
            "scale: constexpr = constexpr[2], MODE: constexpr = 'double', OUT: constexpr = "
            "triton.language.float16, BLOCK: constexpr = 64)");
  // Passing the defaults explicitly is the same call.
  EXPECT_EQ(&k,
            &d.compile(at<float>(0x10000), te::Pointer(uint64_t{0x20000}, te::DType::fp16),
                       std::make_tuple(64, 1), te::Constexpr(2), "double", te::DType::fp16, 64));
}

TEST_F(Compile, ConstexprStringsAreKeyedByTheirBytes) {
  te::JitFunction dt("te_compile_kernels", "dtype_kernel");
  const size_t before = te::detail::testing::cache_size(dt);
  const auto& a =
      dt.compile(at<float>(0x10000), at<float>(0x20000), 100, te::DType::fp32, "mode-aaaa-1", 128);
  const auto& b =
      dt.compile(at<float>(0x10000), at<float>(0x20000), 100, te::DType::fp32, "mode-aaaa-2", 128);
  EXPECT_NE(&a, &b);
  EXPECT_NE(a.hash(), b.hash());
  EXPECT_EQ(te::detail::testing::cache_size(dt), before + 2);
  EXPECT_EQ(&a, &dt.compile(at<float>(0x10000), at<float>(0x20000), 100, te::DType::fp32,
                            std::string("mode-aaaa-1"), 128));
}

TEST_F(Compile, CacheHitsDoNotCompile) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  auto add2 = add.with_options(te::Options().num_warps(2));
  const auto& first =
      add2.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 512, 128);
  const long count = te::detail::testing::compile_count();
  const size_t entries = te::detail::testing::cache_size(add);
  for (int i = 0; i < 100; ++i) {
    // Other addresses and sizes with the same specialisation hit the same entry.
    const uint64_t off = 0x100 * (i + 1);
    EXPECT_EQ(&add2.compile(at<float>(0x10000 + off), at<float>(0x20000 + off),
                            at<float>(0x30000 + off), 512 + 16 * i, 128),
              &first);
  }
  EXPECT_EQ(te::detail::testing::compile_count(), count);
  EXPECT_EQ(te::detail::testing::cache_size(add), entries);
  // JitFunction handles of the same kernel share the cache.
  te::JitFunction again("pykernels.vector", "add_kernel");
  EXPECT_EQ(te::detail::testing::state(again), te::detail::testing::state(add));
  EXPECT_EQ(&again.with_options(te::Options().num_warps(2))
                 .compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 512, 128),
            &first);
}

TEST_F(Compile, ManyThreadsMissingOneKeyCompileOnce) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  auto fresh = add.with_options(te::Options().num_warps(1).num_stages(1));
  const long before = te::detail::testing::compile_count();
  constexpr int kThreads = 8;
  std::vector<const te::CompiledKernel*> got(kThreads, nullptr);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      got[t] =
          &fresh.compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 8192, 512);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(te::detail::testing::compile_count(), before + 1);
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(got[t], got[0]);
}

TEST_F(Compile, FailedCompileIsNotCached) {
  te::JitFunction broken("te_broken_kernels", "broken_kernel");
  const long before = te::detail::testing::compile_count();
  try {
    broken.compile(at<float>(0x10000), 100, 128);
    FAIL() << "expected CompileError";
  } catch (const te::CompileError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(
        msg.rfind("Triton failed to compile te_broken_kernels.broken_kernel as "
                  "broken_kernel(x_ptr: *fp32 D, n: i32, BLOCK: constexpr = 128) for cuda:90:\n"
                  "CompilationError: ",
                  0),
        0u)
        << msg;
    EXPECT_NE(msg.find("undefined_helper"), std::string::npos) << msg;
  }
  EXPECT_EQ(te::detail::testing::cache_size(broken), 0u);
  {
    // Fix the kernel's source in Python; the same call now compiles.
    te_test::Gil gil;
    te_test::exec(
        "import te_broken_kernels as _b\n"
        "_b.broken_kernel._unsafe_update_src(_b.FIXED_SOURCE)\n");
  }
  const auto& k = broken.compile(at<float>(0x10000), 100, 128);
  EXPECT_EQ(k.name(), "broken_kernel");
  EXPECT_EQ(te::detail::testing::compile_count(), before + 2);
  EXPECT_EQ(te::detail::testing::cache_size(broken), 1u);
}

TEST_F(Compile, BadOptions) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  try {
    add.with_options(te::Options().set("num_wraps", 8))
        .compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 64, 64);
    FAIL() << "expected LookupError";
  } catch (const te::LookupError& e) {  // Python: KeyError
    const std::string msg = e.what();
    EXPECT_EQ(
        msg.rfind(
            "pykernels.vector.add_kernel: unknown Triton option 'num_wraps'; the options are: ", 0),
        0u)
        << msg;
    EXPECT_NE(msg.find("num_warps"), std::string::npos);
  }
  try {
    add.with_options(te::Options().num_warps(3))
        .compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 64, 64);
    FAIL() << "expected CompileError";
  } catch (const te::CompileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("with num_warps=3:\nAssertionError: num_warps must be a power of 2"),
              std::string::npos)
        << msg;
  }
}

TEST_F(Compile, WrappedKernelsLoadWithTheirInnerKernel) {
  te::JitFunction tuned("te_compile_kernels", "autotuned_kernel");
  EXPECT_EQ(tuned.wrapper(), "autotune");
  ASSERT_EQ(tuned.params().size(), 4u);
  EXPECT_EQ(tuned.params()[3].name, "BLOCK");
  EXPECT_TRUE(tuned.params()[3].is_constexpr);
  // The inner JITFunction compiles with explicit meta-parameters, as Python's would.
  const auto& k = tuned.inner().compile(at<float>(0x10000), at<float>(0x20000), 64, 128);
  EXPECT_EQ(k.hash(), python_hash("te_compile_kernels", "autotuned_kernel.fn",
                                  "(P(0x10000, 'float32'), P(0x20000, 'float32'), 64, 128)"));
  // warmup() compiles every config, as Autotuner.warmup does (no GPU needed).
  const auto all = tuned.warmup(at<float>(0x10000), at<float>(0x20000), 64);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0]->hash(), python_hash("te_compile_kernels", "autotuned_kernel.fn",
                                        "(P(0x10000, 'float32'), P(0x20000, 'float32'), 64, 128)"));
  EXPECT_EQ(all[1]->hash(), python_hash("te_compile_kernels", "autotuned_kernel.fn",
                                        "(P(0x10000, 'float32'), P(0x20000, 'float32'), 64, 256)"));

  te::JitFunction heur("te_compile_kernels", "heuristic_kernel");
  EXPECT_EQ(heur.wrapper(), "heuristics");
  EXPECT_EQ(heur.inner().wrapper(), "");
  EXPECT_EQ(heur.compile(at<float>(0x10000), at<float>(0x20000), 64).hash(),
            heur.inner().compile(at<float>(0x10000), at<float>(0x20000), 64, 128).hash());
  try {
    te::JitFunction("pykernels.vector", "add_kernel").inner();
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(),
                 "pykernels.vector.add_kernel is a plain @triton.jit function; inner() is for "
                 "kernels wrapped in @triton.autotune or @triton.heuristics");
  }
}

TEST_F(Compile, IntrospectionReadsParams) {
  te::JitFunction flags("te_compile_kernels", "flags_kernel");
  const auto& p = flags.params();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].name, "x_ptr");
  EXPECT_TRUE(p[0].do_not_specialize_on_alignment);
  EXPECT_FALSE(p[0].do_not_specialize);
  EXPECT_TRUE(p[2].do_not_specialize);
  EXPECT_TRUE(p[3].is_constexpr);
  EXPECT_EQ(flags.signature(), "flags_kernel(x_ptr, out_ptr, n, BLOCK: constexpr)");
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  EXPECT_EQ(
      ann.signature(),
      "annotated_kernel(x_ptr: *fp32, out_ptr, n: i64, alpha: fp16, flag: u1, BLOCK: constexpr)");
  te::JitFunction axpy("pykernels.vector", "axpy_kernel");
  EXPECT_TRUE(axpy.params()[5].has_default);
  EXPECT_EQ(axpy.params()[5].default_repr, "1024");
  EXPECT_EQ(axpy.signature(),
            "axpy_kernel(x_ptr, y_ptr, out_ptr, alpha, n_elements, BLOCK: constexpr = 1024)");
  EXPECT_EQ(axpy.module(), "pykernels.vector");
  EXPECT_EQ(axpy.name(), "axpy_kernel");
}

TEST_F(Compile, HostPathPacksArgumentsAsTritonDoes) {
  te::JitFunction ann("te_compile_kernels", "annotated_kernel");
  uint64_t slots[16] = {};
  // First call compiles (miss), second is a hit.
  EXPECT_LT(te::detail::testing::dry_run(ann, slots, at<float>(0x10000), at<float>(0x20000),
                                         int64_t{-5}, 0.1, true, 128),
            0);
  const int n = te::detail::testing::dry_run(ann, slots, at<float>(0x10000), at<float>(0x20000),
                                             int64_t{-5}, 0.1, true, 128);
  ASSERT_EQ(n, 5);
  EXPECT_EQ(slots[0], 0x10000u);
  EXPECT_EQ(slots[1], 0x20000u);
  EXPECT_EQ(slots[2], static_cast<uint64_t>(int64_t{-5}));  // i64
  EXPECT_EQ(slots[3], 0x2E66u);                             // fp16(0.1), round to nearest even
  EXPECT_EQ(slots[4], 1u);                                  // u1
  te::JitFunction mixed("te_compile_kernels", "mixed_kernel");
  te::detail::testing::dry_run(mixed, slots, at<float>(0x10000), at<float>(0x20000), -7, 0.1, false,
                               128);
  ASSERT_EQ(te::detail::testing::dry_run(mixed, slots, at<float>(0x10000), at<float>(0x20000), -7,
                                         0.1, false, 128),
            5);
  EXPECT_EQ(static_cast<int32_t>(slots[2] & 0xFFFFFFFFu), -7);  // i32
  float f;
  const uint32_t bits = static_cast<uint32_t>(slots[3]);
  std::memcpy(&f, &bits, 4);
  EXPECT_EQ(f, 0.1f);  // a Python float is passed as fp32
  EXPECT_EQ(slots[4], 0u);
  // fp16 overflow is an error, as Python's launcher raises OverflowError.
  try {
    te::detail::testing::dry_run(ann, slots, at<float>(0x10000), at<float>(0x20000), int64_t{5},
                                 1e6, true, 128);
    FAIL() << "expected OverflowError";
  } catch (const te::OverflowError& e) {
    EXPECT_STREQ(e.what(),
                 "annotated_kernel(x_ptr, out_ptr, n, alpha, flag, BLOCK): argument #3 'alpha': "
                 "1e+06 is too large for fp16 (largest finite value 65504)");
  }
}

TEST_F(Compile, HotPathDoesNotAllocate) {
  // Everything a launch does before the driver call, on a cache hit: no heap allocation.
  te::JitFunction add("pykernels.vector", "add_kernel");
  te::JitFunction tup("te_compile_kernels", "tuple_kernel");
  te::JitFunction dt("te_compile_kernels", "dtype_kernel");
  uint64_t slots[16];
  te::detail::testing::dry_run(add, slots, at<float>(0x10000), at<float>(0x20000),
                               at<float>(0x30000), 4096, 1024);
  te::detail::testing::dry_run(tup, slots, std::make_tuple(at<float>(0x10000), at<float>(0x20000)),
                               std::make_tuple(64, 64), at<float>(0x30000), 64);
  te::detail::testing::dry_run(dt, slots, at<float>(0x10000),
                               te::Pointer(uint64_t{0x20000}, te::DType::fp16), 100,
                               te::DType::fp16, "double", 128);
  te_test::CountAllocations count;
  int hits = 0;
  for (int i = 0; i < 1000; ++i) {
    hits += te::detail::testing::dry_run(add, slots, at<float>(0x10000), at<float>(0x20000),
                                         at<float>(0x30000), 4096 + 16 * i, 1024) > 0;
    hits += te::detail::testing::dry_run(tup, slots,
                                         std::make_tuple(at<float>(0x10000), at<float>(0x20000)),
                                         std::make_tuple(64, 64), at<float>(0x30000), 64) > 0;
    hits += te::detail::testing::dry_run(dt, slots, at<float>(0x10000),
                                         te::Pointer(uint64_t{0x20000}, te::DType::fp16), 100,
                                         te::DType::fp16, "double", 128) > 0;
  }
  EXPECT_EQ(count.count(), 0u);
  EXPECT_EQ(hits, 3000);
}

// ---- What differs between Triton versions (core/triton_versions.h) ----------------------------

// The keyword arguments our compile gives Triton's backend are those JITFunction.run gives it
// for the same call: a knob that a new Triton reads in run() and we do not shows up here.
TEST_F(Compile, GivesTheBackendWhatJitFunctionRunGives) {
  te::JitFunction knob("te_compile_kernels", "knob_kernel");
  te::JitFunction knob8 = knob.with_options(te::Options().num_warps(8));
  for (const bool options : {false, true}) {
    te_test::Gil gil;
    py::object rec = py::module_::import("te_helpers").attr("RunKwargs")();
    rec.attr("__enter__")();
    const int block = options ? 4096 : 8192;  // compiled by this test only
    try {
      (options ? knob8 : knob)
          .compile(at<float>(0x10000), at<float>(0x20000), at<float>(0x30000), 100, block);
      py::module_::import("te_helpers")
          .attr("warmup_hashes")("te_compile_kernels", "knob_kernel",
                                 te_test::eval("(P(0x10000), P(0x20000), P(0x30000), 100, " +
                                               std::to_string(block) + ")"),
                                 te_test::eval(options ? "{'num_warps': 8}" : "{}"));
    } catch (...) {
      rec.attr("__exit__")(py::none(), py::none(), py::none());
      throw;
    }
    rec.attr("__exit__")(py::none(), py::none(), py::none());
    py::list calls = rec.attr("calls");
    ASSERT_EQ(calls.size(), 2u) << "each side compiles once";
    EXPECT_EQ(te_test::repr(calls[0]), te_test::repr(calls[1]))
        << "ours first, JITFunction.run's second";
  }
}

// Every environment variable that changes a compile's options, unset and set both ways: the
// kernel C++ compiles is the one Python compiles in the same environment, and setting it to 0
// or 1 gives different kernels (FP fusion on and off included, so Triton 3.10's flip of its
// default changes nothing between C++ and Python).
TEST_F(Compile, HashMatchesPythonUnderEachOptionEnvironmentVariable) {
  namespace tv = te::detail::triton_versions;
  te::JitFunction knob("te_compile_kernels", "knob_kernel");
  int version = 0;
  {
    te_test::Gil gil;
    te_test::exec(
        "import os\nimport triton as _t\n_v = _t.__version__.split('.')\n"
        "_te_version = int(_v[0]) * 100 + int(''.join(c for c in _v[1] if c.isdigit()))");
    version = te_test::eval("_te_version").cast<int>();
  }
  // Sets the variable (setting -1: unset, else 0 or 1), or its knob where Triton reads the
  // variable once, at import.
  auto set = [](const tv::OptionEnv& env, int setting) {
    te_test::Gil gil;
    const std::string name = env.name;
    if (env.read_at_import) {
      const std::string knob = std::string("_t.knobs.") + env.knob;
      te_test::exec("if '_te_saved' not in globals(): _te_saved = " + knob + "\n" + knob + " = " +
                    (setting < 0 ? std::string("_te_saved")
                     : setting   ? "True"
                                 : "False"));
    } else {
      te_test::exec("os.environ.pop('" + name + "', None)\n" +
                    (setting < 0 ? std::string()
                                 : "os.environ['" + name + "'] = '" + env.values[setting] + "'\n"));
    }
  };
  auto unset = [&](const tv::OptionEnv& env) {
    set(env, -1);
    te_test::Gil gil;
    te_test::exec("globals().pop('_te_saved', None)");
  };
  // Python's hash for this specialisation in this environment, compiled by a JITFunction with
  // fresh caches (the environment is not part of the cache key, in Python's cache or ours).
  auto python_fresh = [&](const tv::OptionEnv& env, int setting, const std::string& args) {
    set(env, setting);
    te_test::Gil gil;
    return py::module_::import("te_helpers")
        .attr("warmup_hashes")("te_compile_kernels", "knob_kernel", te_test::eval(args), py::dict(),
                               90, true)
        .cast<std::string>();
  };
  // Each round's C++ compile is of a specialisation no other round compiles: BLOCK and the
  // element type vary.
  int round = 0;
  for (const tv::OptionEnv& env : tv::kOptionEnvs) {
    if (version < env.since) continue;
    for (int setting = -1; setting <= 1; ++setting) {
      ASSERT_LT(round, 24) << "add another varying argument";
      const int block = 16 << (round % 8);
      const int width = round / 8;  // fp32, fp16, bf16
      ++round;
      const std::string dtype = width == 0 ? "'float32'" : width == 1 ? "'float16'" : "'bfloat16'";
      const std::string args = "(P(0x10000, " + dtype + "), P(0x20000, " + dtype +
                               "), P(0x30000, " + dtype + "), 100, " + std::to_string(block) + ")";
      const te::DType t = width == 0   ? te::DType::fp32
                          : width == 1 ? te::DType::fp16
                                       : te::DType::bf16;
      set(env, setting);
      const std::string ours = knob.compile(te::Pointer(0x10000, t), te::Pointer(0x20000, t),
                                            te::Pointer(0x30000, t), 100, block)
                                   .hash();
      const std::string what =
          std::string(env.name) +
          (setting < 0 ? std::string(" unset") : "=" + std::string(env.values[setting]));
      EXPECT_EQ(ours, python_fresh(env, setting, args)) << what;
      if (setting >= 0) {
        // The variable takes effect: the other setting compiles another kernel.
        EXPECT_NE(ours, python_fresh(env, 1 - setting, args)) << what;
      }
      unset(env);
    }
  }
  EXPECT_GE(round, 12);  // four variables on every version
}

// Parameters the installed Triton binds otherwise than by position or name are refused when the
// kernel is loaded. Where Triton's binder takes them as ordinary parameters (before 3.8 and 3.9),
// its code generator does not know them: neither Python nor C++ compiles such a kernel.
TEST_F(Compile, ParameterKindsTritonBindsOtherwiseAreRefused) {
  namespace tv = te::detail::triton_versions;
  int version = 0;
  {
    te_test::Gil gil;
    te_test::exec(
        "import triton as _t\n_v = _t.__version__.split('.')\n"
        "_te_version = int(_v[0]) * 100 + int(''.join(c for c in _v[1] if c.isdigit()))");
    version = te_test::eval("_te_version").cast<int>();
  }
  if (tv::var_positional_collects(version)) {
    try {
      te::JitFunction star("te_param_kinds", "star_kernel");
      FAIL() << "expected NotSupportedError";
    } catch (const te::NotSupportedError& e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot load kernel te_param_kinds.star_kernel: parameter '*rest' collects extra "
                "positional arguments into a tuple, which triton_embed does not bind; make it a "
                "plain parameter and pass a tuple");
    }
  } else {
    // An ordinary parameter to the binder, which Triton's code generator does not know either:
    // neither side compiles the kernel.
    te::JitFunction star("te_param_kinds", "star_kernel");
    EXPECT_THROW(star.compile(at<float>(0x10000), std::make_tuple(3, 4)), te::CompileError);
    EXPECT_THROW(python_hash("te_param_kinds", "star_kernel", "(P(0x10000, 'float32'), (3, 4))"),
                 py::error_already_set);
  }
  if (tv::keyword_only_enforced(version)) {
    try {
      te::JitFunction kw("te_param_kinds", "keyword_only_kernel");
      FAIL() << "expected NotSupportedError";
    } catch (const te::NotSupportedError& e) {
      EXPECT_EQ(std::string(e.what()),
                "cannot load kernel te_param_kinds.keyword_only_kernel: parameter 'n' is "
                "keyword-only, which triton_embed does not enforce; make it a "
                "positional-or-keyword parameter (it can still be passed by name)");
    }
  } else {
    te::JitFunction kw("te_param_kinds", "keyword_only_kernel");
    EXPECT_THROW(kw.compile(at<float>(0x10000), 7), te::CompileError);
    EXPECT_THROW(python_hash("te_param_kinds", "keyword_only_kernel", "(P(0x10000, 'float32'), 7)"),
                 py::error_already_set);
  }
}

}  // namespace
