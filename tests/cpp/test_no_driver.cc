// Run with TRITON_EMBED_LIBCUDA pointing nowhere: the library still loads and compiles, and
// launching says why it cannot.

#include <cstdlib>
#include <string>

#include "test_support.h"

namespace te = triton_embed;

namespace {

TEST(NoDriver, TargetFromTheEnvironment) {
  // Read on first use, so set it before anything asks for the target.
  setenv("TRITON_EMBED_TARGET", "cuda:80", 1);
  ASSERT_TRUE(te::explicit_target().has_value());
  EXPECT_EQ(te::explicit_target()->arch, 80);
  te::set_target(std::nullopt);
}

TEST(NoDriver, CompileNeedsATarget) {
  EXPECT_FALSE(te::cuda_available());
  te::JitFunction add("pykernels.vector", "add_kernel");
  auto* x = reinterpret_cast<float*>(0x1000);
  try {
    add.compile(x, x, x, 64, 64);
    FAIL() << "expected NoDeviceError";
  } catch (const te::NoDeviceError& e) {
    EXPECT_STREQ(e.what(),
                 "compiling pykernels.vector.add_kernel: no target: no GPU is usable (cannot load "
                 "the CUDA driver (/nonexistent/libcuda.so.1): /nonexistent/libcuda.so.1: cannot "
                 "open shared object file: No such file or directory) and no explicit target is "
                 "set. Set TRITON_EMBED_TARGET (e.g. cuda:90) or call triton_embed::set_target().");
  }
  te::set_target(te::Target::parse("cuda:90"));
  EXPECT_EQ(add.compile(x, x, x, 64, 64).target(), "cuda:90");
}

TEST(NoDriver, LaunchSaysWhy) {
  te::JitFunction add("pykernels.vector", "add_kernel");
  auto* x = reinterpret_cast<float*>(0x1000);
  try {
    add.launch({1}, nullptr, x, x, x, 64, 64);
    FAIL() << "expected NoDeviceError";
  } catch (const te::NoDeviceError& e) {
    EXPECT_STREQ(e.what(),
                 "no usable GPU: cannot load the CUDA driver (/nonexistent/libcuda.so.1): "
                 "/nonexistent/libcuda.so.1: cannot open shared object file: No such file or "
                 "directory. Launching needs a CUDA driver and a device; to compile without one, "
                 "set a target (TRITON_EMBED_TARGET=cuda:90 or triton_embed::set_target) and call "
                 "JitFunction::compile().");
    EXPECT_EQ(e.call(), "cuInit");
    EXPECT_EQ(e.name(), "CUDA_ERROR_NO_DEVICE");
  }
  // A catch of the base classes works too.
  EXPECT_THROW(add.launch({1}, nullptr, x, x, x, 64, 64), te::CudaError);
  EXPECT_THROW(add.launch({1}, nullptr, x, x, x, 64, 64), te::Error);
}

}  // namespace
