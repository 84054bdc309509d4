// How long the driver takes to say whether a stream is capturing (cuStreamIsCapturing), which
// every launch now asks (a captured graph keeps its kernels: core/module.h), next to a raw
// cuLaunchKernelEx of an empty kernel. Build: g++ -O2 capture_check.cc -lcuda
// -I/usr/local/cuda/include
#include <cuda.h>

#include <chrono>
#include <cstdio>

int main() {
  cuInit(0);
  CUdevice dev;
  CUcontext ctx;
  cuDeviceGet(&dev, 0);
  cuDevicePrimaryCtxRetain(&ctx, dev);
  cuCtxSetCurrent(ctx);
  CUstream stream;
  cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  constexpr int kCalls = 2000000;
  CUstreamCaptureStatus status;
  for (int i = 0; i < 1000; ++i) cuStreamIsCapturing(stream, &status);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) cuStreamIsCapturing(stream, &status);
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
      kCalls;
  std::printf("{\"cuStreamIsCapturing_ns\": %.1f, \"status\": %d}\n", ns, static_cast<int>(status));
  return 0;
}
