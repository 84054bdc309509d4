#pragma once

/*! \file
 *  \brief What \c @triton.autotune chose, and how to watch it tune.
 *
 *  Kernels wrapped in \c @triton.autotune and \c @triton.heuristics launch from C++ exactly as
 *  Python launches them (see JitFunction::launch). A tuning miss is handed to the kernel's own
 *  Triton \c Autotuner (same key, pruning, hooks, benchmarking, disk cache); after that the
 *  launch is C++ only.
 *  \code
 *  static const triton_embed::JitFunction mm("pykernels.matmul", "matmul_kernel");
 *  mm.prepare(grid, a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn, "ACTIVATION"_a = "");  // tunes
 *  const triton_embed::TuningResult* r = mm.tuning_result(a, b, c, M, N, K, ...);
 *  std::cout << r->best.str << "\n";
 *  \endcode
 */

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "triton_embed/detail/export.h"

namespace triton_embed {

/*! \brief One \c triton.Config, as Python's \c str(config) and its fields. */
struct TunedConfig {
  std::string str;  //!< \c str(config), e.g. \c "BLOCK: 128, num_warps: 4, num_ctas: 1, num_stages:
                    //!< 3, maxnreg: None"
  std::vector<std::pair<std::string, std::string>> kwargs;  //!< meta-parameter name, \c repr(value)
  int num_warps = 4;
  int num_stages = 3;
  int num_ctas = 1;
  int maxnreg = 0;  //!< 0 when None
  bool has_pre_hook = false;
};

/*! \brief One benchmarked configuration: Triton's \c configs_timings entry (ms; the median,
 *  20th and 80th percentiles with Triton's default benchmarker). */
struct ConfigTiming {
  TunedConfig config;
  std::vector<double> ms;
};

/*! \brief The result of tuning one key, as Python's \c Autotuner records it. */
struct TuningResult {
  std::string key;   //!< \c str() of Triton's tuning key tuple
  TunedConfig best;  //!< Python's \c best_config for this key
  /*! The configs benchmarked for this key (empty when the choice came from a cache without
   *  timings, or when the kernel has a single config). */
  std::vector<ConfigTiming> timings;
  bool from_cache = false;  //!< the choice came from Triton's in-memory or disk cache
  /*! time spent tuning, from the benchmark loop's start to the choice (Triton's \c bench_time) */
  double seconds = 0;
  /*! how long compiling the configs took (in parallel: set_compile_workers). On compile worker
   *  processes (the default) the compiles run while the first configs are benchmarked, and may
   *  have begun before \c seconds did; on threads they come first. */
  double compile_seconds = 0;
  double benchmark_seconds = 0;  //!< of \c seconds, the time in Triton's benchmarks
};

/*! \brief Progress of a tuning run, reported after each configuration. */
struct TuningProgress {
  std::string_view kernel;  //!< "module.kernel"
  std::string_view key;     //!< \c str() of the tuning key
  size_t done = 0;          //!< configurations benchmarked so far
  size_t total = 0;         //!< configurations to benchmark (after pruning)
  std::string_view best;    //!< \c str() of the best configuration so far
  double best_ms = 0;       //!< its time (median, ms)
  double elapsed_s = 0;     //!< seconds since this key's benchmark loop started
  /*! how long compiling the configs took so far (in parallel; on worker processes while the
   *  benchmarks run, so compile_s + benchmark_s may exceed elapsed_s) */
  double compile_s = 0;
  double benchmark_s = 0;  //!< time in Triton's benchmarks so far (one config at a time)
  size_t workers = 1;      //!< compile workers that compiled them (set_compile_workers)
  bool processes = false;  //!< they were worker processes (else threads of this process)
};

/*! \brief Called after each configuration of every tuning run, on the tuning thread (without
 *  the GIL; the device's tuning lock is held, so do not launch or tune from it). Pass an empty
 * function to remove it. Setting \c TRITON_EMBED_PRINT_AUTOTUNING=1 prints the same progress to
 * stderr; Triton's own \c TRITON_PRINT_AUTOTUNING works as in Python. Otherwise tuning is silent.
 *  \code
 *  triton_embed::set_tuning_callback([](const triton_embed::TuningProgress& p) {
 *    std::cerr << p.kernel << " " << p.done << "/" << p.total << " best " << p.best << "\n";
 *  });
 *  \endcode */
TRITON_EMBED_API void set_tuning_callback(std::function<void(const TuningProgress&)> callback);

/*! \brief Starts, on a background thread, what the first tuning of this process would do before
 *  its first benchmark: importing torch and Triton's benchmark into the embedded interpreter and
 *  starting Triton's CUDA driver (seconds, mostly torch's import). Returns at once, or with
 *  \p wait once that has ended (a server that says it is ready only then); a later call starts
 *  nothing again (with \p wait it waits for the first). A program that will tune
 *  (triton-embed-bundle tune does) calls it early, so that its first tuning does not wait for
 *  that; a failure there is left to the tuning, which meets it and raises it. Needs the JIT
 *  layer (libtriton_embed.so).
 *  \code
 *  triton_embed::prepare_tuning();       // at start-up; the first tuned launch comes later
 *  triton_embed::prepare_tuning(true);   // or: returns once torch is imported
 *  \endcode */
TRITON_EMBED_API void prepare_tuning(bool wait = false);

}  // namespace triton_embed
