"""triton_embed's Python side, compiled into the C++ library.

The C++ code calls these functions with the GIL held, on start-up and on cache misses only.
They use Triton's own objects (JITFunction.params, JITFunction._pack_args, ASTSource,
triton.compile) so a kernel compiled from C++ is the kernel Python would compile for the same
arguments, with the same hash and the same disk cache entry.
"""

import difflib
import importlib
import sys
import traceback

compile_count = 0  # number of compile() calls; tests read it


class KernelNotFound(Exception):
    """The module or the kernel does not exist."""


def setup():
    import triton

    parts = triton.__version__.split(".")
    major = int(parts[0])
    minor = int("".join(ch for ch in parts[1] if ch.isdigit()) or 0)
    return triton.__version__, sys.version.split()[0], sys.executable, major, minor


def format_exception(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def format_cause(exc):
    """The traceback of the exception that caused exc, or ''."""
    cause = exc.__cause__
    if cause is None:
        return ""
    return "".join(traceback.format_exception(type(cause), cause, cause.__traceback__)).rstrip()


def _kernels_in(module):
    from triton.runtime.jit import JITFunction
    from triton.runtime.autotuner import Autotuner, Heuristics

    kinds = (JITFunction, Autotuner, Heuristics)
    return sorted(name for name, value in vars(module).items() if isinstance(value, kinds))


def load_kernel(module_name, attr):
    """Imports module_name and returns its kernel `attr` with Triton's view of its params."""
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise KernelNotFound(
                "no module named '%s' (looked in sys.path = %r)" % (module_name, sys.path)
            ) from exc
        raise
    if not hasattr(module, attr):
        kernels = _kernels_in(module)
        hint = ""
        close = difflib.get_close_matches(attr, kernels, n=1)
        if close:
            hint = "; did you mean '%s'?" % close[0]
        elif kernels:
            hint = "; its kernels are: %s" % ", ".join(kernels)
        raise KernelNotFound(
            "module '%s' (%s) has no attribute '%s'%s"
            % (module_name, getattr(module, "__file__", "?"), attr, hint)
        )
    obj = getattr(module, attr)

    from triton.runtime.jit import JITFunction
    from triton.runtime.autotuner import Autotuner, Heuristics

    wrappers = []
    fn = obj
    while not isinstance(fn, JITFunction):
        if isinstance(fn, Autotuner):
            wrappers.append("autotune")
        elif isinstance(fn, Heuristics):
            wrappers.append("heuristics")
        else:
            what = type(fn).__module__ + "." + type(fn).__qualname__
            if type(fn).__name__ == "InterpretedFunction":
                raise TypeError(
                    "'%s.%s' is an InterpretedFunction because TRITON_INTERPRET=1 is set; "
                    "unset it to compile and launch kernels from C++" % (module_name, attr)
                )
            raise TypeError(
                "'%s.%s' is not a @triton.jit function (it is a %s)" % (module_name, attr, what)
            )
        fn = fn.fn

    params = []
    for p in fn.params:
        has_default = p.has_default
        default = p.default if has_default else None
        params.append(
            (
                p.name,
                bool(p.is_constexpr),
                bool(p.do_not_specialize),
                bool(p.do_not_specialize_on_alignment),
                bool(p.is_const),
                p.annotation,
                p.annotation_type,
                bool(has_default),
                default,
                repr(default) if has_default else "",
            )
        )
    return obj, fn, wrappers, fn.__name__, params


def _fmt_spec(ty, key):
    if isinstance(ty, tuple):
        return "(" + ", ".join(_fmt_spec(t, k) for t, k in zip(ty, key)) + ")"
    if ty == "constexpr":
        return "constexpr = %r" % (key,)
    if isinstance(key, str) and key:
        return "%s %s" % (ty, key)
    return ty


def describe(fn, specialization):
    """add_kernel(x_ptr: *fp32 D, n: i32, BLOCK: constexpr = 1024)"""
    parts = []
    for p, (ty, key) in zip(fn.params, specialization):
        parts.append("%s: %s" % (p.name, _fmt_spec(ty, key)))
    return "%s(%s)" % (fn.__name__, ", ".join(parts))


def option_names(arch, warp_size):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    backend = make_backend(GPUTarget("cuda", arch, warp_size))
    return sorted(type(backend.parse_options({})).__dataclass_fields__)


def compile(fn, bound_args, specialization, options, arch, warp_size):
    """Compiles fn as JITFunction.run would for these arguments; returns the artefacts."""
    global compile_count
    compile_count += 1

    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", arch, warp_size)
    backend = make_backend(target)

    known = type(backend.parse_options({})).__dataclass_fields__
    unknown = [k for k in options if k not in known]
    if unknown:
        raise ValueError(
            "unknown Triton option%s %s; the options are: %s"
            % ("s" if len(unknown) > 1 else "", ", ".join(repr(k) for k in unknown),
               ", ".join(sorted(known)))
        )

    # The keyword arguments JITFunction.run passes to the backend.
    kwargs = dict(options)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode

    names = [p.name for p in fn.params]
    bound = dict(zip(names, bound_args))
    opts, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, None)
    src = ASTSource(fn, signature, constexprs, attrs)
    kernel = triton.compile(src, target=target, options=opts.__dict__)

    md = kernel.metadata
    asm = kernel.asm
    ptx = asm["ptx"] if "ptx" in asm else ""
    flat_params = 0

    def count(sig):
        nonlocal flat_params
        if isinstance(sig, tuple):
            for s in sig:
                count(s)
        elif sig != "constexpr":
            flat_params += 1

    for s in signature.values():
        count(s)
    return {
        "name": kernel.name,
        "hash": kernel.hash,
        "cubin": bytes(asm["cubin"]),
        "ptx": ptx if isinstance(ptx, str) else ptx.decode(),
        "num_warps": int(md.num_warps),
        "num_ctas": int(md.num_ctas),
        "num_stages": int(md.num_stages),
        "shared": int(md.shared),
        "global_scratch_size": int(getattr(md, "global_scratch_size", 0) or 0),
        "global_scratch_align": int(getattr(md, "global_scratch_align", 1) or 1),
        "profile_scratch_size": int(getattr(md, "profile_scratch_size", 0) or 0),
        "profile_scratch_align": int(getattr(md, "profile_scratch_align", 1) or 1),
        "launch_cooperative_grid": bool(getattr(md, "launch_cooperative_grid", False)),
        "launch_pdl": bool(getattr(md, "launch_pdl", False)),
        "instrumentation_mode": str(getattr(md, "instrumentation_mode", "") or ""),
        "tensordesc_meta": len(getattr(md, "tensordesc_meta", None) or []),
        "warp_size": int(getattr(md, "warp_size", warp_size)),
        "runtime_params": flat_params,
        "signature": describe(fn, specialization),
    }


# ---- Triton's interpreter (CPU tensors) -------------------------------------------------

_interpreted = {}  # id(JITFunction) -> (JITFunction, InterpretedFunction)


def _as_interpreted(jit_fn):
    # Keyed by id: hashing a JITFunction computes its cache key, which must not run while
    # the interpreter has patched triton.language.
    entry = _interpreted.get(id(jit_fn))
    if entry is None:
        from triton.runtime.interpreter import InterpretedFunction

        entry = _interpreted[id(jit_fn)] = (jit_fn, InterpretedFunction(jit_fn.fn))
    return entry[1]


def _interpreted_call(self, *args, **kwargs):
    """JITFunction.__call__ while a kernel is interpreted: a @triton.jit helper (ours, or
    Triton's standard library such as tl.max) runs interpreted too."""
    # As InterpretedFunction.__call__, but the patches of triton.language it makes for the
    # helper are undone afterwards (Triton keeps them, which breaks later GPU compiles in a
    # process that also launches on the GPU).
    import triton.runtime.interpreter as interpreter

    fn = _as_interpreted(self)
    scope = interpreter._patch_lang(fn.fn)
    try:
        return fn.rewrite()(*args, **kwargs)
    except Exception as e:
        raise interpreter.InterpreterError(repr(e)) from e
    finally:
        scope.restore()


def interpret(jit_fn, args, grid):
    """Runs jit_fn on the host through Triton's interpreter.

    Triton picks JITFunction or InterpretedFunction when @triton.jit runs, so kernels imported
    for GPU launches are JITFunctions. They are run through an InterpretedFunction of the same
    Python function; while it runs, calls to other JITFunctions are interpreted as well."""
    from triton.runtime.jit import JITFunction

    fn = _as_interpreted(jit_fn)
    import triton.runtime.interpreter as interpreter

    saved_call = JITFunction.__call__
    saved_patch = interpreter._patch_lang_tensor
    JITFunction.__call__ = _interpreted_call
    interpreter._patch_lang_tensor = _patch_lang_tensor_with_index(saved_patch)
    try:
        fn[tuple(grid)](*args)
    finally:
        JITFunction.__call__ = saved_call
        interpreter._patch_lang_tensor = saved_patch


def _patch_lang_tensor_with_index(patch):
    """Triton 3.6's interpreter turns a scalar into a Python int with int() on a 1-element
    array, which numpy 2.3 rejects (a runtime loop bound such as range(0, n, BLOCK) fails);
    Triton 3.8 takes the element. Convert as 3.8 does, on every version."""

    def patched(tensor, scope):
        patch(tensor, scope)  # records the original attributes for the scope to restore
        tensor.__index__ = lambda self: int(self.handle.data.reshape(-1)[0])

    return patched
