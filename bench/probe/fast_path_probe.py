"""Where the Python fast path's host time goes: timeit of its pieces on one GPU (a probe for
development, not a benchmark row). Run from the repository root with the package importable."""

import os
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

import torch  # noqa: E402
import triton  # noqa: E402

import triton_embed  # noqa: E402
from pykernels.vector import add_kernel  # noqa: E402

N, BLOCK = 4096, 1024
x, y, o = (torch.rand(N, device="cuda") for _ in range(3))
grid = (N // BLOCK,)
fast = triton_embed.jit(add_kernel)
fast[grid](x, y, o, N, BLOCK)
torch.cuda.synchronize()
bound = fast[grid]
knobs = triton.knobs.runtime
cases = {
    "subscript": lambda: fast[grid],
    "bound(x, y, o, N, BLOCK)": lambda: bound(x, y, o, N, BLOCK),
    "fast[grid](x, y, o, N, BLOCK)": lambda: fast[grid](x, y, o, N, BLOCK),
    "fast[grid](..., BLOCK=BLOCK)": lambda: fast[grid](x, y, o, N, BLOCK=BLOCK),
    "getattr knobs hook": lambda: knobs.launch_enter_hook,
    "torch.cuda.current_stream()": lambda: torch.cuda.current_stream(),
    "x.data_ptr()": lambda: x.data_ptr(),
    "empty lambda": lambda: None,
    "stats()": lambda: triton_embed.fast_path_stats(),
}
for name, fn in cases.items():
    n = 20000
    best = min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6
    torch.cuda.synchronize()
    print("%-34s %.3f us" % (name, best))
print(type(knobs.launch_enter_hook), triton.__version__)
