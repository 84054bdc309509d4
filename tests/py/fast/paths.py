"""What fast_path_stats() must say, whichever way the suite runs. With TRITON_INTERPRET=1
(CTest's pytest_fast_interpret runs the suite so), @triton.jit makes Triton's
InterpretedFunction: every launch of a view runs Triton's interpreter and counts as Triton's."""

import contextlib

import pytest
import triton

import triton_embed

INTERPRET = bool(triton.knobs.runtime.interpret)

#: For the tests of the fast path's own machinery (grid programs, the descriptor cache, the
#: library's own errors): under TRITON_INTERPRET=1 no call reaches it.
fast_path_only = pytest.mark.skipif(INTERPRET, reason="TRITON_INTERPRET=1: Triton runs every call")


@contextlib.contextmanager
def interpreter():
    """Kernels decorated inside it are Triton's InterpretedFunctions, as under
    TRITON_INTERPRET=1."""
    runtime = triton.knobs.runtime
    was = runtime.interpret
    runtime.interpret = True
    try:
        yield
    finally:
        runtime.interpret = was


def _interpreter_computes_grids():
    """Whether Triton's interpreter can launch on a grid computed from the bound arguments
    (`lambda meta: (triton.cdiv(meta["n"], 64),)`): Triton 3.6's takes int() of a one-element
    array there, which numpy 2.4 refuses."""
    import torch
    import triton.language as tl

    def kernel(out_ptr, n):
        tl.store(out_ptr + tl.program_id(0), n)

    from triton.runtime.interpreter import InterpretedFunction

    out = torch.zeros(2, dtype=torch.int32)
    try:
        InterpretedFunction(kernel)[lambda meta: (triton.cdiv(meta["n"], 1),)](out, 2)
    except Exception:  # noqa: BLE001 (whatever that Triton raises)
        return False
    return out.tolist() == [2, 2]


#: For the tests whose grid callables compute with the bound arguments: under
#: TRITON_INTERPRET=1 they need an interpreter that runs such grids (Triton runs the calls).
INTERPRETER_COMPUTES_GRIDS = _interpreter_computes_grids()
computed_grids = pytest.mark.skipif(
    INTERPRET and not INTERPRETER_COMPUTES_GRIDS,
    reason="this Triton's interpreter cannot launch on grids computed from the arguments")


def counts():
    """fast_path_stats() without its reasons."""
    stats = dict(triton_embed.fast_path_stats())
    stats.pop("reasons")
    return stats


def expect(fast=0, triton=0, grid_programs=0):
    """The counts of launches that took these paths: all of them Triton's under
    TRITON_INTERPRET=1."""
    if INTERPRET:
        return {"fast": 0, "triton": fast + triton, "grid_programs": 0}
    return {"fast": fast, "triton": triton, "grid_programs": grid_programs}
