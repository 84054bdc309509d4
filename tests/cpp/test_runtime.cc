// runtime.h: the embedded interpreter, sys.path, targets, kernel handles across threads.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "test_support.h"
#include "testing/testing.h"

namespace te = triton_embed;

namespace {

TEST(Runtime, EmbedsAndReleasesTheGil) {
  const te::RuntimeInfo info = te::runtime_info();
  EXPECT_TRUE(info.jit);       // linked to triton_embed::triton_embed: the JIT layer is there
  EXPECT_TRUE(info.embedded);  // a plain C++ executable: the library started Python
  EXPECT_EQ(info.python_version.rfind("3.", 0), 0u);
  EXPECT_EQ(info.triton_version.rfind("3.", 0), 0u);
  EXPECT_FALSE(info.python_executable.empty());
  // The test kernels directory and the pykernels root were put on sys.path.
  EXPECT_NE(std::find(info.python_paths.begin(), info.python_paths.end(), TE_TEST_KERNELS),
            info.python_paths.end());
  bool has_pykernels_root = false;
  for (const auto& p : info.python_paths) {
    if (access((p + "/pykernels/vector.py").c_str(), R_OK) == 0) has_pykernels_root = true;
  }
  EXPECT_TRUE(has_pykernels_root);
  // After start-up the GIL is released: this thread does not hold it.
  EXPECT_EQ(PyGILState_Check(), 0);
  te_test::Gil gil;
  EXPECT_EQ(PyGILState_Check(), 1);
  // The library's Python glue lives in this interpreter.
  EXPECT_TRUE(pybind11::module_::import("sys").attr("modules").contains("_triton_embed_glue"));
}

TEST(Runtime, AddPythonPathMakesNewModulesLoadable) {
  char dir[] = "/tmp/te_runtime_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  {
    std::ofstream f(std::string(dir) + "/te_tmp_kernels.py");
    f << "import triton\nimport triton.language as tl\n\n@triton.jit\ndef tmp_kernel(x, "
         "N: tl.constexpr):\n    pass\n";
  }
  te::add_python_path(dir);
  te::JitFunction k("te_tmp_kernels", "tmp_kernel");
  EXPECT_EQ(k.signature(), "tmp_kernel(x, N: constexpr)");
  const auto paths = te::runtime_info().python_paths;
  EXPECT_NE(std::find(paths.begin(), paths.end(), std::string(dir)), paths.end());
}

TEST(Runtime, ExplicitTarget) {
  te::set_target(te::Target::parse("cuda:80"));
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->arch, 80);
  te::JitFunction add("pykernels.vector", "add_kernel");
  const auto& k80 = add.compile(reinterpret_cast<float*>(0x1000), reinterpret_cast<float*>(0x2000),
                                reinterpret_cast<float*>(0x3000), 64, 64);
  EXPECT_EQ(k80.target(), "cuda:80");
  te::set_target(te::Target::parse("cuda:90"));
  const auto& k90 = add.compile(reinterpret_cast<float*>(0x1000), reinterpret_cast<float*>(0x2000),
                                reinterpret_cast<float*>(0x3000), 64, 64);
  EXPECT_EQ(k90.target(), "cuda:90");
  EXPECT_NE(k80.hash(), k90.hash());
  te::set_target(std::nullopt);
  EXPECT_FALSE(te::explicit_target().has_value());
  te::Target bad;
  bad.backend = "hip";
  bad.arch = 90;
  try {
    te::set_target(bad);
    FAIL() << "expected ValueError";
  } catch (const te::ValueError& e) {
    EXPECT_STREQ(e.what(), "set_target: only the 'cuda' backend is supported, got 'hip'");
  }
}

TEST(Runtime, ConcurrentLoadsShareOneState) {
  constexpr int kThreads = 8;
  std::vector<te::detail::KernelState*> states(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      states[t] = te::detail::testing::state(te::JitFunction("te_compile_kernels", "mixed_kernel"));
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < kThreads; ++t) EXPECT_EQ(states[t], states[0]);
  // Handles are cheap values: copies and option variants share the state.
  te::JitFunction a("te_compile_kernels", "mixed_kernel");
  te::JitFunction b = a;
  te::JitFunction c = a.with_options(te::Options().num_warps(2));
  EXPECT_EQ(te::detail::testing::state(b), te::detail::testing::state(a));
  EXPECT_EQ(te::detail::testing::state(c), te::detail::testing::state(a));
  EXPECT_TRUE(a.options().empty());
  EXPECT_EQ(c.options().str(), "num_warps=2");
}

}  // namespace
