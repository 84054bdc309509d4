#pragma once

/*! \file
 *  \brief The embedded Python runtime and the compile target.
 *
 *  Nothing here has to be called: the first JitFunction starts (or joins) Python with the
 *  defaults. Call initialize() first to choose the interpreter or add module directories.
 *  The Python parts need the JIT layer (\c triton_embed::triton_embed); a program linked to
 *  \c triton_embed::runtime only runs no Python (see each function).
 *
 *  Environment variables:
 *  - \c TRITON_EMBED_PYTHON: the python executable whose environment (e.g. a venv) a plain
 *    C++ program runs; default: the one the library was configured with.
 *  - \c TRITON_EMBED_PYTHONPATH: extra directories for \c sys.path, separated by ':'.
 *  - \c TRITON_EMBED_TARGET: compile for this target instead of the current GPU's, e.g.
 *    \c cuda:90 (this is how kernels compile on a machine without a GPU).
 *  \code
 *  triton_embed::RuntimeOptions opts;
 *  opts.python_paths.push_back("/opt/my_kernels");
 *  triton_embed::initialize(opts);
 *  \endcode
 */

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "triton_embed/detail/export.h"

namespace triton_embed {

/*! \brief A Triton compile target, e.g. \c cuda:90 (backend, architecture, warp size). */
struct TRITON_EMBED_API Target {
  std::string backend = "cuda";
  int arch = 0;
  int warp_size = 32;

  /*! \brief Parses \c "cuda:90", \c "cuda:90:32", \c "sm_90", \c "sm90" or \c "90";
   *  throws ValueError otherwise. */
  static Target parse(std::string_view text);
  /*! \brief \c "cuda:90". */
  std::string str() const;
  bool operator==(const Target& o) const noexcept {
    return backend == o.backend && arch == o.arch && warp_size == o.warp_size;
  }
};

/*! \brief How to start the runtime. */
struct RuntimeOptions {
  /*! Python executable of the environment to run (a venv's bin/python works). Empty: the
   *  \c TRITON_EMBED_PYTHON variable, else the configured one. Ignored when the library is
   *  loaded into a running Python process: it joins that interpreter. */
  std::string python;
  /*! Directories put at the front of \c sys.path (after \c TRITON_EMBED_PYTHONPATH). */
  std::vector<std::string> python_paths;
  /*! Compile for this target instead of the current GPU's (overrides
   *  \c TRITON_EMBED_TARGET). */
  std::optional<Target> target;
};

/*! \brief Starts or joins the Python interpreter, puts \c pykernels/ and the configured
 *  directories on \c sys.path and imports Triton. Idempotent: later calls only add paths and
 *  set the target. Throws PythonError if the interpreter cannot start.
 *
 *  In a program linked to \c triton_embed::runtime only (no JIT layer) it starts no Python:
 *  it sets \c options.target if given, and throws NotSupportedError, applying nothing, when
 *  \c options.python or \c options.python_paths is set (they would be silently lost). The
 *  \c TRITON_EMBED_PYTHON* variables are not read there. */
TRITON_EMBED_API void initialize(const RuntimeOptions& options = {});

/*! \brief Puts \p dir at the front of \c sys.path (starts the runtime if needed). Throws
 *  NotSupportedError in a program linked to \c triton_embed::runtime only. */
TRITON_EMBED_API void add_python_path(std::string_view dir);

/*! \brief Compile for \p target from now on (std::nullopt: the current GPU's again). */
TRITON_EMBED_API void set_target(std::optional<Target> target);

/*! \brief The explicit target, if one is set (by set_target, RuntimeOptions::target or
 *  \c TRITON_EMBED_TARGET). */
TRITON_EMBED_API std::optional<Target> explicit_target();

/*! \brief What the runtime is running on. */
struct RuntimeInfo {
  /*! true: the JIT layer (triton_embed::triton_embed: Python and Triton's compiler) is linked;
   *  false in a program linked to triton_embed::runtime only, which has no interpreter (every
   *  other field is then empty) */
  bool jit = false;
  bool embedded = false;       //!< true: we started the interpreter; false: joined one
  std::string python_version;  //!< e.g. "3.12.3"
  std::string python_executable;
  std::string triton_version;             //!< e.g. "3.6.0"
  std::vector<std::string> python_paths;  //!< directories this library added to sys.path
};

/*! \brief Starts the runtime if needed and describes it. In a program linked to
 *  \c triton_embed::runtime only: \c jit is false and every other field empty. */
TRITON_EMBED_API RuntimeInfo runtime_info();

/*! \brief True when a CUDA driver and at least one device are usable (never throws). */
TRITON_EMBED_API bool cuda_available() noexcept;

/*! \brief How a program with the JIT layer computes a \c @triton.heuristics value that it has
 *  not memoised yet (a heuristic runs once per distinct set of values it reads). */
enum class HeuristicEvaluation : uint8_t {
  /*! Every heuristic runs in Python (the default). */
  kPython = 0,
  /*! A heuristic the JIT translated into an expression (the forms the README's "Kernel
   *  bundles" section lists; bundles keep the same expression) is evaluated in C++, with
   *  Python's results, and Python is not called. A heuristic that did not translate runs in
   *  Python, and so does a call the expression cannot compute (where Python raises, or a value
   *  beyond what the evaluator models): Python then gives its own result or exception. Global
   *  constants an expression reads are taken when the kernel is loaded. */
  kExpressions = 1,
};

/*! \brief Chooses how heuristics are computed from now on (see HeuristicEvaluation); values
 *  already memoised stay. \c TRITON_EMBED_HEURISTICS=expressions (or \c python) chooses the
 *  same when this is not called; another value raises ValueError on the first heuristic that
 *  runs. A program without the JIT layer always evaluates expressions (it has no Python).
 *  \code
 *  triton_embed::set_heuristic_evaluation(triton_embed::HeuristicEvaluation::kExpressions);
 *  \endcode */
TRITON_EMBED_API void set_heuristic_evaluation(HeuristicEvaluation how);

/*! \brief Widens what this process records (write_bundle(), \c TRITON_EMBED_RECORD), as
 *  \c triton-embed-bundle \c widen does: each entry is written with its twin compiled with
 *  every runtime integer unspecialised (no "divisible by 16", not the constant 1), so that a
 *  program without Python serves every value of those integers from the bundle. Off by
 *  default; \c TRITON_EMBED_RECORD_WIDEN=1 turns it on too. The twins are compiled when the
 *  bundle is written (by write_bundle(), or before the interpreter closes at exit), never on a
 *  launch: one Triton compile per entry with an integer specialisation (Triton's disk cache
 *  keeps them for the next run). While it compiles it sets the explicit target (set_target) to
 *  each entry's: write a widened bundle when no other thread launches (at exit, that holds).
 *  Needs the JIT layer: write_bundle() throws NotSupportedError without it, and what the
 *  widening throws; at exit the recording is then written as it was recorded, saying why on
 *  stderr. What it cannot add (and why) is said on stderr. */
TRITON_EMBED_API void set_record_widening(bool on);

/*! \brief How many threads compile at once when there is more than one kernel to compile: the
 *  configs of one tuning (compiled in parallel, then benchmarked one at a time, as Triton's
 *  Autotuner benchmarks them), \c warmup() of an autotuned kernel (every config), and
 *  \c triton-embed-bundle \c build and \c tune. \p workers = 1 compiles one at a time, as
 *  Triton does; 0 goes back to the default: \c TRITON_EMBED_COMPILE_WORKERS when it is set,
 *  else the number of CPUs this process may run on (its affinity). Takes effect for the next
 *  batch of compiles. */
TRITON_EMBED_API void set_compile_workers(size_t workers);

/*! \brief The number of threads that compile at once (set_compile_workers). */
TRITON_EMBED_API size_t compile_workers();

}  // namespace triton_embed
