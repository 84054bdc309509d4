// The recording half of the torch bundle tests (tests/cpp/torch_bundle_cases.h): a JIT process
// linked to triton_embed::ops runs the ops on the GPU (compiling their kernels for it), saves
// inputs and outputs, and writes the bundle (TorchBundle); then the ops on 100 random shapes
// (TorchAnyBundle), for the bundle of generic entries. CTest runs it as torch_bundle_record,
// before torch_runtime_only replays both; all skip without a GPU.

#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/serialize.h>
#include <triton_embed/bundle.h>

#include <fstream>

#include "torch_any_cases.h"
#include "torch_bundle_cases.h"

namespace te = triton_embed;
namespace tb = te_torch_bundle;
namespace ta = te_torch_any;

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

// The JIT's outputs of the ops on 100 random shapes (torch_any_cases.h), computed after
// torch_any_bundle_build wrote the bundle of generic entries (nothing of this run is in it), and
// after TorchBundle wrote its bundle; saved with the inputs for torch_runtime_only.
TEST(TorchAnyBundle, ReferenceOutputsOnTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  ASSERT_TRUE(std::ifstream(ta::bundle_path()).good())
      << ta::bundle_path() << ": torch_any_bundle_build writes it first";
  for (size_t i = 0; i < ta::cases().size(); ++i) {
    const ta::Case& c = ta::cases()[i];
    std::vector<at::Tensor> in = ta::make_inputs(i);
    for (at::Tensor& t : in) t = t.cuda();
    const at::Tensor out = ta::run(c, in);
    ASSERT_TRUE(out.is_cuda()) << c.name();
    std::vector<at::Tensor> saved;
    for (const at::Tensor& t : in) saved.push_back(t.cpu());
    saved.push_back(out.cpu());
    torch::save(saved, ta::tensors_path(i));
  }
}

}  // namespace
