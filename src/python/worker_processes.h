#pragma once

// Compile worker processes: Python processes that compile calls with Triton into Triton's disk
// cache while this process does other work: it imports what Triton's benchmark needs and
// benchmarks a tuning's configs one at a time as they land, or compiles each call of a batch
// from that cache (glue/worker.py says what a worker runs and the frames it reads and writes).
//
// Threads of this process compile in parallel only where Triton's code generation lets go of
// the GIL, and a compile on a thread takes the GIL a benchmark's launches need; processes do
// neither. A pool starts its workers on first use (this interpreter's executable and
// environment, this process's sys.path with each job), up to compile_workers() of them, and
// closes those idle for idle_seconds(). One thread of the pool writes jobs to the workers
// and reads their results; it never takes the GIL. A job a worker cannot take or fails is
// compiled in this process as before: the result is Triton's own either way.

#include <cstddef>
#include <memory>
#include <string>

#include "base/internal_api.h"
#include "core/kernel_source.h"

namespace triton_embed::detail::py {

// Whether compiles go to worker processes now: more than one compile worker, the variable
// TRITON_EMBED_COMPILE_PROCESSES is not "0", this interpreter's executable is known, and the
// pool's workers have not failed to start. GIL not needed.
bool worker_processes_enabled();

// Hands `job` (glue.worker_job's payload) to the pool. The result finishes once a worker
// compiled it into Triton's cache, or could not. GIL held or not.
std::shared_ptr<PendingCompile> submit_to_workers(std::string job);

// What the pool has done in this process (tests, progress).
struct WorkerStats {
  long started = 0;         // worker processes started
  long running = 0;         // worker processes alive now
  long compiled = 0;        // jobs compiled by a worker
  long failed = 0;          // jobs a worker could not compile (or ended while compiling)
  std::string unavailable;  // why the pool does not start workers, if it does not
};
TE_INTERNAL_API WorkerStats worker_stats();

// How long a worker may stay idle before the pool closes it (default 30 s).
TE_INTERNAL_API void set_idle_seconds(double seconds);

}  // namespace triton_embed::detail::py
