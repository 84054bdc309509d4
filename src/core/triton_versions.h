#pragma once

// What differs between the Triton versions triton_embed supports: every fact the launcher, the
// JIT layer or a bundle depends on, each with the version that brought it. Versions are
// major * 100 + minor (306 is 3.6). Supporting a new Triton means reading its launcher
// (backends/nvidia/driver.py and driver.c), JITFunction.run, the backend's parse_options and the
// Autotuner against this file, and adding what changed here; code elsewhere asks these
// functions, never a version number.
//
// The runtime reads the facts of the version that compiled an entry (Entry::triton_version,
// recorded in bundles), so a bundle from one Triton launches as that Triton would. The JIT layer
// hands the glue (glue/triton_facts.py) the facts of the installed Triton (python_facts() in
// src/python/cpython.cc).

namespace triton_embed::detail::triton_versions {

inline constexpr int kOldest = 306;  // the oldest Triton supported (older: refused at start-up)
inline constexpr int kNewest = 309;  // the newest Triton tested

// ---- How a launch passes arguments (backends/nvidia/driver.py) ----------------------------

// 3.7: a host tensor descriptor that is not lowered to TMA passes round_f32_to_tf32 after its
// padding flag (3.6: the padding flag alone); a TMA descriptor may round fp32 to tf32
// (CU_TENSOR_MAP_DATA_TYPE_TFLOAT32), and the shape passed after a fp4-padded descriptor's
// CUtensorMap is the argument's own (3.6: the doubled one, as encoded).
constexpr bool descriptor_round_f32_to_tf32(int v) { return v >= 307; }
// Kernel parameters of the flags a decomposed descriptor passes (padding, then 3.7's rounding).
constexpr unsigned descriptor_flag_params(int v) {
  return descriptor_round_f32_to_tf32(v) ? 2u : 1u;
}
constexpr bool fp4_padded_shape_doubled(int v) { return v < 307; }

// 3.8: a kernel may use the device's oversized shared memory (the driver's shared memory mode
// set on the function and, past 228 KiB, on the launch); 3.6-3.7 stop at the opt-in limit.
constexpr bool oversized_shared_memory(int v) { return v >= 308; }

// Hidden launch parameters: the global and profile scratch pointers (every supported version).
// 3.8: a kernel that needs profile scratch gets a zeroed buffer when no profile allocator is set
// (3.6-3.7 raise); triton_embed's default allocator gives zeroed profile scratch on every
// version, which is where it launches a kernel Python 3.6-3.7 refuse.
// Triton's gsan instrumentation appends more (3.8: a state pointer; 3.9: also a launch table and
// index), which triton_embed does not pass: such kernels are refused at compile.

// 3.7: one launcher for every kernel (the CUDA driver module's launch). 3.6 generates a launcher
// per signature and compiles it with the host C compiler on its first launch (into Triton's
// cache): a compile worker builds it there too, before the tuning's benchmark launches it.
constexpr bool launcher_per_signature(int v) { return v < 307; }

// ---- How JITFunction binds a call (runtime/jit.py; JIT layer) -------------------------------

// 3.8: a *args parameter collects the extra positional arguments into a tuple (3.6-3.7: an
// ordinary parameter). 3.9: a keyword-only parameter cannot be passed by position. triton_embed
// binds every parameter by position or name, so from those versions it refuses such kernels
// when they are loaded (NotSupportedError) rather than bind them otherwise than Python.
constexpr bool var_positional_collects(int v) { return v >= 308; }
constexpr bool keyword_only_enforced(int v) { return v >= 309; }

// ---- What JITFunction.run gives the compiler (runtime/jit.py; JIT layer) ----------------------

// Options JITFunction.run sets from knobs before it binds the arguments, each with the knob it
// reads (an attribute path under triton.knobs). "debug" (the kernel's flag or
// knobs.runtime.debug) is set by every supported version and is not listed.
struct RunKnob {
  const char* option;  // the keyword the backend's parse_options reads
  const char* knob;    // under triton.knobs
  int since;
};
inline constexpr RunKnob kRunKnobs[] = {
    {"instrumentation_mode", "compilation.instrumentation_mode", 306},
    {"fpsan_homomorphic_casts", "compilation.fpsan_homomorphic_casts", 309},
};

// Environment variables that change what a compile produces (the backend's parse_options,
// JITFunction.run or the code generator read them through the knob named; Triton's cache key
// includes them), each with the version that reads it and two values that differ: the parity
// tests compile with each unset and set to either value, C++ against Python. A knob read once,
// at import (TRITON_DEBUG, into knobs.runtime.debug), is set through the knob in-process.
// 3.9 warns on stderr when TRITON_DEFAULT_FP_FUSION is unset (fusion stays on; Triton 3.10 turns
// it off by default) and adds TRITON_FORCE_DISABLE_FP_FUSION. TRITON_LIBDEVICE_PATH (a path)
// changes the options too and is not exercised.
struct OptionEnv {
  const char* name;
  const char* knob;  // under triton.knobs
  int since;
  bool read_at_import;
  const char* values[2];  // as the variable is written; a knob read at import gets False / True
};
inline constexpr OptionEnv kOptionEnvs[] = {
    {"TRITON_DEFAULT_FP_FUSION", "language.default_fp_fusion", 306, false, {"0", "1"}},
    {"TRITON_DEBUG", "runtime.debug", 306, true, {"0", "1"}},
    {"TRITON_OVERRIDE_ARCH", "runtime.override_arch", 306, false, {"sm80", "sm90"}},
    {"TRITON_F32_DEFAULT", "language.fp32_default", 306, false, {"ieee", "tf32"}},
    {"TRITON_FORCE_DISABLE_FP_FUSION", "language.force_disable_fp_fusion", 309, false, {"0", "1"}},
    {"TRITON_FPSAN_HOMOMORPHIC_CASTS",
     "compilation.fpsan_homomorphic_casts",
     309,
     false,
     {"0", "1"}},
};

// ---- The autotuner (runtime/autotuner.py; JIT layer) --------------------------------------------

// 3.8: knobs.autotuning.listener is called after each tuning, and a key whose pruned configs
// are one is given that config without benchmarking (3.6-3.7 benchmark it).
constexpr bool autotune_listener(int v) { return v >= 308; }
// 3.9: str(Config) ends with ", ir_override: ..." and so does the disk-cache key of
// cache_results, which is Triton's own (check_disk_cache): a 3.8 entry is a miss under 3.9.

// ---- Triton's interpreter (runtime/interpreter.py; JIT layer) -----------------------------------

// 3.6: a scalar's __index__ is int() of a one-element array, which numpy >= 2.3 refuses (a loop
// bound such as range(0, n, BLOCK) fails); 3.7 takes the element. The JIT layer patches 3.6.
constexpr bool interpreter_index_via_int(int v) { return v < 307; }

}  // namespace triton_embed::detail::triton_versions
