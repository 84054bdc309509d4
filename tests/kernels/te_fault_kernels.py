"""A kernel whose compile the fault tests control (tests/cpp/test_faults.cc, probe_exit.cc).

gated_kernel calls fault_point() while Triton generates its code, i.e. inside every compile
that is not served from Triton's disk cache (the tests pass a TAG no earlier run used).
fault_point counts the compiles that reached it, waits for `gate`, then does what `mode`
says:
  ""           nothing: the compile goes on and succeeds
  "raise"      raises ValueError (Triton reports a CompilationError)
  "keyboard"   raises KeyboardInterrupt
  "interrupt"  interrupts the main thread as Ctrl-C does (_thread.interrupt_main), then
               runs Python code until the interrupt is delivered (or 10 s have passed)
"""

import _thread
import threading
import time

import triton
import triton.language as tl

mode = ""
gate = threading.Event()
gate.set()
entered = 0


def reach():
    """What fault_point does (a plain function: Triton's dependency scan of a kernel refuses
    references to those, so fault_point reaches it through an import it cannot see)."""
    global entered
    entered += 1
    gate.wait()
    if mode == "raise":
        raise ValueError("te_fault_kernels: injected compile failure")
    if mode == "keyboard":
        raise KeyboardInterrupt("te_fault_kernels: injected interrupt")
    if mode == "interrupt":
        _thread.interrupt_main()
        end = time.monotonic() + 10
        while time.monotonic() < end:
            pass


@triton.constexpr_function
def fault_point(tag):
    import te_fault_kernels as this

    this.reach()
    return tag - tag


@triton.jit
def gated_kernel(out_ptr, n, TAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, offs + fault_point(TAG), mask=offs < n)
