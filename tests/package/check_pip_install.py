"""`pip install .` builds the package; a fresh process imports it and runs the ops.

Usage: check_pip_install.py SOURCE_DIR WORK_DIR. Exits 77 (skipped) when scikit-build-core,
the build back end, is not installed (e.g. on a machine without network).
"""

import importlib.util
import os
import shutil
import subprocess
import sys

source, work = sys.argv[1], sys.argv[2]
if importlib.util.find_spec("scikit_build_core") is None:
    print("scikit-build-core is not installed: skipping the pip install check")
    sys.exit(77)

shutil.rmtree(work, ignore_errors=True)
target = os.path.join(work, "site")
subprocess.run(
    [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--target",
     target, "--config-settings=build-dir=" + os.path.join(work, "build"), source],
    check=True,
)

check = r"""
import os, sys, torch
import triton_embed
target = sys.argv[1]
assert os.path.realpath(triton_embed.library_path).startswith(os.path.realpath(target)), (
    triton_embed.library_path
)
assert triton_embed.ops is torch.ops.triton_embed
x = torch.randn(4, 33, requires_grad=True)
w = torch.randn(33)
y = torch.ops.triton_embed.layer_norm(torch.ops.triton_embed.add(x, x, alpha=0.5), [33], w)
ref = torch.nn.functional.layer_norm(x + 0.5 * x, (33,), w)
torch.testing.assert_close(y, ref)
(g,) = torch.autograd.grad(y.sum(), x)
(ref_g,) = torch.autograd.grad(ref.sum(), x)
torch.testing.assert_close(g, ref_g, rtol=1e-4, atol=1e-4)
print("installed package OK:", triton_embed.library_path)
"""
env = dict(os.environ)
env.pop("TRITON_EMBED_OPS_LIBRARY", None)
env["PYTHONPATH"] = target
subprocess.run([sys.executable, "-c", check, target], check=True, env=env, cwd=work)
