// The deployment side of the benchmark: a program linked to triton_embed::runtime only (no
// Python, no torch) that launches pykernels.vector.add_kernel from a kernel bundle.
//
//   bundle_bench BUNDLE    prints one JSON line:
//     context_s            process start to a current CUDA context (the driver's cost, not ours)
//     first_launch_s       then: load the bundle, the kernel, launch once and synchronise
//     rss_before_mib       resident memory once the context exists
//     rss_added_mib        what loading the bundle and the kernel and launching added
//     raw_us / ours_us / ratio, p25, p75
//                          host time per launch against raw cuLaunchKernelEx on the same cubin,
//                          measured as launch_bench's paired rows (alternating batches)
//     correct              the launch's output equals x + y, bit for bit
//     tuned_ratio, tuned_p25, tuned_p75, tuned_correct, tuned_best
//                          the same for bench_kernels.add_autotune_kernel (@triton.autotune,
//                          a grid callable): its tuned choice and cubin come from the bundle
//     fallback_ratio, fallback_p25, fallback_p75, fallback_correct
//                          the same for add_kernel at n = 4096, BLOCK 256, which the bundle
//                          holds only for n = 1000: served by that less specialised entry
//     rule_ratio, rule_p25, rule_p75, rule_correct
//                          the same for add_autotune_kernel at n = 2048, a tuning key nobody
//                          tuned: served by the choice tuned at 4096, as its rule says
//     hook_ratio, hook_p25, hook_p75, hook_correct
//                          the same for bench_kernels.tma_copy_tuned (@triton.autotune, two
//                          host descriptors whose config pre-hook sets their block shapes)
// bench/run.py runs it in fresh processes on the bundle launch_bench wrote.

#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <triton_embed/tensor_descriptor.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_common.h"
#include "testing/testing.h"

namespace te = triton_embed;
using bench::check;
using bench::Clock;
using bench::seconds_since;

namespace {

const Clock::time_point g_start = Clock::now();  // as early as static initialisation gets

double rss_mib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6) / 1024.0;
  }
  return -1;
}

int run(const char* bundle) {
  const bench::Driver d;
  const CUstream s = bench::primary_context_stream(d);
  constexpr int64_t kN = 4096;
  std::vector<float> hx(kN), hy(kN), ho(kN, -1.0f);
  for (int64_t i = 0; i < kN; ++i) {
    hx[i] = static_cast<float>(i) * 0.25f;
    hy[i] = 1.0f / static_cast<float>(i + 1);
  }
  CUdeviceptr x, y, o;
  check(d.mem_alloc(&x, kN * 4), "cuMemAlloc");
  check(d.mem_alloc(&y, kN * 4), "cuMemAlloc");
  check(d.mem_alloc(&o, kN * 4), "cuMemAlloc");
  check(d.memcpy_htod(x, hx.data(), kN * 4), "cuMemcpyHtoD");
  check(d.memcpy_htod(y, hy.data(), kN * 4), "cuMemcpyHtoD");
  const double context_s = seconds_since(g_start);
  const double rss_before = rss_mib();

  // What a deployed program does: load the bundle, name the kernel, launch.
  const auto t0 = Clock::now();
  te::load_bundle(bundle);
  const te::JitFunction add("pykernels.vector", "add_kernel");
  float* xp = reinterpret_cast<float*>(x);
  float* yp = reinterpret_cast<float*>(y);
  float* op = reinterpret_cast<float*>(o);
  const te::Stream ts = reinterpret_cast<te::Stream>(s);
  add.launch({kN / 1024}, ts, xp, yp, op, kN, 1024);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  const double first_launch_s = seconds_since(t0);
  const double rss_added = rss_mib() - rss_before;

  check(d.memcpy_dtoh(ho.data(), o, kN * 4), "cuMemcpyDtoH");
  bool correct = true;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = hx[i] + hy[i];
    correct = correct && std::memcmp(&ho[i], &want, 4) == 0;
  }

  // Launch overhead against raw cuLaunchKernelEx on the same cubin.
  const te::CompiledKernel& k = add.compile(xp, yp, op, kN, 1024);
  CUmodule m;
  check(d.module_load_data(&m, k.cubin().data()), "cuModuleLoadData");
  CUfunction fn;
  check(d.module_get_function(&fn, m, k.name().c_str()), "cuModuleGetFunction");
  int n = static_cast<int>(kN);
  uint64_t slots[6] = {x, y, o, 0, 0, 0};
  void* params[6];
  for (int i = 0; i < 6; ++i) params[i] = &slots[i];
  params[3] = &n;
  CUlaunchConfig cfg{};
  cfg.gridDimX = kN / 1024;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = static_cast<unsigned>(32 * k.num_warps());
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.sharedMemBytes = static_cast<unsigned>(k.shared());
  cfg.hStream = s;
  const bench::Pair pair = bench::paired(
      [&] { check(d.launch_kernel_ex(&cfg, fn, params, nullptr), "cuLaunchKernelEx"); },
      [&] { add.launch({kN / 1024}, ts, xp, yp, op, kN, 1024); }, s, d);
  // An autotuned kernel: the choice launch_bench's tuning made comes from the bundle too.
  const std::vector<float> zeros(kN, 0.0f);
  check(d.memcpy_htod(o, zeros.data(), kN * 4), "cuMemcpyHtoD");
  const te::JitFunction tuned("bench_kernels", "add_autotune_kernel");
  const auto tuned_grid = [](const te::Meta& m) { return te::Grid(te::cdiv(kN, m["BLOCK"])); };
  tuned.launch(tuned_grid, ts, xp, yp, op, kN);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  check(d.memcpy_dtoh(ho.data(), o, kN * 4), "cuMemcpyDtoH");
  bool tuned_correct = true;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = hx[i] + hy[i];
    tuned_correct = tuned_correct && std::memcmp(&ho[i], &want, 4) == 0;
  }
  const te::TuningResult* tr = tuned.tuning_result(xp, yp, op, kN);
  if (tr == nullptr) throw std::runtime_error("add_autotune_kernel: no choice in the bundle");
  int64_t block = 0;
  for (const auto& kv : tr->best.kwargs) {
    if (kv.first == "BLOCK") block = std::stoll(kv.second);
  }
  const te::CompiledKernel& kt = tuned.compile(xp, yp, op, kN);
  CUmodule mt;
  check(d.module_load_data(&mt, kt.cubin().data()), "cuModuleLoadData");
  CUfunction fnt;
  check(d.module_get_function(&fnt, mt, kt.name().c_str()), "cuModuleGetFunction");
  CUlaunchConfig cfgt = cfg;
  cfgt.gridDimX = static_cast<unsigned>(te::cdiv(kN, block));
  cfgt.blockDimX = static_cast<unsigned>(32 * kt.num_warps());
  cfgt.sharedMemBytes = static_cast<unsigned>(kt.shared());
  const bench::Pair tpair = bench::paired(
      [&] { check(d.launch_kernel_ex(&cfgt, fnt, params, nullptr), "cuLaunchKernelEx"); },
      [&] { tuned.launch(tuned_grid, ts, xp, yp, op, kN); }, s, d);

  // What nobody recorded, served by the bundle's explicit rules; after the first launch of a
  // key, a plain hit like any other. A less specialised entry: the bundle holds add_kernel with
  // BLOCK 256 only for n = 1000 (`n_elements: i32`), and the n = 4096 call (`i32 D`) takes it.
  constexpr int kFallbackBlock = 256;
  check(d.memcpy_htod(o, zeros.data(), kN * 4), "cuMemcpyHtoD");
  add.launch({kN / kFallbackBlock}, ts, xp, yp, op, kN, kFallbackBlock);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  check(d.memcpy_dtoh(ho.data(), o, kN * 4), "cuMemcpyDtoH");
  const te::CompiledKernel& kf = add.compile(xp, yp, op, kN, kFallbackBlock);
  // Served by the entry compiled without "divisible by 16" for n_elements.
  bool fallback_correct = kf.signature().find("n_elements: i32,") != std::string::npos;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = hx[i] + hy[i];
    fallback_correct = fallback_correct && std::memcmp(&ho[i], &want, 4) == 0;
  }
  CUmodule mf;
  check(d.module_load_data(&mf, kf.cubin().data()), "cuModuleLoadData");
  CUfunction fnf;
  check(d.module_get_function(&fnf, mf, kf.name().c_str()), "cuModuleGetFunction");
  CUlaunchConfig cfgf = cfg;
  cfgf.gridDimX = kN / kFallbackBlock;
  cfgf.blockDimX = static_cast<unsigned>(32 * kf.num_warps());
  cfgf.sharedMemBytes = static_cast<unsigned>(kf.shared());
  const bench::Pair fpair = bench::paired(
      [&] { check(d.launch_kernel_ex(&cfgf, fnf, params, nullptr), "cuLaunchKernelEx"); },
      [&] { add.launch({kN / kFallbackBlock}, ts, xp, yp, op, kN, kFallbackBlock); }, s, d);
  // A tuning rule: add_autotune_kernel was tuned at n = 4096 only, and its rule
  // (n_elements=nearest) gives n = 2048 that choice (and its `i32 D` entry).
  constexpr int64_t kRuleN = 2048;
  check(d.memcpy_htod(o, zeros.data(), kN * 4), "cuMemcpyHtoD");
  tuned.launch(tuned_grid, ts, xp, yp, op, kRuleN);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  check(d.memcpy_dtoh(ho.data(), o, kN * 4), "cuMemcpyDtoH");
  const te::TuningResult* rr = tuned.tuning_result(xp, yp, op, kRuleN);
  bool rule_correct = rr != nullptr && rr->best.str == tr->best.str;
  for (int64_t i = 0; i < kN; ++i) {
    const float want = i < kRuleN ? hx[i] + hy[i] : 0.0f;
    rule_correct = rule_correct && std::memcmp(&ho[i], &want, 4) == 0;
  }
  const te::CompiledKernel& kr = tuned.compile(xp, yp, op, kRuleN);
  CUmodule mr;
  check(d.module_load_data(&mr, kr.cubin().data()), "cuModuleLoadData");
  CUfunction fnr;
  check(d.module_get_function(&fnr, mr, kr.name().c_str()), "cuModuleGetFunction");
  int n_rule = static_cast<int>(kRuleN);
  void* rparams[6];
  for (int i = 0; i < 6; ++i) rparams[i] = &slots[i];
  rparams[3] = &n_rule;
  CUlaunchConfig cfgr = cfgt;
  cfgr.gridDimX = static_cast<unsigned>(te::cdiv(kRuleN, block));
  cfgr.blockDimX = static_cast<unsigned>(32 * kr.num_warps());
  cfgr.sharedMemBytes = static_cast<unsigned>(kr.shared());
  const bench::Pair rpair = bench::paired(
      [&] { check(d.launch_kernel_ex(&cfgr, fnr, rparams, nullptr), "cuLaunchKernelEx"); },
      [&] { tuned.launch(tuned_grid, ts, xp, yp, op, kRuleN); }, s, d);

  // An autotuned kernel whose config pre-hook sets its two descriptors' block shapes: the
  // choice, the hook (applied in C++) and the cubin come from the bundle. The raw floor takes
  // the maps tma_copy (same tile) encoded for descriptors of that block shape.
  constexpr int64_t kM = 256, kCols = 64;
  CUdeviceptr ts_src, ts_dst;
  check(d.mem_alloc(&ts_src, kM * kCols * 4), "cuMemAlloc");
  check(d.mem_alloc(&ts_dst, kM * kCols * 4), "cuMemAlloc");
  std::vector<float> hsrc(kM * kCols), hdst(kM * kCols);
  for (size_t i = 0; i < hsrc.size(); ++i) hsrc[i] = static_cast<float>(i % 1000) * 0.5f;
  check(d.memcpy_htod(ts_src, hsrc.data(), hsrc.size() * 4), "cuMemcpyHtoD");
  const te::TensorDescriptor placeholder_src(ts_src, te::DType::fp32, {kM, kCols}, {kCols, 1},
                                             {1, 1});
  const te::TensorDescriptor placeholder_dst(ts_dst, te::DType::fp32, {kM, kCols}, {kCols, 1},
                                             {1, 1});
  const te::JitFunction hooked("bench_kernels", "tma_copy_tuned");
  const auto hooked_grid = [](const te::Meta& m) { return te::Grid(te::cdiv(kM, m["BLOCK_M"])); };
  hooked.launch(hooked_grid, ts, placeholder_src, placeholder_dst, kM);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  check(d.memcpy_dtoh(hdst.data(), ts_dst, hdst.size() * 4), "cuMemcpyDtoH");
  const bool hook_correct = std::memcmp(hsrc.data(), hdst.data(), hsrc.size() * 4) == 0;
  const te::TensorDescriptor src64(ts_src, te::DType::fp32, {kM, kCols}, {kCols, 1}, {64, 64});
  const te::TensorDescriptor dst64(ts_dst, te::DType::fp32, {kM, kCols}, {kCols, 1}, {64, 64});
  const te::JitFunction copy("bench_kernels", "tma_copy");
  copy.launch({kM / 64}, ts, src64, dst64, 64, kCols);
  check(d.stream_synchronize(s), "cuStreamSynchronize");
  alignas(64) unsigned char map_src[128], map_dst[128];
  std::memcpy(map_src, te::detail::testing::tensor_map_bytes(src64), sizeof(map_src));
  std::memcpy(map_dst, te::detail::testing::tensor_map_bytes(dst64), sizeof(map_dst));
  const te::CompiledKernel& kh = hooked.compile(placeholder_src, placeholder_dst, kM);
  CUmodule mh;
  check(d.module_load_data(&mh, kh.cubin().data()), "cuModuleLoadData");
  CUfunction fnh;
  check(d.module_get_function(&fnh, mh, kh.name().c_str()), "cuModuleGetFunction");
  int32_t shape[2] = {static_cast<int32_t>(kM), static_cast<int32_t>(kCols)};
  int64_t strides[2] = {kCols, 1};
  int32_t n_rows = static_cast<int32_t>(kM);
  uint64_t scratch[2] = {0, 0};
  void* hparams[] = {map_src, &shape[0],   &shape[1],  &strides[0], &strides[1],
                     map_dst, &shape[0],   &shape[1],  &strides[0], &strides[1],
                     &n_rows, &scratch[0], &scratch[1]};
  CUlaunchConfig cfgh = cfg;
  cfgh.gridDimX = static_cast<unsigned>(kM / 64);
  cfgh.blockDimX = static_cast<unsigned>(32 * kh.num_warps());
  cfgh.sharedMemBytes = static_cast<unsigned>(kh.shared());
  const bench::Pair hpair = bench::paired(
      [&] { check(d.launch_kernel_ex(&cfgh, fnh, hparams, nullptr), "cuLaunchKernelEx"); },
      [&] { hooked.launch(hooked_grid, ts, placeholder_src, placeholder_dst, kM); }, s, d);
  std::printf(
      "{\"hook_raw_us\": %.4f, \"hook_ours_us\": %.4f, \"hook_ratio\": %.4f, \"hook_p25\": %.4f, "
      "\"hook_p75\": %.4f, \"hook_correct\": %s, ",
      hpair.raw_us, hpair.ours_us, hpair.ratio, hpair.p25, hpair.p75,
      hook_correct ? "true" : "false");
  std::printf(
      "\"fallback_raw_us\": %.4f, \"fallback_ours_us\": %.4f, \"fallback_ratio\": %.4f, "
      "\"fallback_p25\": %.4f, \"fallback_p75\": %.4f, \"fallback_correct\": %s, "
      "\"rule_raw_us\": %.4f, \"rule_ours_us\": %.4f, \"rule_ratio\": %.4f, "
      "\"rule_p25\": %.4f, \"rule_p75\": %.4f, \"rule_correct\": %s, ",
      fpair.raw_us, fpair.ours_us, fpair.ratio, fpair.p25, fpair.p75,
      fallback_correct ? "true" : "false", rpair.raw_us, rpair.ours_us, rpair.ratio, rpair.p25,
      rpair.p75, rule_correct ? "true" : "false");
  std::printf(
      "\"context_s\": %.6f, \"first_launch_s\": %.6f, \"rss_before_mib\": %.2f, "
      "\"rss_added_mib\": %.2f, \"raw_us\": %.4f, \"ours_us\": %.4f, \"ratio\": %.4f, "
      "\"p25\": %.4f, \"p75\": %.4f, \"correct\": %s, \"tuned_raw_us\": %.4f, "
      "\"tuned_ours_us\": %.4f, \"tuned_ratio\": %.4f, \"tuned_p25\": %.4f, \"tuned_p75\": %.4f, "
      "\"tuned_correct\": %s, \"tuned_best\": \"%s\"}\n",
      context_s, first_launch_s, rss_before, rss_added, pair.raw_us, pair.ours_us, pair.ratio,
      pair.p25, pair.p75, correct ? "true" : "false", tpair.raw_us, tpair.ours_us, tpair.ratio,
      tpair.p25, tpair.p75, tuned_correct ? "true" : "false", tr->best.str.c_str());
  correct = correct && tuned_correct && hook_correct && fallback_correct && rule_correct;
  return correct ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s BUNDLE\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
