// A program that links the JIT layer and the torch layer's core without its Python bridge
// (triton_embed::triton_embed + triton_embed::torch_runtime, not triton_embed::torch): its
// Python heuristics and hooks would see raw pointers where Python Triton gives them tensors,
// so every torch launch is refused with a message that says what to link.

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <triton_embed/torch.h>

#include <string>

namespace te = triton_embed;

namespace {

TEST(TorchNoBridge, LaunchesRaiseNotSupportedError) {
  const te::JitFunction add("pykernels.vector", "add_kernel");  // from Python: the JIT is here
  const at::Tensor x = at::ones({4}), out = at::empty({4});
  const std::string expected =
      "launching pykernels.vector.add_kernel: this program loads the JIT layer "
      "(libtriton_embed.so) and the torch layer without its Python bridge "
      "(libtriton_embed_torch.so), so Python heuristics and hooks would not see tensors: link "
      "triton_embed::torch or triton_embed::ops rather than triton_embed::torch_runtime or "
      "triton_embed::ops_runtime (in Python: import triton_embed before loading "
      "libtriton_embed_ops.so)";
  for (int i = 0; i < 2; ++i) {  // every launch, not only the first
    try {
      te::launch(add, {1}, x, x, out, 4, 4);
      ADD_FAILURE() << "no exception";
    } catch (const te::NotSupportedError& e) {
      EXPECT_EQ(e.what(), expected);
    }
  }
}

}  // namespace
