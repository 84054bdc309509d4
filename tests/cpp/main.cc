// One global environment owns the interpreter for every test of the executable.

#include <gtest/gtest.h>
#include <triton_embed/jit.h>

namespace {
class RuntimeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    triton_embed::RuntimeOptions opts;
    opts.python_paths.push_back(TE_TEST_KERNELS);
    triton_embed::initialize(opts);
  }
};
}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new RuntimeEnvironment);
  return RUN_ALL_TESTS();
}
