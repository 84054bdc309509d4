"""triton_embed's Python side, embedded in the C++ library: src/python/cpython.cc runs this
package's modules from the library's copy of them, as the package _triton_embed_glue.

The C++ code calls these functions with the GIL held, on start-up and on cache misses only.
They use Triton's own objects (JITFunction.params, JITFunction._pack_args, ASTSource,
triton.compile) so a kernel compiled from C++ is the kernel Python would compile for the same
arguments, with the same hash and the same disk cache entry.

The modules: triton_facts (the installed Triton's versions and facts), kernels (loading and
describing kernels), compile (Triton's compile), interpret (Triton's interpreter), translation,
hook_translation and grid_translation (heuristics, pre_hooks and grid callables as expression
trees), arguments (C++ arguments as Python objects), layers (heuristics, tuning, pre_hooks), worker
(compile worker processes: the jobs made here, and what a worker runs).
This module gives the C++ code their names.
"""

import sys

from .arguments import DevicePointer, RawPointerAttribute, make_descriptor, torch_dtype
from .compile import compile, describe, option_names, run_options, warm
from .grid_translation import grid_expression
from .hook_translation import pre_hook_actions
from .interpret import interpret
from .kernels import (
    KernelNotFound,
    KernelNotSupported,
    describe_kernel,
    format_cause,
    format_exception,
    load_kernel,
    locate_kernel,
)
from .layers import (
    ASPECT_ADDRESS,
    ASPECT_DTYPE,
    ASPECT_OBJECT,
    ASPECT_VALUE,
    ScratchAllocator,
    config_info,
    eval_heuristic,
    prepare_benchmarks,
    prune,
    prunes_nothing,
    run_config_pre_hook,
    triton_allocator,
    tune,
    tuning_key,
)
from .translation import NotTranslatable, heuristic_expression
from .triton_facts import configure, setup
from .worker import BOOTSTRAP as worker_bootstrap
from .worker import worker_init, worker_job, worker_result

__all__ = [
    "ASPECT_ADDRESS",
    "ASPECT_DTYPE",
    "ASPECT_OBJECT",
    "ASPECT_VALUE",
    "DevicePointer",
    "KernelNotFound",
    "KernelNotSupported",
    "NotTranslatable",
    "RawPointerAttribute",
    "ScratchAllocator",
    "compile",
    "compile_count",
    "warm",
    "warm_count",
    "config_info",
    "configure",
    "describe",
    "describe_kernel",
    "eval_heuristic",
    "format_cause",
    "format_exception",
    "grid_expression",
    "heuristic_expression",
    "interpret",
    "load_kernel",
    "locate_kernel",
    "make_descriptor",
    "option_names",
    "pre_hook_actions",
    "prepare_benchmarks",
    "prune",
    "prunes_nothing",
    "run_config_pre_hook",
    "run_options",
    "setup",
    "torch_dtype",
    "triton_allocator",
    "tune",
    "tuning_key",
    "worker_bootstrap",
    "worker_init",
    "worker_job",
    "worker_result",
]


def __getattr__(name):
    # compile_count and warm_count (the numbers of compile() and warm() calls; tests read them)
    # are the compile module's,
    # which counts up: read there, not a copy of it taken here.
    if name in ("compile_count", "warm_count"):
        return getattr(sys.modules[__name__ + ".compile"], name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
