#pragma once

// The compile workers: threads that run independent compile jobs at once (the configs of a
// tuning, of warmup(), the calls and targets of triton-embed-bundle build and tune). How many
// run at once is a setting (set_compile_workers, TRITON_EMBED_COMPILE_WORKERS, else the CPUs
// this process may run on). Compiling is Triton's work: its code generation holds the GIL,
// its MLIR passes, LLVM and ptxas do not, so threads of one process compile in parallel.

#include <cstddef>
#include <functional>

#include "base/internal_api.h"

namespace triton_embed::detail {

// The number of threads that compile at once (at least 1).
TE_INTERNAL_API size_t compile_workers();

// Runs job(0) .. job(n - 1), each once, on this thread and up to compile_workers() - 1 others,
// and returns when all have run. A job runs with this thread's compile target (JobTarget,
// current_target_code) and, when it has one, its current CUDA context. This thread releases
// the GIL while it runs and waits (jobs take it as they need it). Jobs may run jobs of their
// own (they share the same workers). When jobs throw, every job still runs, and the error of
// the first of them by index is rethrown: the error a loop over them would have thrown first.
TE_INTERNAL_API void run_jobs(size_t n, const std::function<void(size_t)>& job);

}  // namespace triton_embed::detail
