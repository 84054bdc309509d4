#pragma once

/*! \file
 *  \brief Kernel bundles: compiled kernels saved to a file, so that a program launches them
 *  with no compiling (and, linked to \c triton_embed::runtime only, with no Python at all).
 *
 *  \code
 *  // Development (JIT): run once, then save what was compiled.
 *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
 *  triton_embed::write_bundle("kernels.teb");       // or TRITON_EMBED_RECORD=kernels.teb
 *
 *  // Deployment: the same code, with the bundle loaded first.
 *  triton_embed::load_bundle("kernels.teb");        // or TRITON_EMBED_BUNDLE=kernels.teb
 *  add.launch({triton_embed::cdiv(n, 1024)}, stream, x, y, out, n, 1024);
 *  \endcode
 *
 *  A launch that misses the in-memory cache looks in the loaded bundles before compiling: an
 *  entry of the same kernel (module, name and, where the JIT layer read the kernel's source,
 *  the same source hash), target, options and specialisation is used as Triton's compile
 *  result would be. Without the JIT layer a specialisation no bundle holds raises
 *  NotInBundleError, which names the kernel, what was asked for and what the bundles hold.
 *
 *  Kernels wrapped in \c @triton.autotune or \c @triton.heuristics are recorded with their
 *  decisions: each heuristic's result and each tuned choice (per target) the process saw, so
 *  a program without Python launches them for those keys (NotInBundleError for others). The
 *  GPU's architecture picks the entry; PTX kept for an older plain \c sm_XY target serves a
 *  newer GPU through the driver, said on stderr (\c TRITON_EMBED_BUNDLE_PTX=0 refuses it).
 *
 *  Without the JIT layer, a specialisation no bundle holds exactly is served by the most
 *  specialised entry compiled with fewer assumptions (no "divisible by 16", no 16-byte
 *  alignment, no constexpr 1 for an integer argument 1), said once per kernel and key on
 *  stderr or to set_bundle_notice_callback() (\c TRITON_EMBED_BUNDLE_STRICT=1 refuses it):
 *  docs/bundle_format.md, "Less specialised entries".
 *
 *  Tuning keys nobody tuned follow the kernel's rule, declared where the bundle is made
 *  (set_tuning_rule(), a calls file's \c #rule line, \c triton-embed-bundle \c --rule): in a
 *  program without the JIT layer, a launch whose tuning key no bundle records takes the
 *  choice tuned for the recorded key the rule names, said once per key like the entries
 *  above (docs/bundle_format.md, "Tuning keys nobody tuned").
 */

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "triton_embed/detail/export.h"
#include "triton_embed/runtime.h"  // the settings: set_heuristic_evaluation, set_record_widening

namespace triton_embed {

/*! \brief Loads the bundle file \p path: its kernels serve launches from now on. The file is
 *  checked whole before anything of it is used (its container, then every field and payload:
 *  docs/bundle_format.md, "What the loader guarantees"); BundleError says what is wrong with it
 *  (missing, truncated, corrupt, not a bundle, a newer format). Bundles stay loaded until the
 *  process ends or unload_bundles(). \c TRITON_EMBED_BUNDLE (paths separated by ':') loads
 *  files the same way on the first kernel load. */
TRITON_EMBED_API void load_bundle(const std::string& path);

/*! \brief Loads a bundle held in memory, e.g. embedded in the executable; \p data must stay
 *  valid until the process ends (it is not copied). \p name says where it came from in
 *  errors. The CMake function \c triton_embed_embed_bundle(target file) embeds a bundle file
 *  and calls this before \c main(). */
TRITON_EMBED_API void load_bundle_from_memory(const void* data, size_t size, std::string_view name);

/*! \brief Unloads every loaded bundle (those of load_bundle(), load_bundle_from_memory(),
 *  embedded ones and \c TRITON_EMBED_BUNDLE's, which is not read afterwards, even when this
 *  runs before the first kernel load), and forgets what every kernel resolved: its cache
 *  entries, heuristic results and tuned choices, whichever source they came from. Each
 *  kernel's next launch asks again: the bundles loaded after this call, then, with the JIT
 *  layer, Triton (whose disk cache keeps compiled kernels, and whose autotuner keeps the
 *  configs it tuned). write_bundle() records only what is resolved after this call.
 *
 *  A kernel keeps what its first load gave it: its parameters, its layers (a heuristic's
 *  expression) and, in a program without the JIT, the hash of its source. A bundle loaded
 *  later serves it only with entries of that same kernel source (a bundle of a changed kernel
 *  serves nothing for it: NotInBundleError). Nothing resolved before or while this runs is
 *  kept: such a launch is served once, and the next one asks again.
 *
 *  What is forgotten is freed, its modules unloaded from the GPU, once nothing can use it: a
 *  launch in flight on another thread keeps what it found until it returns (freed by this call
 *  when no thread is launching, else by a later load or unload), and a CUDA graph that captured
 *  a launch keeps that kernel loaded until CUDA has destroyed the graph and every executable
 *  graph made from it. What compile(), prepare(), warmup() and tuning_result() returned is part
 *  of what is forgotten: do not use it after this call. A server that reloads its kernels keeps
 *  flat memory (docs/state.md, "What an unload frees").
 *
 *  \code
 *  // A server switching to another build of the same kernels without restarting.
 *  triton_embed::unload_bundles();
 *  triton_embed::load_bundle("kernels-sm100.teb");
 *  \endcode */
TRITON_EMBED_API void unload_bundles();

/*! \brief Writes the kernels this process compiled (or loaded from bundles) to the bundle
 *  file \p path, atomically (a file that exists is replaced whole, or left as it was).
 *  Entries keyed on a Python object (a \c @triton.jit function passed as a constexpr) are
 *  left out: another process cannot name that object. \c TRITON_EMBED_RECORD=path does the
 *  same when the process exits. */
TRITON_EMBED_API void write_bundle(const std::string& path);

/*! \brief A bundle entry that serves a launch in place of the entry it asked for, reported
 *  once per kernel and cache key (target, options and specialisation) when the key is first
 *  looked up: the PTX of an older target (which the CUDA driver compiles for the GPU), or an
 *  entry compiled with fewer specialisation assumptions than the call's (a runtime-only
 *  program), or both. */
struct BundleNotice {
  std::string kernel;             //!< "pykernels.vector.add_kernel"
  std::string asked;              //!< the call's specialisation, "add_kernel(x_ptr: *fp32 D, ...)"
  std::string served;             //!< the serving entry's specialisation, in the same form
  std::string target;             //!< the target launched for, "cuda:90"
  std::string entry_target;       //!< the serving entry's target ("cuda:80" when its PTX serves)
  std::string bundle;             //!< the bundle's name: its path, or the name it was embedded with
  bool ptx = false;               //!< the entry's PTX serves (an older target's)
  bool less_specialised = false;  //!< the entry assumes less than the call's specialisation
  /*! The choice tuned for another tuning key serves, as the kernel's tuning rule says: then
   *  \c asked and \c served are the tuning keys ("n=100", "n=128"), \c entry_target the
   *  target it was tuned for, \c rule the rule ("bucket:pow2"). */
  bool tuning_rule = false;
  std::string rule;     //!< the tuning rule that chose the served key (when \c tuning_rule)
  std::string message;  //!< the line written to stderr when no callback is set
};

/*! \brief Sends bundle notices to \p callback instead of stderr (an empty function restores
 *  stderr). It runs on the launching thread, with no lock of the library held; an exception it
 *  throws leaves the launch (the key is looked up, and reported, again on its next launch).
 *
 *  \code
 *  triton_embed::set_bundle_notice_callback([](const triton_embed::BundleNotice& n) {
 *    my_log(n.message);
 *  });
 *  \endcode */
TRITON_EMBED_API void set_bundle_notice_callback(std::function<void(const BundleNotice&)> callback);

/*! \brief Declares what a program without the JIT layer does with a tuning key of the
 *  autotuned kernel \p kernel ("module.name") that no bundle records: the rule is written
 *  into the bundles this process writes (write_bundle, \c TRITON_EMBED_RECORD), with the
 *  kernel's tuned choices. \p rule: \c "exact" (only recorded keys serve: the default),
 *  \c "nearest" (per integer key argument, the nearest recorded value on a log2 scale, ties
 *  to the larger), \c "bucket:pow2" (a recorded value in the same power-of-two bucket
 *  (2^(k-1), 2^k]), \c "bucket:16,64,256" (a recorded value in the same bucket of these
 *  upper bounds; above the last, refused); per key argument as \c "M=nearest;N=exact",
 *  an item without a name applying to the others. Other parts of a key (strings, dtypes)
 *  always match exactly. ValueError for a rule that does not parse; write_bundle raises
 *  ValueError when the rule names an argument that is not a key of the kernel's autotuner.
 *  \code
 *  triton_embed::set_tuning_rule("pykernels.matmul.matmul_kernel", "M=nearest");
 *  \endcode */
TRITON_EMBED_API void set_tuning_rule(std::string_view kernel, std::string_view rule);

}  // namespace triton_embed
