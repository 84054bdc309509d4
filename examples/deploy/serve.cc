// Deploy for every shape, step 4 (README): the block linked to the runtime only (no Python, no
// Triton), launching from the widened bundle embedded in this executable
// (triton_embed_embed_bundle, step 3), at token counts from 1 to 4096 (every count up to 64,
// then a dense sample, each at the largest batch of 8, 4, 2 or 1 that divides it). Each output
// is checked against ATen; the program says how many calls the bundle served and exits with 0
// when it served them all, within tolerance.
//
//   build/examples/deploy_serve [--all]     (--all: every token count from 1 to 4096)

#include <triton_embed/bundle.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <set>
#include <vector>

#include "block.h"

int main(int argc, char** argv) {
  const bool all = argc > 1 && std::strcmp(argv[1], "--all") == 0;
  std::set<int64_t> counts;
  for (int64_t t = 1; t <= deploy::kMaxSeq; ++t) {
    if (all || t <= 64 || t % 37 == 0 || t % 256 <= 1 || t % 256 == 255) counts.insert(t);
  }
  counts.insert(deploy::kMaxSeq);
  size_t rules = 0, generic = 0;
  triton_embed::set_bundle_notice_callback([&](const triton_embed::BundleNotice& n) {
    rules += n.tuning_rule ? 1 : 0;
    generic += n.less_specialised ? 1 : 0;
  });
  try {
    const deploy::Block block;
    size_t served = 0, failed = 0;
    double worst = 0;
    for (int64_t tokens : counts) {
      int64_t batch = 8;
      while (tokens % batch != 0) batch /= 2;
      const int64_t seq = tokens / batch;
      try {
        const double err = deploy::error(block, deploy::input(batch, seq));
        worst = std::max(worst, err);
        if (err < deploy::kTolerance) {
          ++served;
          continue;
        }
        std::printf("batch %lld x %lld tokens: error %.2e against ATen\n",
                    static_cast<long long>(batch), static_cast<long long>(seq), err);
      } catch (const triton_embed::Error& e) {
        std::printf("batch %lld x %lld tokens: %s\n", static_cast<long long>(batch),
                    static_cast<long long>(seq), e.what());
      }
      ++failed;
    }
    std::printf(
        "served %zu of %zu token counts from 1 to %lld without Python (largest error %.2e "
        "against ATen; %zu tuning keys served by a rule, %zu specialisations by an entry with "
        "fewer assumptions)\n",
        served, counts.size(), static_cast<long long>(deploy::kMaxSeq), worst, rules, generic);
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
