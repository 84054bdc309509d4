#pragma once

// Device memory for the GPU tests (the CUDA runtime): zeroed on allocation, with 16 spare
// bytes so that a kernel reading a little past the end stays in bounds; ptr is null when the
// allocation failed. And fp16 test data that products keep exact.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace te_test {

// fp16 bits of a small integer (|v| < 2048): exact.
inline uint16_t half_of(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  uint32_t m = static_cast<uint32_t>(v < 0 ? -v : v);
  int e = 0;
  while ((m >> e) > 1) ++e;
  const uint32_t mant = (m << (10 - e)) & 0x3FF;
  return static_cast<uint16_t>(sign | (e + 15) << 10 | mant);
}

template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    if (cudaMalloc(reinterpret_cast<void**>(&ptr), count * sizeof(T) + 16) != cudaSuccess)
      ptr = nullptr;
    cudaMemset(ptr, 0, count * sizeof(T) + 16);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void upload(const std::vector<T>& h) {
    cudaMemcpy(ptr, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> download() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

// The operands of an exact matmul test: a (M x K) and b (K x N), row-major, small integers
// (their sums of products stay exact in fp32) as ints and as fp16 bits; `seed` varies them.
struct IntMatmul {
  int M, N, K;
  std::vector<int> a, b;
  std::vector<uint16_t> ha, hb;
  IntMatmul(int m, int n, int k, int seed)
      : M(m),
        N(n),
        K(k),
        a(static_cast<size_t>(m) * k),
        b(static_cast<size_t>(k) * n),
        ha(a.size()),
        hb(b.size()) {
    for (size_t i = 0; i < a.size(); ++i)
      ha[i] = half_of(a[i] = static_cast<int>((i * 7 + seed) % 9) - 4);
    for (size_t i = 0; i < b.size(); ++i)
      hb[i] = half_of(b[i] = static_cast<int>((i * 5 + seed) % 7) - 3);
  }
  // The first element where c (M x N, row-major) differs from a @ b, as text; empty when none.
  std::string mismatch(const std::vector<float>& c) const {
    for (int i = 0; i < M; ++i) {
      for (int j = 0; j < N; ++j) {
        int64_t want = 0;
        for (int k = 0; k < K; ++k) {
          want += int64_t{a[static_cast<size_t>(i) * K + k]} * b[static_cast<size_t>(k) * N + j];
        }
        const float got = c[static_cast<size_t>(i) * N + j];
        if (got != static_cast<float>(want)) {
          return "matmul " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                 " at (" + std::to_string(i) + ", " + std::to_string(j) +
                 "): " + std::to_string(got) + ", want " + std::to_string(want);
        }
      }
    }
    return {};
  }
};

}  // namespace te_test
