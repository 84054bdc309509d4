// A libtorch program linked to triton_embed::ops_runtime (and so triton_embed::torch_runtime):
// the ops and at::Tensor launches with no Python and no JIT layer. Kernels come from bundles;
// CPU tensors, which need Triton's interpreter, raise NotSupportedError.
//
// CTest runs its suites in one process (torch_runtime_only), each with the bundles it loads
// (unload_bundles() forgets what the suite before resolved): TorchRuntimeOnly with the bundle
// bundle_record wrote and, on a GPU, TorchBundleReplay (the ops from the bundle
// torch_bundle_record wrote, bitwise against the JIT's outputs) and TorchAnyBundleReplay (the
// ops on 100 shapes nobody recorded, from a bundle of generic entries).

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <triton_embed/bundle.h>
#include <triton_embed/ops.h>
#include <triton_embed/torch.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "message_of.h"
#include "torch_any_cases.h"
#include "torch_bundle_cases.h"

namespace te = triton_embed;
namespace tb = te_torch_bundle;
namespace ta = te_torch_any;

namespace {

using te_test::message_of;

// Makes `path` the process's only loaded bundle.
void use_bundle(const std::string& path) {
  te::unload_bundles();
  te::load_bundle(path);
}

class TorchRuntimeOnly : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const char* dir = std::getenv("TE_BUNDLE_DIR");
    use_bundle(std::string(dir != nullptr ? dir : ".") + "/record.teb");
  }
};

const char kCpuNeedsPython[] =
    ": a CPU tensor runs through Triton's interpreter, which needs Python; this program links "
    "the torch layer without it (triton_embed::torch_runtime or triton_embed::ops_runtime): "
    "link triton_embed::torch or triton_embed::ops (in Python: import triton_embed) to run on "
    "CPU tensors, or pass CUDA tensors";

TEST_F(TorchRuntimeOnly, NoPythonAndNoJitInTheProcess) {
  EXPECT_FALSE(te::runtime_info().jit);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    EXPECT_EQ(line.find("libpython"), std::string::npos) << line;
    EXPECT_EQ(line.find("libtriton_embed.so"), std::string::npos) << line;
    EXPECT_EQ(line.find("libtriton_embed_torch.so"), std::string::npos) << line;
  }
}

TEST_F(TorchRuntimeOnly, CpuTensorsToOpsRaiseNotSupportedError) {
  const at::Tensor x = at::ones({8}), y = at::ones({8});
  // Before the kernel is looked for: no bundle holds the ops' kernels here.
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::ops::add(x, y); }),
            std::string("triton_embed::add") + kCpuNeedsPython);
  EXPECT_EQ(message_of<te::NotSupportedError>([&] {
              te::ops::softmax(x.view({2, 4}));
            }),
            std::string("triton_embed::softmax") + kCpuNeedsPython);
  EXPECT_EQ(message_of<te::NotSupportedError>([&] {
              te::ops::layer_norm(x.view({2, 4}), {4});
            }),
            std::string("triton_embed::layer_norm") + kCpuNeedsPython);
  // What needs no kernel still works: meta tensors.
  const at::Tensor m = at::empty({2, 4}, at::TensorOptions().device(at::kMeta));
  EXPECT_EQ(te::ops::add(m, m).sizes(), m.sizes());
}

TEST_F(TorchRuntimeOnly, CpuTensorsToALaunchRaiseNotSupportedError) {
  // The kernel comes from the bundle bundle_record wrote (TRITON_EMBED_BUNDLE).
  const te::JitFunction add("pykernels.vector", "add_kernel");
  const at::Tensor x = at::ones({4}), out = at::empty({4});
  EXPECT_EQ(message_of<te::NotSupportedError>([&] { te::launch(add, {1}, x, x, out, 4, 4); }),
            std::string("add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): "
                        "argument #0 'x_ptr'") +
                kCpuNeedsPython);
}

TEST_F(TorchRuntimeOnly, CudaTensorsToAnOpNoBundleHoldsRaiseNotInBundleError) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const at::Tensor x = at::ones({8}, at::kCUDA);
  EXPECT_EQ(message_of<te::NotInBundleError>([&] { te::ops::add(x, x); }),
            "cannot load kernel pykernels.elementwise.binary_kernel: no kernel bundle holds it; "
            "this program links triton_embed::runtime only, which runs no Python and compiles "
            "nothing: link triton_embed::triton_embed to compile kernels with Triton on first "
            "use, or build a kernel bundle that holds it");
}

// The ops from the bundle torch_bundle_record wrote, on its inputs: its outputs, bit for bit.
class TorchBundleReplay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (torch::cuda::is_available()) use_bundle(tb::bundle_path());  // recorded on a GPU only
  }
  void SetUp() override {
    if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  }

  void replay(const std::string& prefix) {
    int n = 0;
    for (const tb::Case& c : tb::cases()) {
      if (c.name.rfind(prefix, 0) != 0) continue;
      ++n;
      std::vector<at::Tensor> saved;
      torch::load(saved, tb::tensors_path(c));
      ASSERT_EQ(saved.size(), c.shapes.size() + 1) << c.name;
      const at::Tensor expected = saved.back();
      saved.pop_back();
      for (at::Tensor& t : saved) t = t.cuda();
      const at::Tensor got = c.run(saved);
      EXPECT_TRUE(got.is_cuda()) << c.name;
      EXPECT_TRUE(tb::bitwise_equal(got, expected)) << c.name;
      EXPECT_TRUE(at::equal(got.cpu(), expected)) << c.name;
    }
    EXPECT_GT(n, 0) << prefix;
  }
};

TEST_F(TorchBundleReplay, Add) { replay("add_"); }
TEST_F(TorchBundleReplay, Softmax) { replay("softmax_"); }
TEST_F(TorchBundleReplay, LayerNorm) { replay("layer_norm_"); }

// Within rounding: the ops against torch's, or against the JIT's where another cubin computed
// them (sums of up to 6000 values: an absolute part).
bool close(const at::Tensor& got, const at::Tensor& want, at::ScalarType dtype) {
  const double tol = dtype == at::kHalf ? 1e-2 : 1e-4;
  return at::allclose(got.to(at::kFloat), want.to(at::kFloat), tol,
                      dtype == at::kHalf ? 1e-2 : 1e-3);
}

// The ops on 100 random shapes no entry was made for, from the bundle of generic entries
// (tests/aot/ops_any_calls.txt: `i32:any`, the heuristics as expressions), in this program
// without Python: the JIT's outputs (torch_bundle_record's TorchAnyBundle), bit for bit where
// the same cubin computed both, and torch's own ops within rounding. The bundle is for cuda:90
// (H100, H200).
TEST(TorchAnyBundleReplay, HundredShapesNobodyRecorded) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  std::vector<te::BundleNotice> notices;
  te::set_bundle_notice_callback([&](const te::BundleNotice& n) { notices.push_back(n); });
  use_bundle(ta::bundle_path());
  int bitwise = 0;
  std::set<std::tuple<int, int, int64_t>> generic_keys;  // op, dtype, block
  for (size_t i = 0; i < ta::cases().size(); ++i) {
    const ta::Case& c = ta::cases()[i];
    if (!c.same_cubin()) {
      generic_keys.emplace(static_cast<int>(c.op), static_cast<int>(c.dtype), c.block());
    }
    std::vector<at::Tensor> saved;
    torch::load(saved, ta::tensors_path(i));
    ASSERT_GE(saved.size(), 2u) << c.name();
    const at::Tensor expected = saved.back();
    saved.pop_back();
    std::vector<at::Tensor> in;
    for (const at::Tensor& t : saved) in.push_back(t.cuda());
    const at::Tensor got = ta::run(c, in).cpu();
    ASSERT_EQ(got.scalar_type(), expected.scalar_type()) << c.name();
    ASSERT_EQ(got.sizes(), expected.sizes()) << c.name();
    if (c.same_cubin()) {
      EXPECT_TRUE(tb::bitwise_equal(got, expected)) << c.name() << ": not the JIT's bits";
      ++bitwise;
    } else {
      EXPECT_TRUE(close(got, expected, c.dtype)) << c.name() << ": far from the JIT's output";
    }
    EXPECT_TRUE(close(got, ta::reference(c, saved), c.dtype)) << c.name() << ": far from torch";
  }
  te::set_bundle_notice_callback(nullptr);
  EXPECT_GT(bitwise, 50);
  // The calls with a multiple of 16 were served by the generic entries: said once per key.
  size_t less_specialised = 0;
  for (const te::BundleNotice& n : notices) less_specialised += n.less_specialised ? 1 : 0;
  EXPECT_GT(generic_keys.size(), 5u);
  EXPECT_EQ(less_specialised, generic_keys.size());
}

}  // namespace
