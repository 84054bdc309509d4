#pragma once

/*! \file
 *  \brief Call a Python \c @triton.jit kernel from C++.
 *
 *  \code
 *  #include <triton_embed/jit.h>
 *
 *  triton_embed::JitFunction add("pykernels.vector", "add_kernel");  // imports the module once
 *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x_ptr, y_ptr, out_ptr, n, 1024);
 *  \endcode
 *
 *  The first launch with a new specialisation compiles the kernel in-process with Triton's
 *  own compiler (sharing Triton's disk cache with Python) and loads the cubin; every later
 *  launch with the same specialisation is plain C++: the arguments are specialised as Triton
 *  does, looked up in a lock-free cache by a fixed-size key and launched with
 *  \c cuLaunchKernelEx. No allocation, string formatting or Python on that path.
 */

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "triton_embed/args.h"
#include "triton_embed/autotune.h"
#include "triton_embed/detail/call.h"
#include "triton_embed/detail/export.h"
#include "triton_embed/detail/kernel_metadata.h"
#include "triton_embed/dtype.h"
#include "triton_embed/error.h"
#include "triton_embed/grid.h"
#include "triton_embed/named.h"
#include "triton_embed/options.h"
#include "triton_embed/runtime.h"
#include "triton_embed/stream.h"
#include "triton_embed/tensor_descriptor.h"

namespace triton_embed {

namespace detail {
struct CompiledKernelAccess;
}

/*! \brief One parameter of a kernel, read from the JITFunction's \c params. */
struct ParamInfo {
  std::string name;
  int index = 0;
  bool is_constexpr = false;
  bool do_not_specialize = false;
  bool do_not_specialize_on_alignment = false;
  bool is_const = false;  //!< pointer annotated \c const
  bool has_default = false;
  std::string annotation;    //!< Triton's normalised annotation: \c "i32", \c "*fp16", ...
  std::string default_repr;  //!< Python repr of the default value, when there is one
};

/*! \brief A kernel compiled for one specialisation and target. Owned by the cache; a
 *  reference stays valid for the life of the process. */
class TRITON_EMBED_API CompiledKernel {
 public:
  CompiledKernel(const CompiledKernel&) = delete;
  CompiledKernel& operator=(const CompiledKernel&) = delete;

  /*! \brief Triton's kernel hash: equal to \c CompiledKernel.hash in Python for the same
   *  arguments and options. */
  const std::string& hash() const noexcept { return meta_.hash; }
  const std::string& name() const noexcept { return meta_.name; }
  /*! \brief The target it was compiled for, e.g. \c "cuda:90". */
  const std::string& target() const noexcept { return target_; }
  /*! \brief The specialised signature, e.g. \c "add_kernel(x_ptr: *fp32 D, ..., BLOCK: constexpr =
   * 1024)". */
  const std::string& signature() const noexcept { return meta_.signature; }
  int num_warps() const noexcept { return meta_.num_warps; }
  int num_ctas() const noexcept { return meta_.num_ctas; }
  int num_stages() const noexcept { return meta_.num_stages; }
  /*! \brief Dynamic shared memory in bytes. */
  int shared() const noexcept { return meta_.shared; }
  size_t global_scratch_size() const noexcept { return meta_.global_scratch_size; }
  size_t global_scratch_align() const noexcept { return meta_.global_scratch_align; }
  size_t profile_scratch_size() const noexcept { return meta_.profile_scratch_size; }
  size_t profile_scratch_align() const noexcept { return meta_.profile_scratch_align; }
  bool launch_cooperative_grid() const noexcept { return meta_.launch_cooperative_grid; }
  bool launch_pdl() const noexcept { return meta_.launch_pdl; }
  /*! \brief Number of kernel parameters the launch passes (runtime arguments plus Triton's
   *  hidden scratch pointers). */
  int num_kernel_params() const noexcept { return meta_.num_kernel_params; }
  /*! \brief The cubin. */
  std::string_view cubin() const noexcept { return meta_.cubin; }
  /*! \brief The PTX, when Triton kept it. */
  std::string_view ptx() const noexcept { return meta_.ptx; }

 private:
  CompiledKernel() = default;
  friend struct detail::CompiledKernelAccess;
  detail::KernelMetadata meta_;
  std::string target_;
};

namespace detail {
struct InternedOptions;  // an interned Options (src/core/jit_internal.h)
struct JitAccess;        // the handle's state for the library's own layers (ditto)
/*! What launch() hands its arguments to, as plain data: the launch path (src/core/launch.cc).
 *  launch_call() is the general form: named arguments, and kernels wrapped in
 *  @triton.autotune / @triton.heuristics (launch() hands wrapped kernels to it). */
TRITON_EMBED_API void launch(KernelState* kernel, const InternedOptions* options,
                             const GridSpec& grid, Stream stream, const ArgValue* args,
                             size_t nargs);
TRITON_EMBED_API void launch_call(KernelState* kernel, const InternedOptions* options,
                                  const GridSpec& grid, Stream stream, const CallArgs& call);
}  // namespace detail

/*! \brief A handle to a \c @triton.jit kernel of a Python module.
 *
 *  Constructing one imports the module (once per process) and reads the kernel's
 *  parameters. Handles are cheap to copy, share one compile cache per kernel, and are safe to
 *  launch from many threads.
 */
class TRITON_EMBED_API JitFunction {
 public:
  /*! \brief Imports \p module and reads its \p name. Throws LookupError if either is missing
   *  (with the Python traceback), TypeError if it is not a \c @triton.jit function.
   *  Kernels wrapped in \c @triton.autotune and \c @triton.heuristics (in any order) launch
   *  as Python launches them: heuristics computed as Triton does (cached in C++ by the
   *  values they read), configurations tuned by the kernel's own Autotuner on a new key and
   *  looked up in C++ afterwards. */
  JitFunction(std::string_view module, std::string_view name);

  /*! \brief A handle to the same kernel (and cache) that compiles and launches with
   *  \p options, like Python's \c kernel[grid](..., num_warps=8). */
  JitFunction with_options(const Options& options) const;
  const Options& options() const noexcept;

  /*! \brief For a kernel wrapped in \c @triton.autotune or \c @triton.heuristics: a handle
   *  to the inner JITFunction, launched with explicit meta-parameters (no tuning, no
   *  heuristics). */
  JitFunction inner() const;
  /*! \brief \c "autotune", \c "heuristics" or \c "" (a plain JITFunction). */
  const std::string& wrapper() const noexcept;

  const std::string& module() const noexcept;
  const std::string& name() const noexcept;
  const std::vector<ParamInfo>& params() const noexcept;
  /*! \brief e.g. \c "add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: constexpr)". */
  std::string signature() const;

  /*! \brief Launches the kernel on \p grid and \p stream.
   *  \code
   *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
   *  \endcode
   *  Parameters with Python defaults may be left out at the end. Named arguments follow the
   *  positional ones (see named.h):
   *  \code
   *  using namespace triton_embed::literals;
   *  mm.launch(grid, stream, a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
   *            "ACTIVATION"_a = "leaky_relu");
   *  \endcode */
  template <class... Args>
  void launch(const Grid& grid, Stream stream, const Args&... args) const {
    detail::GridSpec spec;
    spec.fixed = grid;
    launch_spec(spec, stream, args...);
  }

  /*! \brief Launches with a grid computed by \p grid_fn from the call's arguments.
   *  \code
   *  add.launch([&](const triton_embed::Meta& m) { return triton_embed::Grid(triton_embed::cdiv(n,
   * m["BLOCK"])); }, stream, x, y, out, n, 1024); \endcode */
  template <
      class F, class... Args,
      std::enable_if_t<std::is_invocable_r_v<Grid, const std::remove_reference_t<F>&, const Meta&>,
                       int> = 0>
  void launch(F&& grid_fn, Stream stream, const Args&... args) const {
    detail::GridSpec spec;
    spec.fn = &detail::grid_thunk<F>;
    spec.ctx = static_cast<const void*>(&grid_fn);
    launch_spec(spec, stream, args...);
  }

  /*! \brief Compiles (or finds in the cache) the kernel for these arguments without
   *  launching it, like Python's \c kernel.warmup(...). Works without a GPU when a target
   *  is set (\c TRITON_EMBED_TARGET=cuda:90 or set_target()). The reference stays valid until
   *  unload_bundles() (so do those of prepare() and warmup(), and tuning_result()'s pointer).
   *  \code
   *  const triton_embed::CompiledKernel& k = add.compile(x, y, out, n, 1024);
   *  std::cout << k.hash() << "\n";
   *  \endcode */
  template <class... Args>
  const CompiledKernel& compile(const Args&... args) const {
    detail::CallStorage<Args...> s(args...);
    if constexpr (detail::CallStorage<Args...>::kNamed == 0) {
      return compile_args(s.vals, sizeof...(Args));
    } else {
      return compile_call(s.call(), nullptr);
    }
  }

  /*! \brief compile(), then load the kernel into the current CUDA context: after it, a
   *  launch with these arguments runs no Python and loads nothing, so it can be captured in
   *  a CUDA graph. An autotuned kernel is tuned here (on the GPU, launching on \p grid as
   *  Triton's benchmark does) if its key is new; tuning during a stream capture raises
   *  NotSupportedError. \p grid is a Grid or a grid callable, as for launch(). A graph that
   *  captured a launch keeps its kernel loaded for as long as the graph (or an executable graph
   *  made from it) exists, also after unload_bundles().
   *  \code
   *  mm.prepare(grid, a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn);
   *  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
   *  mm.launch(grid, stream, a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn);
   *  \endcode */
  template <class... Args>
  const CompiledKernel& prepare(const Grid& grid, const Args&... args) const {
    detail::GridSpec spec;
    spec.fixed = grid;
    detail::CallStorage<Args...> s(args...);
    return compile_call(s.call(), &spec);
  }
  template <
      class F, class... Args,
      std::enable_if_t<std::is_invocable_r_v<Grid, const std::remove_reference_t<F>&, const Meta&>,
                       int> = 0>
  const CompiledKernel& prepare(F&& grid_fn, const Args&... args) const {
    detail::GridSpec spec;
    spec.fn = &detail::grid_thunk<F>;
    spec.ctx = static_cast<const void*>(&grid_fn);
    detail::CallStorage<Args...> s(args...);
    return compile_call(s.call(), &spec);
  }

  /*! \brief Compiles without launching, as Python's \c kernel.warmup(...): for a kernel
   *  wrapped in \c @triton.autotune, every configuration left after pruning (no GPU needed
   *  with an explicit target); otherwise the one kernel compile() gives. */
  template <class... Args>
  std::vector<const CompiledKernel*> warmup(const Args&... args) const {
    detail::CallStorage<Args...> s(args...);
    return warmup_call(s.call());
  }

  /*! \brief For an autotuned kernel: what tuning chose for the key of these arguments
   *  (Python's \c best_config and \c configs_timings), or nullptr when that key has not been
   *  tuned in this process yet. Never tunes. */
  template <class... Args>
  const TuningResult* tuning_result(const Args&... args) const {
    detail::CallStorage<Args...> s(args...);
    return tuning_result_call(s.call());
  }

 private:
  friend struct detail::JitAccess;
  friend struct ArgTraits<JitFunction>;
  JitFunction(detail::KernelState* state, const detail::InternedOptions* options) noexcept
      : state_(state), options_(options) {}
  // What the templates above hand their arguments to (src/core/jit_function.cc).
  const CompiledKernel& compile_args(const ArgValue* args, size_t nargs) const;
  const CompiledKernel& compile_call(const detail::CallArgs& call,
                                     const detail::GridSpec* prepare_grid) const;
  std::vector<const CompiledKernel*> warmup_call(const detail::CallArgs& call) const;
  const TuningResult* tuning_result_call(const detail::CallArgs& call) const;
  template <class... Args>
  void launch_spec(const detail::GridSpec& spec, Stream stream, const Args&... args) const {
    detail::CallStorage<Args...> s(args...);
    if constexpr (detail::CallStorage<Args...>::kNamed == 0) {
      detail::launch(state_, options_, spec, stream, s.vals, sizeof...(Args));
    } else {
      detail::launch_call(state_, options_, spec, stream, s.call());
    }
  }
  detail::KernelState* state_;
  const detail::InternedOptions* options_;
};

/*! \brief Another \c @triton.jit function passed as an argument (a constexpr, as in Python). */
template <>
struct ArgTraits<JitFunction> {
  static constexpr size_t kNested = 0;
  static void fill(const JitFunction& f, ArgValue& out, ArgValue*&) {
    out = ArgValue{};
    out.kind = ArgKind::kJitFunction;
    out.ptr = f.state_;
  }
};

}  // namespace triton_embed
