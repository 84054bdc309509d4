// Demo: torch operators built on triton_embed, called from C++ through the dispatcher.
// On a GPU the Triton kernels are launched; without one the same kernels run on CPU tensors
// through Triton's interpreter (for correctness and debugging, not speed).

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <triton_embed/ops.h>

#include <cstdio>
#include <exception>

int main() {
  try {
    const bool gpu = torch::cuda::is_available();
    const at::Device device = gpu ? at::Device(at::kCUDA) : at::Device(at::kCPU);
    const int64_t rows = gpu ? 4096 : 64, cols = 1000;
    at::manual_seed(0);
    const at::Tensor x = at::randn({rows, cols}, at::TensorOptions().device(device));
    const at::Tensor w = at::randn({cols}, at::TensorOptions().device(device));

    const at::Tensor got = triton_embed::ops::softmax(
        triton_embed::ops::layer_norm(triton_embed::ops::add(x, x, 0.5), {cols}, w));
    const at::Tensor ref = at::softmax(at::layer_norm(x + 0.5 * x, {cols}, w), -1);
    const double err = (got - ref).abs().max().item<double>();
    const bool ok = err < 1e-5;
    std::printf(
        "%s: triton_embed::ops softmax(layer_norm(add(x, x, alpha=0.5))) on %lld x %lld "
        "floats: max |error| vs ATen = %.3g -> %s\n",
        gpu ? "GPU" : "CPU (Triton's interpreter)", static_cast<long long>(rows),
        static_cast<long long>(cols), err, ok ? "OK" : "MISMATCH");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
