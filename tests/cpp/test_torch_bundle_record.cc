// The recording half of the torch bundle tests (tests/cpp/torch_bundle_cases.h): a JIT process
// linked to triton_embed::ops runs the ops on the GPU (compiling their kernels for it), saves
// inputs and outputs, and writes the bundle. CTest runs it as torch_bundle_record, before
// torch_bundle_replay; both skip without a GPU.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <triton_embed/bundle.h>

#include "torch_bundle_cases.h"

namespace te = triton_embed;
namespace tb = te_torch_bundle;

namespace {

TEST(TorchBundle, RecordOpsOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  for (size_t i = 0; i < tb::cases().size(); ++i) {
    const tb::Case& c = tb::cases()[i];
    std::vector<at::Tensor> in = tb::make_inputs(i);
    for (at::Tensor& t : in) t = t.cuda();
    const at::Tensor out = c.run(in);
    ASSERT_TRUE(out.is_cuda()) << c.name;
    std::vector<at::Tensor> saved;
    for (const at::Tensor& t : in) saved.push_back(t.cpu());
    saved.push_back(out.cpu());
    torch::save(saved, tb::tensors_path(c));
  }
  te::write_bundle(tb::bundle_path());
}

}  // namespace
