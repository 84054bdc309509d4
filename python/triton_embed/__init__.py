"""triton_embed for Python users: the operators of ``torch.ops.triton_embed``.

Importing the package loads the operator library, after which the ops are available as
``torch.ops.triton_embed.*`` (and as ``triton_embed.ops``)::

    import torch, triton_embed
    z = torch.ops.triton_embed.add(x, y, alpha=2)
    p = torch.ops.triton_embed.softmax(logits)

The ops are written in C++ on the triton_embed library and run Triton kernels from
``pykernels/``: on CUDA tensors they launch the compiled kernel; on CPU tensors they run the
same kernel through Triton's interpreter (for correctness and debugging, not for speed).
They support autograd, ``torch.compile`` and meta tensors.

Python users' own kernels take the same launch path with one line (``triton_embed.jit``)::

    fast = triton_embed.jit(add_kernel)     # or @triton_embed.jit above @triton.jit
    fast[grid](x, y, out, n, BLOCK=1024)    # called exactly as add_kernel[grid](...)

The operator library itself needs no Python (C++ programs link it as
``triton_embed::ops_runtime`` and run its kernels from bundles); importing the package first
loads, from the same directory, ``libtriton_embed_torch.so``: the torch layer's Python bridge,
with the JIT layer that compiles the kernels and runs CPU tensors.
"""

import ctypes
import importlib.machinery
import importlib.util
import os
import sys

import torch

__all__ = ["fast_path_stats", "jit", "library_path", "ops", "reset_fast_path_stats"]


def _find_library():
    explicit = os.environ.get("TRITON_EMBED_OPS_LIBRARY")
    if explicit:
        if not os.path.isfile(explicit):
            raise ImportError("triton_embed: TRITON_EMBED_OPS_LIBRARY=%r is not a file" % explicit)
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "lib", "libtriton_embed_ops.so")
    if not os.path.isfile(path):
        raise ImportError(
            "triton_embed: the operator library is missing (looked for %s). Install the package "
            "with 'pip install .' from the source tree, or point TRITON_EMBED_OPS_LIBRARY at a "
            "built libtriton_embed_ops.so." % path
        )
    return path


def _load_bridge(ops_library):
    # Loaded before the operator library, so that its first launch finds the bridge (and the
    # JIT layer) registered.
    path = os.path.join(os.path.dirname(ops_library), "libtriton_embed_torch.so")
    if not os.path.isfile(path):
        raise ImportError(
            "triton_embed: the torch layer's Python bridge is missing (looked for %s, next to "
            "the operator library %s); build or install both from one build of triton_embed"
            % (path, ops_library)
        )
    return ctypes.CDLL(path)


library_path = _find_library()
_bridge = _load_bridge(library_path)
torch.ops.load_library(library_path)

#: The operators, the same object as ``torch.ops.triton_embed``.
ops = torch.ops.triton_embed


def _load_fast(ops_library):
    directory = os.path.dirname(ops_library)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(directory, "_fast" + suffix)
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location(__name__ + "._fast", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise ImportError(
        "triton_embed: the Python fast path's extension (_fast) is missing next to %s; build or "
        "install it with the operator library" % ops_library
    )


_fast = _load_fast(library_path)
_view_classes = {}


def jit(kernel):
    """The view of a Triton kernel (a ``@triton.jit`` function, or one wrapped in
    ``@triton.autotune`` or ``@triton.heuristics``) whose ``[grid](*args, **kwargs)`` launches
    through triton_embed's C++ path, with Triton's results: the same compiled kernel (hash and
    disk cache), heuristic values and autotune choice (in the Autotuner's own cache).

    The view is the kernel to everything else: it shares the kernel's attributes
    (``best_config``, ``fn``, ``cache``, ...), methods (``run``, ``warmup``) and ``isinstance``
    checks, so ``torch.compile`` traces it as the kernel. Usable as a decorator above Triton's
    own. A call the fast path does not take (Triton's launch hooks set, an argument kind it does
    not convert) runs through Triton's launcher; ``fast_path_stats()`` counts both, with the
    reasons.

    With ``TRITON_INTERPRET=1`` set when the kernel was decorated, ``@triton.jit`` makes Triton's
    ``InterpretedFunction``: the view is made as for any kernel, and its calls run Triton's
    interpreter (counted as Triton's).
    """
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.jit import JITFunction

    # Triton's interpreter module imports numpy: looked up only where it is loaded already (an
    # InterpretedFunction exists only then).
    interpreter = sys.modules.get("triton.runtime.interpreter")
    interpreted = (interpreter.InterpretedFunction,) if interpreter is not None else ()
    if isinstance(kernel, _fast.FastKernel):
        return kernel
    if not isinstance(kernel, (JITFunction, Autotuner, Heuristics) + interpreted):
        raise TypeError(
            "triton_embed.jit takes a @triton.jit function, or one wrapped in @triton.autotune or "
            "@triton.heuristics; got %s" % type(kernel).__qualname__
        )
    inner = kernel  # the kernel under the wrappers: a JITFunction or an InterpretedFunction
    while isinstance(inner, (Autotuner, Heuristics)):
        inner = inner.fn
    fn = getattr(inner, "fn", None)
    label = "%s.%s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", "?"))
    base = type(kernel)
    cls = _view_classes.get(base)
    if cls is None:
        cls = type(base.__name__, (_fast.FastKernel, base), {"__module__": base.__module__})
        _view_classes[base] = cls
    view = cls.__new__(cls)
    view.__dict__ = kernel.__dict__
    _fast.bind(view, kernel, label, isinstance(inner, interpreted))
    return view


def fast_path_stats():
    """How many launches of ``triton_embed.jit`` views took each path since the process started
    (or ``reset_fast_path_stats()``)::

        {"fast": n, "triton": m, "grid_programs": g, "reasons": {text: count, ...}}

    g counts the launches whose grid callable was evaluated from its translation instead of
    being called. ``reasons`` says why the m calls went to Triton's launcher, one text per
    kernel, reason and argument: ``"<module>.<kernel>: argument '<parameter>' (<type>):
    <reason>"``, or ``"...: the call: <reason>"`` for a reason of the whole call (Triton's
    launch hooks or the kernel's pre-run hooks set, TRITON_INTERPRET=1, a call the library
    refused). The README's table of call patterns says what to change for each."""
    stats = _fast.stats()
    reasons = {}
    for kernel, param, kind, reason, count in stats.pop("left"):
        where = "the call" if param is None else "argument '%s'" % param
        if kind is not None:
            name = kind.__qualname__
            where += " (%s)" % (name if kind.__module__ == "builtins" else kind.__module__ + "." + name)
        text = "%s: %s: %s" % (kernel, where, reason)
        reasons[text] = reasons.get(text, 0) + count  # types of one name: their sum
    unlisted = stats.pop("unlisted")
    if unlisted:
        reasons["other reasons (not listed)"] = unlisted
    stats["reasons"] = reasons
    return stats


def reset_fast_path_stats():
    _fast.reset_stats()
