// A program that links the JIT layer and the torch layer's core without its Python bridge
// (triton_embed::triton_embed + triton_embed::torch_runtime, not triton_embed::torch). Where
// Python would look at a tensor argument (a heuristic, a tuning run, a hook) it would see a
// raw pointer, not the tensor Python Triton gives it: refused with a message that says what to
// link, as is a CPU tensor (no interpreter bridge). A plain kernel's CUDA launch needs neither.

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <triton_embed/torch.h>

#include <string>

namespace te = triton_embed;

namespace {

TEST(TorchNoBridge, CpuTensorsRaiseNotSupportedError) {
  const te::JitFunction add("pykernels.vector", "add_kernel");  // from Python: the JIT is here
  const at::Tensor x = at::ones({4}), out = at::empty({4});
  try {
    te::launch(add, {1}, x, x, out, 4, 4);
    ADD_FAILURE() << "no exception";
  } catch (const te::NotSupportedError& e) {
    EXPECT_EQ(std::string(e.what()),
              "add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK): argument #0 'x_ptr': a CPU "
              "tensor runs through "
              "Triton's interpreter, which needs Python; this program links the torch layer "
              "without it (triton_embed::torch_runtime or triton_embed::ops_runtime): link "
              "triton_embed::torch or triton_embed::ops (in Python: import triton_embed) to run "
              "on CPU tensors, or pass CUDA tensors");
  }
}

TEST(TorchNoBridge, PythonLookingAtATensorRaisesNotSupportedError) {
  if (!at::hasCUDA() || !te::cuda_available()) GTEST_SKIP() << "no GPU";
  const at::Tensor x = at::ones({300}, at::kCUDA), out = at::empty({300}, at::kCUDA);
  // A plain kernel: Python is not asked about its arguments.
  const te::JitFunction add("pykernels.vector", "add_kernel");
  te::launch(add, {1}, x, x, out, 300, 512);
  EXPECT_TRUE(at::equal(out, x + x));
  // A heuristic: Python gets every argument.
  const te::JitFunction heur("te_tune_kernels", "counted_heur_kernel");
  const std::string expected =
      "te_tune_kernels.counted_heur_kernel: its Python heuristics, tuning or hooks would see "
      "argument #0 as a raw pointer, not a tensor: this program loads the JIT layer "
      "(libtriton_embed.so) and the torch layer without its Python bridge "
      "(libtriton_embed_torch.so); link triton_embed::torch or triton_embed::ops rather than "
      "triton_embed::torch_runtime or triton_embed::ops_runtime (in Python: import triton_embed "
      "before loading libtriton_embed_ops.so)";
  for (int i = 0; i < 2; ++i) {  // every time Python would look
    try {
      te::launch(heur, {1}, x, out, 300 + i);
      ADD_FAILURE() << "no exception";
    } catch (const te::NotSupportedError& e) {
      EXPECT_EQ(std::string(e.what()), expected);
    }
  }
}

}  // namespace
