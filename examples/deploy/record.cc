// Deploy for every shape, step 1 (README): run the block with the JIT, on the GPU, at two token
// counts, and record what it compiled and tuned into a bundle:
//
//   TRITON_EMBED_RECORD=block.teb build/examples/deploy_record
//
// The autotuned kernels declare their rule for tuning keys nobody tuned here: a program without
// Python then serves every M and N_CTX from the choices tuned at these two sizes
// (`triton-embed-bundle widen --rule` can give a rule to a bundle recorded without one).

#include <triton_embed/bundle.h>

#include <cstdio>
#include <exception>

#include "block.h"

int main() {
  try {
    triton_embed::set_tuning_rule("pykernels.matmul.matmul_kernel", "M=nearest");
    triton_embed::set_tuning_rule("pykernels.attention_tma.attn_fwd_kernel", "N_CTX=nearest");
    const deploy::Block block;
    bool ok = true;
    for (const auto [batch, seq] : {std::pair<int64_t, int64_t>{4, 256}, {1, 17}}) {
      const double err = deploy::error(block, deploy::input(batch, seq));
      const bool good = err < deploy::kTolerance;
      ok = ok && good;
      std::printf("recorded batch %lld x %lld tokens: error %.2e against ATen (%s)\n",
                  static_cast<long long>(batch), static_cast<long long>(seq), err,
                  good ? "ok" : "TOO LARGE");
    }
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
