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

The operator library itself needs no Python (C++ programs link it as
``triton_embed::ops_runtime`` and run its kernels from bundles); importing the package first
loads, from the same directory, ``libtriton_embed_torch.so``: the torch layer's Python bridge,
with the JIT layer that compiles the kernels and runs CPU tensors.
"""

import ctypes
import os

import torch

__all__ = ["library_path", "ops"]


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
