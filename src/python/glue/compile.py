"""Compiling a kernel with Triton's compiler as JITFunction.run would, and the text of a
call's specialisation that compile errors use."""

import importlib

from .triton_facts import _facts

compile_count = 0  # number of compile() calls; tests read it
warm_count = 0  # number of warm() calls that compiled; tests read it


def _knob(path):
    from triton import knobs

    value = knobs
    for part in path.split("."):
        value = getattr(value, part)
    return value


def run_options(fn, options):
    """The options JITFunction.run gives the backend for a call with these launch options:
    the call's, the kernel's debug flag and the options it sets from knobs."""
    from triton import knobs

    kwargs = dict(options)
    kwargs["debug"] = kwargs.get("debug", fn.debug) or knobs.runtime.debug
    for option, knob in _facts["run_knobs"]:
        kwargs[option] = _knob(knob)
    return kwargs


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


def _option_fields(backend):
    """The fields of the backend's options dataclass, read off the class: parse_options({})
    would build one, which Triton 3.9 takes as a compile that leaves FP fusion to its default
    and warns about, once per process, so a user's own compile would then not warn."""
    return importlib.import_module(type(backend).__module__).CUDAOptions.__dataclass_fields__


def option_names(arch, warp_size):
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    backend = make_backend(GPUTarget("cuda", arch, warp_size))
    return sorted(_option_fields(backend))


def compile_for(fn, bound_args, specialization, kwargs, arch, warp_size):
    """triton.compile of fn for these arguments with the options `kwargs` (run_options'): the
    compiled kernel and its signature. Only the constexpr parameters' values of bound_args are
    read (a compile worker has no others)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = GPUTarget("cuda", arch, warp_size)
    backend = make_backend(target)
    names = [p.name for p in fn.params]
    bound = dict(zip(names, bound_args))
    opts, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, None)
    src = ASTSource(fn, signature, constexprs, attrs)
    return triton.compile(src, target=target, options=opts.__dict__), signature


def _triton_compile(fn, bound_args, specialization, options, arch, warp_size):
    """triton.compile of fn as JITFunction.run would compile it for these arguments: the
    compiled kernel and its signature."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    known = _option_fields(make_backend(GPUTarget("cuda", arch, warp_size)))
    unknown = [k for k in options if k not in known]
    if unknown:
        raise ValueError(
            "unknown Triton option%s %s; the options are: %s"
            % ("s" if len(unknown) > 1 else "", ", ".join(repr(k) for k in unknown),
               ", ".join(sorted(known)))
        )
    return compile_for(fn, bound_args, specialization, run_options(fn, options), arch, warp_size)


def warm(fn, bound_args, specialization, options, arch, warp_size):
    """compile() into Triton's cache only: a config compiled before its benchmark, whose
    compile in Triton's launcher then finds it there. Counted apart from compile_count."""
    global warm_count
    _triton_compile(fn, bound_args, specialization, options, arch, warp_size)
    warm_count += 1


def compile(fn, bound_args, specialization, options, arch, warp_size):
    """Compiles fn as JITFunction.run would for these arguments; returns the artefacts."""
    global compile_count
    compile_count += 1
    kernel, signature = _triton_compile(fn, bound_args, specialization, options, arch, warp_size)

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
    # A tensordesc parameter is several kernel parameters: a CUtensorMap (or, where Triton
    # did not lower it to TMA, base, shape, strides and flags), then the shape and strides.
    metas = list(md.tensordesc_meta or [])  # [] where no descriptor was lowered to TMA
    descs = [s for s in signature.values() if isinstance(s, str) and s.startswith("tensordesc")]
    desc_meta = []
    for i, s in enumerate(descs):
        rank = s[s.index("[") : s.index("]")].count(",") + 1
        meta = metas[i] if metas else None
        if meta is None:
            flat_params += 2 * rank + _facts["descriptor_flag_params"] + 2 * rank
            desc_meta.append(None)
        else:
            flat_params += 2 * rank
            desc_meta.append((int(meta["swizzle"]), int(meta["elem_size"]), int(meta["elem_type"]),
                              [int(b) for b in meta["block_size"]], bool(meta["fp4_padded"]),
                              bool(meta.get("is_im2col", False))))
    return {
        "name": kernel.name,
        "hash": kernel.hash,
        "cubin": bytes(asm["cubin"]),
        "ptx": ptx if isinstance(ptx, str) else ptx.decode(),
        "num_warps": int(md.num_warps),
        "num_ctas": int(md.num_ctas),
        "num_stages": int(md.num_stages),
        "shared": int(md.shared),
        # 3.6 and 3.7 leave the global scratch fields None for a kernel that needs none.
        "global_scratch_size": int(md.global_scratch_size or 0),
        "global_scratch_align": int(md.global_scratch_align or 1),
        "profile_scratch_size": int(md.profile_scratch_size),
        "profile_scratch_align": int(md.profile_scratch_align),
        "launch_cooperative_grid": bool(md.launch_cooperative_grid),
        "launch_pdl": bool(md.launch_pdl),
        "instrumentation_mode": str(md.instrumentation_mode or ""),
        "tensordesc_meta": desc_meta,
        "warp_size": int(md.warp_size),
        "runtime_params": flat_params,
        "signature": describe(fn, specialization),
    }
