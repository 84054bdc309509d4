// Demo: launch pykernels.vector.add_kernel from C++.
//
// With a GPU: adds two vectors on the device and checks the result against the CPU.
// Without one: compiles the kernel for an explicit target (TRITON_EMBED_TARGET, default
// cuda:90) and says so.

#include <triton_embed/jit.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#if defined(TRITON_EMBED_EXAMPLE_HAVE_CUDART)
#include <cuda_runtime_api.h>
#define CUDA_OK(call)                                                           \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(err_)); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)
#endif

namespace te = triton_embed;

static int compile_only(const te::JitFunction& add) {
  if (!te::explicit_target()) te::set_target(te::Target::parse("cuda:90"));
  const int n = 98432;
  // Any 16-byte aligned addresses specialise the same way as real device buffers.
  const float* x = reinterpret_cast<const float*>(0x10000);
  const float* y = reinterpret_cast<const float*>(0x20000);
  float* out = reinterpret_cast<float*>(0x30000);
  const auto t0 = std::chrono::steady_clock::now();
  const te::CompiledKernel& k = add.compile(x, y, out, n, 1024);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("no GPU: compiled %s for %s without launching (%.0f ms)\n", k.signature().c_str(),
              k.target().c_str(), ms);
  std::printf("  hash %s, cubin %zu bytes, %d warps\n", k.hash().c_str(), k.cubin().size(),
              k.num_warps());
  return 0;
}

int main() {
  try {
    te::JitFunction add("pykernels.vector", "add_kernel");
    const te::RuntimeInfo info = te::runtime_info();
    std::printf("triton_embed demo: Python %s, Triton %s (%s interpreter)\n",
                info.python_version.c_str(), info.triton_version.c_str(),
                info.embedded ? "embedded" : "joined");
    if (!te::cuda_available()) return compile_only(add);
#if !defined(TRITON_EMBED_EXAMPLE_HAVE_CUDART)
    std::printf("a GPU is present but this demo was built without the CUDA runtime\n");
    return compile_only(add);
#else
    const int n = 98432;
    std::vector<float> hx(n), hy(n), hout(n, 0.f);
    for (int i = 0; i < n; ++i) {
      hx[i] = std::sin(0.001f * i);
      hy[i] = 0.5f * i;
    }
    float *x = nullptr, *y = nullptr, *out = nullptr;
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&x), n * sizeof(float)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&y), n * sizeof(float)));
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&out), n * sizeof(float)));
    CUDA_OK(cudaMemcpy(x, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(y, hy.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreate(&stream));

    auto t0 = std::chrono::steady_clock::now();
    add.launch({te::cdiv(n, 1024)}, stream, x, y, out, n, 1024);  // compiles on first use
    CUDA_OK(cudaStreamSynchronize(stream));
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    // Host time per launch: batches of back-to-back launches (short enough not to fill the
    // launch queue), synchronised between batches; the median batch.
    std::vector<double> per_launch_us;
    for (int batch = 0; batch < 50; ++batch) {
      const int launches = 200;
      t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < launches; ++i)
        add.launch({te::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
      per_launch_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          launches);
      CUDA_OK(cudaStreamSynchronize(stream));
    }
    std::sort(per_launch_us.begin(), per_launch_us.end());
    const double launch_us = per_launch_us[per_launch_us.size() / 2];
    CUDA_OK(cudaMemcpy(hout.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));

    double max_err = 0;
    for (int i = 0; i < n; ++i) max_err = std::fmax(max_err, std::fabs(hout[i] - (hx[i] + hy[i])));
    std::printf("GPU: add_kernel on %d floats: max |error| = %g -> %s\n", n, max_err,
                max_err == 0 ? "OK" : "MISMATCH");
    std::printf(
        "  first call (compile + load) %.1f ms; then %.2f us per launch (host time, median "
        "of 50 batches of 200)\n",
        first_ms, launch_us);
    cudaFree(x);
    cudaFree(y);
    cudaFree(out);
    cudaStreamDestroy(stream);
    return max_err == 0 ? 0 : 1;
#endif
  } catch (const te::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
