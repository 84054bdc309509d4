// Tuning keys nobody tuned, on the GPU (issue 21), as two processes. Built twice from this
// file:
//   test_bundle_rules_gpu_tune (TE_RULES_TUNE): runs `triton-embed-bundle tune` on the GPU for
//     pykernels.matmul's autotuned matmul_kernel at M = 16, 256, 4096 (N = 256, K = 128, one
//     calls-file line with a value list) with the rule M=nearest, into gpu_rules.teb;
//   test_bundle_rules_gpu_replay (triton_embed::runtime only: no Python) loads it
//     (TRITON_EMBED_BUNDLE) and launches M = 1, 7, 100, 300, 1000, 5000, 9000: each result
//     equals the host's product, and each launch's config is the one tuned at the M the rule
//     names (said once per key), M = 16, 256 and 4096 launching their own.
// Both skip without a GPU. CTest: bundle_rules_gpu_tune, then bundle_rules_gpu_replay.

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <triton_embed/bundle.h>
#include <triton_embed/jit.h>
#include <triton_embed/named.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "device_buffer.h"

namespace te = triton_embed;
using namespace triton_embed::literals;

namespace {

constexpr int kN = 256, kK = 128;

std::string dir() {
  const char* d = std::getenv("TE_BUNDLE_DIR");
  return std::string(d != nullptr ? d : "/tmp") + "/gpu_rules";
}

bool have_gpu() {
  int n = 0;
  return te::cuda_available() && cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

class BundleRulesGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_gpu()) GTEST_SKIP() << "no GPU";
  }
};

#ifdef TE_RULES_TUNE

TEST_F(BundleRulesGpu, Tune) {
  ASSERT_EQ(std::system(("mkdir -p " + dir()).c_str()), 0);
  // c = a @ b: a M x K, b K x N, c M x N, row-major (strides K, 1, N, 1, N, 1).
  std::ofstream(dir() + "/matmul.calls")
      << "#rule pykernels.matmul:matmul_kernel M=nearest\n"
      << "#grid pykernels.matmul:matmul_kernel cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)\n"
      << "pykernels.matmul:matmul_kernel *fp16 *fp16 *fp32 16,256,4096 " << kN << " " << kK << " "
      << kK << " 1 " << kN << " 1 " << kN << " 1 ACTIVATION=''\n";
  const std::string cmd = std::string(TE_BUNDLE_TOOL) + " tune -o " + dir() +
                          "/gpu_rules.teb --buffer-mib 16 " + dir() + "/matmul.calls > " + dir() +
                          "/tune.out 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream f(dir() + "/tune.out");
  const std::string out((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  ASSERT_EQ(rc, 0) << cmd << "\n" << out;
  EXPECT_NE(out.find("tune: pykernels.matmul.matmul_kernel key (4096, 256, 128, "),
            std::string::npos)
      << out;  // the progress
  EXPECT_NE(out.find("wrote " + dir() + "/gpu_rules.teb: 1 kernel, "), std::string::npos) << out;
}

#else  // the replay: runtime only

TEST_F(BundleRulesGpu, KeysNobodyTunedLaunchTheRulesChoice) {
  std::vector<te::BundleNotice> notices;
  te::set_bundle_notice_callback([&](const te::BundleNotice& n) {
    if (n.tuning_rule) notices.push_back(n);
  });
  const te::JitFunction mm("pykernels.matmul", "matmul_kernel");
  // The tuned choices, from the bundle (exact keys).
  std::vector<std::pair<int, std::string> > tuned;
  for (int m : {16, 256, 4096}) {
    te_test::DeviceBuffer<uint16_t> a(static_cast<size_t>(m) * kK), b(kK * kN);
    te_test::DeviceBuffer<float> c(static_cast<size_t>(m) * kN);
    const te::Pointer pa(a.ptr, te::DType::fp16), pb(b.ptr, te::DType::fp16);
    const te::TuningResult* r =
        mm.tuning_result(pa, pb, c.ptr, m, kN, kK, kK, 1, kN, 1, kN, 1, "ACTIVATION"_a = "");
    ASSERT_NE(r, nullptr) << m;
    tuned.emplace_back(m, r->best.str);
  }
  EXPECT_TRUE(notices.empty());
  // M=nearest on a log2 scale, ties to the larger: 1, 7 -> 16; 100, 300, 1000 -> 256 (1000 is
  // nearer 256 than 4096: 1000^2 < 256 * 4096); 5000, 9000 -> 4096.
  const std::pair<int, int> cases[] = {{1, 16},     {7, 16},      {100, 256},   {300, 256},
                                       {1000, 256}, {5000, 4096}, {9000, 4096}, {16, 16},
                                       {256, 256},  {4096, 4096}};
  for (auto [m, served] : cases) {
    SCOPED_TRACE("M=" + std::to_string(m));
    const te_test::IntMatmul ops(m, kN, kK, 0);
    te_test::DeviceBuffer<uint16_t> a(ops.ha.size()), b(ops.hb.size());
    te_test::DeviceBuffer<float> c(static_cast<size_t>(m) * kN);
    a.upload(ops.ha);
    b.upload(ops.hb);
    const te::Pointer pa(a.ptr, te::DType::fp16), pb(b.ptr, te::DType::fp16);
    const auto grid = [&](const te::Meta& meta) {
      return te::Grid(te::cdiv(m, meta["BLOCK_M"]) * te::cdiv(kN, meta["BLOCK_N"]));
    };
    const size_t before = notices.size();
    for (int round = 0; round < 2; ++round) {  // the second launch is a plain hit: no notice
      mm.launch(grid, nullptr, pa, pb, c.ptr, m, kN, kK, kK, 1, kN, 1, kN, 1, "ACTIVATION"_a = "");
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
    const std::string bad = ops.mismatch(c.download());
    ASSERT_TRUE(bad.empty()) << bad;
    const te::TuningResult* r =
        mm.tuning_result(pa, pb, c.ptr, m, kN, kK, kK, 1, kN, 1, kN, 1, "ACTIVATION"_a = "");
    ASSERT_NE(r, nullptr);
    std::string want_best;
    for (const auto& [tm, best] : tuned) {
      if (tm == served) want_best = best;
    }
    EXPECT_EQ(r->best.str, want_best);
    if (m == served) {
      EXPECT_EQ(notices.size(), before);
    } else {
      ASSERT_EQ(notices.size(), before + 1);
      EXPECT_EQ(notices.back().asked, "M=" + std::to_string(m) + ", N=256, K=128");
      EXPECT_EQ(notices.back().served, "M=" + std::to_string(served) + ", N=256, K=128");
      EXPECT_EQ(notices.back().rule, "M=nearest");
    }
  }
  te::set_bundle_notice_callback(nullptr);
}

#endif

}  // namespace
