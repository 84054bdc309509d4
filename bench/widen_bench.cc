// Widened bundles (issue 37), measured in programs linked to triton_embed::runtime only (no
// Python, no torch). Each mode prints one JSON line; bench/run.py runs them in fresh processes.
//
//   widen_bench launch WIDE.teb   add_kernel (pykernels.vector) from the widened benchmark
//                                 bundle at sizes nobody recorded, against raw cuLaunchKernelEx on
//                                 the same cubin (launch_bench's paired rows): n = 4097 (the
//                                 twin with n_elements unspecialised, an exact entry) and n = 1
//                                 (the constexpr 1 Triton makes, served by that twin, which
//                                 packs the 1); each output checked
//   widen_bench large SRC.teb N   a bundle of N entries: add_kernel's recorded entry and its twin
//                                 from SRC (a widened bundle), after N - 2 other entries (other
//                                 BLOCK values, 24 KiB cubins of their own, never loaded):
//                                 loading it and the first launch (context excluded), and the
//                                 cost of a launch that misses the in-memory cache (n = 4097, and
//                                 n = 1 through the entries with fewer assumptions) over a hit
//   widen_bench device WIDE.teb BLOCK.teb
//                                 device time of code compiled with fewer assumptions against
//                                 the specialised entry, on the widened benchmark bundle (add)
//                                 and the example's (examples/deploy): each kernel at a size its
//                                 recorded entry is
//                                 specialised for (a multiple of 16) and at that size + 1 (its
//                                 twin): add, the autotuned matmul (M), rope (seq_len)

#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.h"
#include "bundle/file_reader.h"
#include "bundle/file_writer.h"

namespace te = triton_embed;
namespace tb = triton_embed::detail::bundle;
using bench::check;
using bench::Clock;
using bench::seconds_since;

namespace {

struct Gpu {
  bench::Driver d;
  CUstream s;
  Gpu() : s(bench::primary_context_stream(d)) {}
  CUdeviceptr alloc(size_t bytes, const std::vector<float>* init = nullptr) {
    CUdeviceptr p;
    check(d.mem_alloc(&p, bytes), "cuMemAlloc");
    if (init != nullptr) check(d.memcpy_htod(p, init->data(), bytes), "cuMemcpyHtoD");
    return p;
  }
  void sync() { check(d.stream_synchronize(s), "cuStreamSynchronize"); }
  te::Stream stream() const { return reinterpret_cast<te::Stream>(s); }
};

// x, y and x + y's buffers of n floats.
struct AddBuffers {
  std::vector<float> hx, hy;
  CUdeviceptr x, y, o;
  AddBuffers(Gpu& g, int64_t n) : hx(n), hy(n) {
    for (int64_t i = 0; i < n; ++i) {
      hx[i] = static_cast<float>(i % 1000) * 0.25f;
      hy[i] = 1.0f / static_cast<float>(i % 977 + 1);
    }
    x = g.alloc(n * 4, &hx);
    y = g.alloc(n * 4, &hy);
    o = g.alloc(n * 4);
  }
  bool correct(Gpu& g, int64_t n) const {
    std::vector<float> ho(n);
    check(g.d.memcpy_dtoh(ho.data(), o, n * 4), "cuMemcpyDtoH");
    for (int64_t i = 0; i < n; ++i) {
      const float want = hx[i] + hy[i];
      if (std::memcmp(&ho[i], &want, 4) != 0) return false;
    }
    return true;
  }
};

int launch_mode(const char* bundle) {
  Gpu g;
  constexpr int64_t kMax = 4097;
  AddBuffers b(g, kMax);
  te::load_bundle(bundle);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  float* xp = reinterpret_cast<float*>(b.x);
  float* yp = reinterpret_cast<float*>(b.y);
  float* op = reinterpret_cast<float*>(b.o);
  std::string json = "{";
  for (const int64_t n : {int64_t{4097}, int64_t{1}}) {
    const std::string row = n == 1 ? "one" : "widened";
    const int64_t grid = te::cdiv(n, 1024);
    add.launch({grid}, g.stream(), xp, yp, op, n, 1024);
    g.sync();
    const bool ok = b.correct(g, n);
    const te::CompiledKernel& k = add.compile(xp, yp, op, n, 1024);
    CUmodule m;
    check(g.d.module_load_data(&m, k.cubin().data()), "cuModuleLoadData");
    CUfunction fn;
    check(g.d.module_get_function(&fn, m, k.name().c_str()), "cuModuleGetFunction");
    int nn = static_cast<int>(n);
    uint64_t slots[6] = {b.x, b.y, b.o, 0, 0, 0};
    void* params[6];
    for (int i = 0; i < 6; ++i) params[i] = &slots[i];
    params[3] = &nn;
    CUlaunchConfig cfg{};
    cfg.gridDimX = static_cast<unsigned>(grid);
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = static_cast<unsigned>(32 * k.num_warps());
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = static_cast<unsigned>(k.shared());
    cfg.hStream = g.s;
    const bench::Pair p = bench::paired(
        [&] { check(g.d.launch_kernel_ex(&cfg, fn, params, nullptr), "cuLaunchKernelEx"); },
        [&] { add.launch({grid}, g.stream(), xp, yp, op, n, 1024); }, g.s, g.d);
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "%s\"%s_raw_us\": %.4f, \"%s_ours_us\": %.4f, \"%s_ratio\": %.4f, "
                  "\"%s_p25\": %.4f, \"%s_p75\": %.4f, \"%s_correct\": %s, \"%s_entry\": \"%s\"",
                  json.size() > 1 ? ", " : "", row.c_str(), p.raw_us, row.c_str(), p.ours_us,
                  row.c_str(), p.ratio, row.c_str(), p.p25, row.c_str(), p.p75, row.c_str(),
                  ok ? "true" : "false", row.c_str(), k.signature().c_str());
    json += buf;
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}

int large_mode(const char* source, size_t n) {
  // The bundle, written before anything is timed.
  const tb::Bundle src = tb::Bundle::open(source);
  tb::Contents c = src.contents();
  uint32_t add = 0;
  while (add < c.kernels.size() && c.kernels[add].name != "add_kernel") ++add;
  std::vector<tb::BundleEntry> real;
  for (const tb::BundleEntry& e : c.entries) {
    const bool block_1024 = !e.key_words.empty() && e.key_words.back() == 1024;
    if (e.kernel == add && block_1024 && e.options.empty()) real.push_back(e);
  }
  if (real.size() < 2) throw std::runtime_error("the source bundle has no widened add_kernel");
  tb::Contents big;
  big.kernels.push_back(c.kernels[add]);
  std::mt19937_64 rng(20261128);
  for (size_t i = 0; i + real.size() < n; ++i) {
    tb::BundleEntry e = real[0];
    e.kernel = 0;
    e.key_words.back() = 100000 + i;  // another BLOCK value: another key
    e.meta.cubin.assign(24 << 10, '\0');
    for (char& ch : e.meta.cubin) ch = static_cast<char>(rng());
    e.meta.ptx.clear();
    big.entries.push_back(std::move(e));
  }
  for (tb::BundleEntry& e : real) {
    e.kernel = 0;
    big.entries.push_back(std::move(e));
  }
  char path[] = "/tmp/widen_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  struct Remove {
    const char* path;
    ~Remove() { std::remove(path); }
  } remove{path};
  tb::write_file(big, path);

  Gpu g;
  AddBuffers b(g, 4097);
  float* xp = reinterpret_cast<float*>(b.x);
  float* yp = reinterpret_cast<float*>(b.y);
  float* op = reinterpret_cast<float*>(b.o);
  const auto t0 = Clock::now();
  te::load_bundle(path);
  const te::JitFunction k("pykernels.vector", "add_kernel");
  k.launch({4}, g.stream(), xp, yp, op, int64_t{4096}, 1024);
  g.sync();
  const double first_s = seconds_since(t0);
  // A miss and then a hit of the same key: what resolving a key costs.
  auto miss_us = [&](int64_t nn) {
    const auto m0 = Clock::now();
    k.launch({te::cdiv(nn, 1024)}, g.stream(), xp, yp, op, nn, 1024);
    const double miss = seconds_since(m0);
    const auto h0 = Clock::now();
    k.launch({te::cdiv(nn, 1024)}, g.stream(), xp, yp, op, nn, 1024);
    const double hit = seconds_since(h0);
    g.sync();
    return (miss - hit) * 1e6;
  };
  const double miss_twin = miss_us(4097), miss_one = miss_us(1);
  const bool ok = b.correct(g, 1);
  std::printf(
      "{\"entries\": %zu, \"bytes\": %zu, \"load_and_first_launch_ms\": %.3f, "
      "\"miss_exact_us\": %.2f, \"miss_less_specialised_us\": %.2f, \"correct\": %s}\n",
      n, tb::serialize(big).size(), first_s * 1e3, miss_twin, miss_one, ok ? "true" : "false");
  return 0;
}

// Median device time per launch of f (20 launches between synchronisations, 15 rounds).
double device_us(Gpu& g, const std::function<void()>& f) {
  for (int i = 0; i < 5; ++i) f();
  g.sync();
  std::vector<double> t;
  for (int round = 0; round < 15; ++round) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 20; ++i) f();
    g.sync();
    t.push_back(seconds_since(t0) * 1e6 / 20);
  }
  return bench::quantile(t, 0.5);
}

int device_mode(const char* wide, const char* block) {
  Gpu g;
  te::load_bundle(wide);
  te::load_bundle(block);
  std::string json = "{";
  auto row = [&](const char* name, double spec, double twin, const std::string& spec_sig,
                 const std::string& twin_sig) {
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "%s\"%s_specialised_us\": %.3f, \"%s_twin_us\": %.3f, \"%s_ratio\": %.4f, "
                  "\"%s_specialised\": \"%s\", \"%s_twin\": \"%s\"",
                  json.size() > 1 ? ", " : "", name, spec, name, twin, name, twin / spec, name,
                  spec_sig.c_str(), name, twin_sig.c_str());
    json += buf;
  };
  // add: 64M floats (n = 2^26, "D") and one more.
  {
    constexpr int64_t kN = int64_t{1} << 26;
    CUdeviceptr x = g.alloc((kN + 16) * 4), y = g.alloc((kN + 16) * 4), o = g.alloc((kN + 16) * 4);
    const te::JitFunction add("pykernels.vector", "add_kernel");
    double t[2];
    std::string sig[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t n = kN + i;
      auto f = [&] {
        add.launch({te::cdiv(n, 1024)}, g.stream(), reinterpret_cast<float*>(x),
                   reinterpret_cast<float*>(y), reinterpret_cast<float*>(o), n, 1024);
      };
      t[i] = device_us(g, f);
      sig[i] = add.compile(reinterpret_cast<float*>(x), reinterpret_cast<float*>(y),
                           reinterpret_cast<float*>(o), n, 1024)
                   .signature();
    }
    row("add", t[0], t[1], sig[0], sig[1]);
  }
  // The example's matmul (fp16, K = 256, N = 768: its qkv projection) at M = 4096 and 4097, the
  // rule's config (tuned at M = 1024).
  {
    constexpr int64_t kK = 256, kNcols = 768, kM = 4097;
    CUdeviceptr a = g.alloc(kM * kK * 2), b = g.alloc(kK * kNcols * 2),
                c = g.alloc(kM * kNcols * 2);
    const te::JitFunction mm("pykernels.matmul", "matmul_kernel");
    const te::Pointer pa(a, te::DType::fp16), pb(b, te::DType::fp16), pc(c, te::DType::fp16);
    auto grid = [](const te::Meta& m) {
      return te::Grid(te::cdiv(m["M"], m["BLOCK_M"]) * te::cdiv(m["N"], m["BLOCK_N"]));
    };
    double t[2];
    std::string sig[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t m = 4096 + i;
      auto f = [&] {
        mm.launch(grid, g.stream(), pa, pb, pc, m, kNcols, kK, kK, int64_t{1}, kNcols, int64_t{1},
                  kNcols, int64_t{1}, te::arg("ACTIVATION") = std::string(""));
      };
      t[i] = device_us(g, f);
      sig[i] = mm.compile(pa, pb, pc, m, kNcols, kK, kK, int64_t{1}, kNcols, int64_t{1}, kNcols,
                          int64_t{1}, te::arg("ACTIVATION") = std::string(""))
                   .signature();
    }
    row("matmul", t[0], t[1], sig[0], sig[1]);
  }
  // The example's rope (fp16, batch 8, 4 heads of 64) at seq_len 4096 and 4097.
  {
    constexpr int64_t kB = 8, kH = 4, kD = 64, kS = 4097;
    CUdeviceptr x = g.alloc(kB * kS * kH * kD * 2), o = g.alloc(kB * kS * kH * kD * 2);
    CUdeviceptr cs = g.alloc(kS * kD / 2 * 4), sn = g.alloc(kS * kD / 2 * 4);
    const te::JitFunction rope("pykernels.rope", "rope_kernel");
    const te::Pointer px(x, te::DType::fp16), po(o, te::DType::fp16);
    const te::Pointer pc(cs, te::DType::fp32), ps(sn, te::DType::fp32);
    double t[2];
    std::string sig[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t s = 4096 + i;
      auto f = [&] { rope.launch({s}, g.stream(), px, pc, ps, po, s, kB, kH, kD, int64_t{4}); };
      t[i] = device_us(g, f);
      sig[i] = rope.compile(px, pc, ps, po, s, kB, kH, kD, int64_t{4}).signature();
    }
    row("rope", t[0], t[1], sig[0], sig[1]);
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "launch" && argc == 3) return launch_mode(argv[2]);
    if (mode == "large" && argc == 4) return large_mode(argv[2], std::stoul(argv[3]));
    if (mode == "device" && argc == 4) return device_mode(argv[2], argv[3]);
    std::fprintf(stderr,
                 "usage: %s launch WIDE.teb | large SRC.teb N | device WIDE.teb BLOCK.teb\n",
                 argv[0]);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "widen_bench: %s\n", e.what());
    return 1;
  }
}
