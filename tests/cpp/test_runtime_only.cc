// A program linked to triton_embed::runtime only: no Python, no JIT layer. The public headers
// and the JitFunction API are the same; what needs the JIT says so with a typed error.

#include <gtest/gtest.h>
#include <triton_embed/jit.h>

#include <fstream>
#include <string>
#include <type_traits>

namespace te = triton_embed;

namespace {

// Runs `f`, expects it to throw E, and returns the message.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type was thrown";
  return "";
}

TEST(RuntimeOnly, NotInBundleErrorIsALookupError) {
  static_assert(std::is_base_of_v<te::LookupError, te::NotInBundleError>);
  static_assert(std::is_base_of_v<te::Error, te::NotInBundleError>);
  const te::NotInBundleError e("x");
  EXPECT_NE(dynamic_cast<const te::LookupError*>(&e), nullptr);
  EXPECT_NE(dynamic_cast<const std::runtime_error*>(&e), nullptr);
}

TEST(RuntimeOnly, AKernelNoBundleHoldsRaisesNotInBundleError) {
  const std::string message = message_of<te::NotInBundleError>(
      [] { te::JitFunction add("pykernels.vector", "add_kernel"); });
  EXPECT_EQ(message,
            "cannot load kernel pykernels.vector.add_kernel: no kernel bundle holds it; this "
            "program links triton_embed::runtime only, which runs no Python and compiles "
            "nothing: link triton_embed::triton_embed to compile kernels with Triton on first "
            "use, or build a kernel bundle that holds it");
  // Handlers of the base classes catch it too, and a second attempt raises the same.
  EXPECT_THROW(te::JitFunction("pykernels.vector", "add_kernel"), te::LookupError);
  EXPECT_THROW(te::JitFunction("m", "k"), te::Error);
}

TEST(RuntimeOnly, TargetsWork) {
  te::set_target(te::Target::parse("cuda:90"));
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->str(), "cuda:90");
  te::set_target(std::nullopt);
  EXPECT_FALSE(te::explicit_target().has_value());
  EXPECT_THROW(te::Target::parse("gpu"), te::ValueError);
}

TEST(RuntimeOnly, CudaAvailableNeverThrows) {
  const bool available = te::cuda_available();  // false without a driver or a GPU
  EXPECT_EQ(available, te::cuda_available());
}

TEST(RuntimeOnly, InitializeStartsNoPython) {
  te::initialize();  // nothing to do
  te::RuntimeOptions opts;
  opts.target = te::Target::parse("sm_80");
  te::initialize(opts);
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->str(), "cuda:80");
  te::set_target(std::nullopt);

  const te::RuntimeInfo info = te::runtime_info();
  EXPECT_FALSE(info.jit);
  EXPECT_FALSE(info.embedded);
  EXPECT_TRUE(info.python_version.empty());
  EXPECT_TRUE(info.python_executable.empty());
  EXPECT_TRUE(info.triton_version.empty());
  EXPECT_TRUE(info.python_paths.empty());

  // No libpython in the process.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) EXPECT_EQ(line.find("libpython"), std::string::npos) << line;
}

TEST(RuntimeOnly, PythonOptionsRaiseNotSupportedError) {
  te::RuntimeOptions paths;
  paths.python_paths.push_back("/opt/kernels");
  paths.target = te::Target::parse("cuda:90");
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::initialize(paths); }),
            "initialize: RuntimeOptions::python_paths is set, but this program links "
            "triton_embed::runtime only, which starts no Python: link triton_embed::triton_embed "
            "to run kernels from Python modules, or leave RuntimeOptions::python and "
            "python_paths empty");
  EXPECT_FALSE(te::explicit_target().has_value());  // nothing was applied

  te::RuntimeOptions python;
  python.python = "/usr/bin/python3";
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::initialize(python); }),
            "initialize: RuntimeOptions::python is set, but this program links "
            "triton_embed::runtime only, which starts no Python: link triton_embed::triton_embed "
            "to run kernels from Python modules, or leave RuntimeOptions::python and "
            "python_paths empty");

  EXPECT_EQ(message_of<te::NotSupportedError>([] { te::add_python_path("/opt/kernels"); }),
            "add_python_path(\"/opt/kernels\"): this program links triton_embed::runtime only, "
            "which starts no Python: link triton_embed::triton_embed to load kernels from Python "
            "modules");
}

}  // namespace
